"""Shapes Vertex certainly accepts: the e-mail task only with recipients, Experiments names
within the SDK's combined limit, no TensorBoard unless one is named."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.backends.vertex.experiments import (
    RUN_ID_LIMIT,
    AiplatformExperiments,
    experiment_run_names,
)
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems
from vertex_retrain.pipelines import configure, weekly_retraining

EMAIL_MODULE = "vertex_notification_email"


def _email_executors(spec: dict[str, Any]) -> list[str]:
    executors = spec["deploymentSpec"]["executors"]
    return [n for n, e in executors.items() if EMAIL_MODULE in " ".join(e["container"]["command"])]


@pytest.mark.parametrize(("recipients", "emails"), [([], 0), (["ops@example.com"], 1)])
def test_failure_notice_email_task_exists_only_with_recipients(
    recipients: list[str], emails: int
) -> None:
    spec = compile_to_dict(
        configure(weekly_retraining, name="team-weekly", notification_emails=recipients)
    )
    assert len(_email_executors(spec)) == emails
    assert spec["pipelineInfo"]["name"] == "team-weekly"
    # Without the notice the run summary is the pipeline's own (only) exit handler.
    nested = [t for t in spec["root"]["dag"]["tasks"] if t.startswith("exit-handler")]
    assert nested == ["exit-handler-1"]


def test_failure_notice_template_has_no_email_task() -> None:
    assert _email_executors(compile_to_dict(weekly_retraining)) == []


def test_preflight_refuses_recipients_for_a_pipeline_without_the_notice() -> None:
    spec = compile_to_dict(weekly_retraining)
    arguments = {**default_arguments(spec), "notification_emails": ["ops@example.com"]}
    problems = pipeline_problems(spec, arguments, Settings())
    refused = [p for p in problems if p.code == "notice-missing"]
    assert refused and refused[0].severity == "error"
    assert not [
        p
        for p in pipeline_problems(spec, default_arguments(spec), Settings())
        if p.code == "notice-missing"
    ]


@pytest.mark.parametrize(
    ("model", "run"),
    [
        ("m" * 64, "r" * (RUN_ID_LIMIT - 65)),  # exactly at the limit: kept as it is
        ("m" * 64, "r" * (RUN_ID_LIMIT - 64)),  # one over: shortened
        ("a-model", "weekly-retraining-" + "x" * 200),
        ("m" * 300, "run-1"),
    ],
)
def test_experiment_run_names_pass_the_sdks_own_run_id_check(model: str, run: str) -> None:
    from google.cloud.aiplatform.metadata.experiment_run_resource import (
        ExperimentRun,
        _format_experiment_run_resource_id,
    )

    experiment, name = experiment_run_names(model, run)
    run_id = _format_experiment_run_resource_id(experiment, name)
    ExperimentRun._validate_run_id(run_id)  # raises ValueError past the SDK's limit
    assert len(run_id) <= RUN_ID_LIMIT
    if len(model) <= 64 and len(f"{model}-{run}") <= RUN_ID_LIMIT:
        assert (experiment, name) == (model, run)
    else:
        assert (experiment, name) != (model, run)


def test_experiment_run_names_keep_two_long_runs_apart() -> None:
    first = experiment_run_names("m", "weekly-" + "x" * 200 + "-1")
    second = experiment_run_names("m", "weekly-" + "x" * 200 + "-2")
    assert first != second


def test_experiment_run_names_sdk_refuses_what_they_shorten() -> None:
    from google.cloud.aiplatform.metadata.experiment_run_resource import ExperimentRun

    with pytest.raises(ValueError, match="cannot be greater than 121"):
        ExperimentRun._validate_run_id("m" * 64 + "-" + "r" * 57)


def _tracked_init(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    from google.cloud import aiplatform

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(aiplatform, "init", lambda **kw: calls.append(kw))
    return calls


@pytest.mark.parametrize(("named", "passed"), [("", False), ("projects/p/tb/1", "projects/p/tb/1")])
def test_aiplatform_experiments_back_the_experiment_only_with_a_named_tensorboard(
    monkeypatch: pytest.MonkeyPatch, named: str, passed: Any
) -> None:
    calls = _tracked_init(monkeypatch)
    AiplatformExperiments().init(project="p", location="l", experiment="e", tensorboard=named)
    assert calls == [
        {"project": "p", "location": "l", "experiment": "e", "experiment_tensorboard": passed}
    ]


def test_aiplatform_sdk_creates_no_default_tensorboard_when_told_false(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What ``experiment_tensorboard=False`` does in the SDK itself (no network: the experiment
    lookup and the default TensorBoard are replaced)."""
    from google.cloud.aiplatform.metadata import experiment_resources, metadata

    created: list[str] = []

    class Experiment:
        backing_tensorboard_resource_name = None

        def assign_backing_tensorboard(self, tensorboard: Any) -> None:
            created.append(f"assigned {tensorboard}")

    monkeypatch.setattr(experiment_resources.Experiment, "get_or_create", lambda **kw: Experiment())
    monkeypatch.setattr(
        metadata, "_get_or_create_default_tensorboard", lambda: created.append("default") or "tb"
    )
    tracker = metadata._ExperimentTracker()
    monkeypatch.setattr(tracker, "_get_global_tensorboard", lambda: None)
    tracker.set_experiment("e", backing_tensorboard=False, display_button=False)
    assert created == []
    tracker.set_experiment("e", backing_tensorboard=None, display_button=False)
    assert created == ["default", "assigned tb"]  # what the SDK does when not told

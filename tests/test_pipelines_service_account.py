"""Jobs, trials, evaluation jobs and deployed models run as the pipeline's own service account
by default (GCPC's ``{{$.pipeline_service_account}}``); ``service_account`` overrides it."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.cli.local_run import local_arguments
from vertex_retrain.pipelines import train_only, weekly_retraining
from vertex_retrain.specs.defaults import PIPELINE_SERVICE_ACCOUNT
from vertex_retrain.steps.job_request import TrainingRequest, custom_job_payload

ACCOUNT_TAKERS = {"train-custom-job", "hp-tune", "evaluate-model", "deploy-model"}


def _account_inputs(spec: dict[str, Any]) -> dict[str, Any]:
    """component name -> the ``service_account`` input of every task running it."""
    found: dict[str, Any] = {}
    for component in [spec["root"], *spec["components"].values()]:
        for task in component.get("dag", {}).get("tasks", {}).values():
            name = task["componentRef"]["name"].removeprefix("comp-")
            base = name.rsplit("-", 1)[0] if name[-1].isdigit() else name
            if base in ACCOUNT_TAKERS:
                found[name] = task["inputs"]["parameters"].get("service_account")
    return found


@pytest.mark.parametrize("template", [weekly_retraining, train_only], ids=lambda t: t.name)
def test_service_account_defaults_to_the_pipelines_own(template: Any) -> None:
    spec = compile_to_dict(template)
    parameter = spec["root"]["inputDefinitions"]["parameters"]["service_account"]
    assert parameter["defaultValue"] == PIPELINE_SERVICE_ACCOUNT
    inputs = _account_inputs(spec)
    assert inputs, "no job-running task found"
    for task, value in inputs.items():
        source = (value or {}).get("componentInputParameter", "")
        assert source in ("service_account", "pipelinechannel--service_account"), (task, value)


@pytest.mark.parametrize("component", sorted(ACCOUNT_TAKERS))
def test_service_account_component_default_is_the_placeholder(component: str) -> None:
    from vertex_retrain.pipelines.catalog import COMPONENTS, load

    function = load(COMPONENTS[component.replace("-", "_")])
    assert function.component_spec.inputs["service_account"].default == PIPELINE_SERVICE_ACCOUNT


def _payload(account: str) -> dict[str, Any]:
    return custom_job_payload(
        TrainingRequest(
            backend="vertex",
            display_name="m",
            base_output_directory="gs://b/runs",
            python_module="pkg.task",
            image_uri=f"us-docker.pkg.dev/p/training/pkg@sha256:{'a' * 64}",
            machine_type="n1-standard-4",
            accelerator_type="",
            accelerator_count=0,
            scheduling_strategy="STANDARD",
            service_account=account,
        )
    )


def test_service_account_override_reaches_the_job() -> None:
    account = "retrain@p.iam.gserviceaccount.com"
    assert _payload(account)["jobSpec"]["serviceAccount"] == account
    assert "serviceAccount" not in _payload("")["jobSpec"]


def test_service_account_placeholder_outside_a_pipeline_run_is_refused() -> None:
    with pytest.raises(ValueError, match="placeholder only a Vertex pipeline run resolves"):
        _payload(PIPELINE_SERVICE_ACCOUNT)


def test_service_account_local_run_runs_as_this_machine() -> None:
    arguments = local_arguments({"service_account": PIPELINE_SERVICE_ACCOUNT}, {})
    assert arguments["service_account"] == ""
    explicit = local_arguments(
        {"service_account": PIPELINE_SERVICE_ACCOUNT}, {"service_account": "a"}
    )
    assert explicit["service_account"] == "a"

"""The failure notice: Vertex e-mails the run's end; locally the summary and exit code say it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tests.data.pipelines.notified import no_recipients, notified, tiny_run
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.cli.local_run import run_pipeline_locally
from vertex_retrain.pipelines import configure
from vertex_retrain.pipelines.failure_notice import with_failure_notice
from vertex_retrain.pipelines.weekly import weekly_retraining, weekly_week
from vertex_retrain.steps.summary import render_markdown
from vertex_retrain.steps.summary_week import fallback_facts, notice_facts

NOTICE_TASK = "vertex-pipelines-notification-email"


@pytest.fixture(scope="module")
def weekly_spec() -> dict[str, Any]:
    notified_weekly = configure(
        weekly_retraining, name="weekly-retraining", notification_emails=["ops@example.com"]
    )
    return compile_to_dict(notified_weekly)


def test_weekly_pipeline_sends_the_notice_from_its_exit_handler(
    weekly_spec: dict[str, Any],
) -> None:
    tasks = weekly_spec["root"]["dag"]["tasks"]
    notice = tasks[NOTICE_TASK]
    assert notice["triggerPolicy"]["strategy"] == "ALL_UPSTREAM_TASKS_COMPLETED"
    guarded = notice["dependentTasks"]
    assert guarded == ["exit-handler-1"]
    assert notice["inputs"]["parameters"]["pipeline_task_final_status"] == {
        "taskFinalStatus": {"producerTask": "exit-handler-1"}
    }
    assert notice["inputs"]["parameters"]["recipients"] == {
        "componentInputParameter": "notification_emails"
    }
    assert notice["cachingOptions"] == {}  # caching off: a notice is about this run
    executor = weekly_spec["components"][notice["componentRef"]["name"]]["executorLabel"]
    container = weekly_spec["deploymentSpec"]["executors"][executor]["container"]
    assert "vertex_notification_email" in " ".join(container["command"])
    # The guarded group runs the whole week, whose own exit handler writes the summary.
    group = weekly_spec["components"][tasks["exit-handler-1"]["componentRef"]["name"]]
    (run,) = group["dag"]["tasks"].values()
    week = weekly_spec["components"][run["componentRef"]["name"]]["dag"]["tasks"]
    assert week["run-summary"]["triggerPolicy"]["strategy"] == "ALL_UPSTREAM_TASKS_COMPLETED"


def test_notice_wrapper_keeps_every_parameter_and_default(weekly_spec: dict[str, Any]) -> None:
    inner = compile_to_dict(weekly_week)["root"]["inputDefinitions"]
    wrapped = weekly_spec["root"]["inputDefinitions"]
    assert wrapped["parameters"]["notification_emails"]["defaultValue"] == ["ops@example.com"]
    assert inner["parameters"]["notification_emails"]["defaultValue"] == []
    del wrapped["parameters"]["notification_emails"], inner["parameters"]["notification_emails"]
    assert wrapped == inner
    assert weekly_spec["pipelineInfo"]["name"] == "weekly-retraining"


def test_notice_wrapper_needs_the_recipients_parameter() -> None:
    with pytest.raises(ValueError, match="no parameter 'notification_emails'"):
        with_failure_notice(no_recipients, name="x", description="x")


@pytest.mark.parametrize("fail", [False, True])
def test_local_run_skips_the_vertex_notice_and_fails_only_with_the_run(
    root: Path, fail: bool
) -> None:
    console = io.StringIO()
    outcome = run_pipeline_locally(
        notified, {"fail": fail, "notification_emails": ["ops@example.com"]}, console=console
    )
    assert outcome.succeeded is not fail
    assert "- step failure-notice: skipped (a Vertex AI service step" in console.getvalue()
    assert tiny_run.name == "tiny-run"


def _failed(backend: str, recipients: list[str]) -> str:
    facts = {
        "pipeline_run": "r",
        "state": "FAILED",
        "error": "train failed",
        "notice": notice_facts(backend, recipients),
    }
    return render_markdown(facts)


def test_summary_of_a_failed_run_says_who_hears_of_it() -> None:
    assert "**Failure notice:** Vertex AI e-mails a@x.com, b@x.com" in _failed(
        "vertex", ["a@x.com", "b@x.com"]
    )
    assert "no one (notification_emails is empty)" in _failed("vertex", [])
    local = _failed("local", ["a@x.com"])
    assert "this summary and the run's non-zero exit code" in local
    assert "on Vertex it is e-mailed to a@x.com" in local


def test_summary_of_a_successful_run_has_no_failure_notice() -> None:
    facts = {"pipeline_run": "r", "state": "SUCCEEDED", "notice": notice_facts("vertex", ["a"])}
    assert "Failure notice" not in render_markdown(facts)


def test_fallback_facts_price_the_spot_attempts_and_the_on_demand_hours() -> None:
    cost = {"assumed_training_hours": 2.0, "spot": 0.8, "on_demand": 2.0, "currency": "USD"}
    training = {"spot_fallback": 1.0, "spot_seconds": 3600.0, "on_demand_seconds": 1800.0}
    facts = fallback_facts(training, cost)
    assert facts == {
        "spot_hours": 1.0,
        "on_demand_hours": 0.5,
        "currency": "USD",
        "spot_attempts_cost": 0.4,
        "on_demand_cost": 0.5,
        "on_demand_premium": 0.3,
        "total_cost": 0.9,
        "spot_plan": 0.8,
    }
    assert fallback_facts({"goodput": 1.0}, cost) is None
    line = render_markdown({"pipeline_run": "r", "state": "SUCCEEDED", "spot_fallback": facts})
    assert (
        "**Spot fallback:** Spot attempts 1.0000 h, then on demand 0.5000 h: 0.90 USD in all, "
        "of which 0.30 USD above Spot prices (the Spot plan: 0.80 USD)"
    ) in line

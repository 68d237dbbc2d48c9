"""The run summary's registration, deployment and rollback lines."""

from __future__ import annotations

import pytest

from vertex_retrain.backends.base import TaskOutputs
from vertex_retrain.invocation import ENVIRONMENT_VARIABLE
from vertex_retrain.steps.summary import build_summary, render_markdown
from vertex_retrain.steps.summary_registration import (
    local_rollback_command,
    local_rollback_text,
    registration_lines,
    rollback_command,
)

VERTEX_ENDPOINT = "projects/p-1/locations/europe-west4/endpoints/4455"


@pytest.fixture(autouse=True)
def _console_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)


def test_rollback_command_on_vertex_sets_the_split_with_gcloud() -> None:
    assert rollback_command(VERTEX_ENDPOINT, {"12": 90, "7": 10}) == (
        "gcloud ai endpoints update 4455 --project=p-1 --region=europe-west4 "
        "--traffic-split=12=90,7=10"
    )


def test_rollback_command_locally_names_endpoints_rollback_quoted() -> None:
    assert rollback_command("endpoints/gyo", {"1": 100}) == "vertex-retrain endpoints rollback gyo"
    assert rollback_command("endpoints/shop recs", {"1": 100}) == (
        "vertex-retrain endpoints rollback 'shop recs'"
    )
    assert local_rollback_command("gyo") == "vertex-retrain endpoints rollback gyo"


def test_rollback_command_names_none_without_a_split_or_a_known_endpoint() -> None:
    assert rollback_command(VERTEX_ENDPOINT, {}) == ""
    assert rollback_command("endpoints/gyo", {}) == ""
    for unknown in ("", "endpoints/", "endpoints/a/b", f"{VERTEX_ENDPOINT}/extra", "gyo"):
        assert rollback_command(unknown, {"1": 100}) == "", unknown


def test_registration_lines_give_the_rollback_split_and_its_command() -> None:
    facts = {
        "registered": {"version_id": "3", "aliases": ["champion"]},
        "deployment": {
            "deployed_model_id": "2",
            "traffic": {"2": 100},
            "previous_traffic": {"1": 100},
            "endpoint": "endpoints/gyo",
        },
    }
    assert registration_lines(facts) == [
        "**Registered:** version 3 (aliases champion)",
        "**Deployment:** 100% to deployed model id 2 (version 3)",
        "**Rollback:** `vertex-retrain endpoints rollback gyo` restores the split before this "
        "deployment, 100% to deployed model id 1",
    ]


def test_registration_lines_name_the_split_without_a_command_for_an_unknown_endpoint() -> None:
    deployment = {"deployed_model_id": "2", "traffic": {"2": 100}, "previous_traffic": {"1": 100}}
    assert registration_lines({"deployment": deployment})[-1] == (
        "**Rollback:** restore the split before this deployment, 100% to deployed model id 1"
    )


@pytest.mark.parametrize("previous", [{}, {"2": 100}])
def test_registration_lines_no_rollback_for_a_first_or_unchanged_deployment(
    previous: dict[str, int],
) -> None:
    deployment = {
        "deployed_model_id": "2",
        "traffic": {"2": 100},
        "previous_traffic": previous,
        "endpoint": "endpoints/gyo",
    }
    lines = registration_lines({"deployment": deployment})
    assert lines == ["**Deployment:** 100% to deployed model id 2"]


def test_build_summary_reads_the_endpoint_for_the_rollback_line() -> None:
    outputs = {
        "register-model": TaskOutputs(parameters={"version_id": "5", "aliases": ["champion"]}),
        "deploy-model": TaskOutputs(
            parameters={
                "deployed_model_id": "31",
                "traffic": {"31": 100},
                "previous_traffic": {"30": 100},
            },
            artifacts={"endpoint": {"uri": "", "metadata": {"resourceName": VERTEX_ENDPOINT}}},
        ),
    }
    facts = build_summary(
        outputs, run_name="r", state="SUCCEEDED", error_message="", job_shape={},
        expected_training_hours=1.0,
    )  # fmt: skip
    assert facts["deployment"]["endpoint"] == VERTEX_ENDPOINT
    assert (
        "**Rollback:** `gcloud ai endpoints update 4455 --project=p-1 --region=europe-west4 "
        "--traffic-split=30=100` restores the split before this deployment, 100% to deployed "
        "model id 30"
    ) in render_markdown(facts)


def test_local_rollback_text_names_command_and_versions_or_nothing() -> None:
    replaced = {"deployed_model_id": "2", "traffic": {"2": 100}, "previous_traffic": {"1": 100}}
    assert local_rollback_text(replaced, "guess-your-order", {"1": "1", "2": "2"}) == (
        "vertex-retrain endpoints rollback guess-your-order restores the split before this "
        "deployment, 100% to deployed model id 1 (version 1)"
    )
    assert local_rollback_text(replaced, "e") == (
        "vertex-retrain endpoints rollback e restores the split before this deployment, 100% "
        "to deployed model id 1"
    )
    first = {"deployed_model_id": "1", "traffic": {"1": 100}, "previous_traffic": {}}
    rerun = {"deployed_model_id": "2", "traffic": {"2": 100}, "previous_traffic": {"2": 100}}
    for deployment in (first, rerun, {}):
        assert local_rollback_text(deployment, "e") == ""

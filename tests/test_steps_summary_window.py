"""The run summary carries the run's data window and the data gate's verdict."""

from __future__ import annotations

from vertex_retrain.backends.base import TaskOutputs
from vertex_retrain.steps.summary import build_summary, render_markdown


def test_summary_records_the_window_and_the_gate() -> None:
    outputs = {
        "data-window": TaskOutputs(parameters={"as_of": "2026-11-23", "source": "schedule"}),
        "check-data": TaskOutputs(
            parameters={"passed": True, "verdict": "data gate passed for week 41", "breaches": []},
            artifacts={"statistics": {"uri": "", "metadata": {"rows": 1200, "week": 41}}},
        ),
        "prepare-dataset": TaskOutputs(
            parameters={"as_of": "2026-11-23"},
            artifacts={
                "dataset": {
                    "uri": "/tmp/d",
                    "metadata": {
                        "as_of": "2026-11-23",
                        "first_row": "2023-01-02T07:01:00",
                        "last_row": "2026-11-22T21:59:00",
                        "content_hash": "abc",
                    },
                }
            },
        ),
    }
    facts = build_summary(
        outputs,
        run_name="weekly-1",
        state="SUCCEEDED",
        error_message="",
        job_shape={},
        expected_training_hours=1.0,
    )
    assert facts["data_window"]["source"] == "schedule"
    assert facts["data_window"]["content_hash"] == "abc"
    assert facts["data_gate"] == {
        "passed": True,
        "verdict": "data gate passed for week 41",
        "breaches": [],
        "statistics": {"rows": 1200, "week": 41},
    }
    text = render_markdown(facts)
    assert (
        "**Data window:** rows before 2026-11-23 (schedule): "
        "2023-01-02T07:01:00 .. 2026-11-22T21:59:00" in text
    )
    assert "**Data gate:** data gate passed for week 41" in text


def test_summary_of_a_run_stopped_at_the_gate_has_a_window_but_no_split() -> None:
    outputs = {
        "data-window": TaskOutputs(parameters={"as_of": "2026-11-23", "source": "parameter"}),
        "check-data": TaskOutputs(
            parameters={"passed": False, "verdict": "stopped", "breaches": ["x"]}
        ),
    }
    facts = build_summary(
        outputs,
        run_name="r",
        state="FAILED",
        error_message="",
        job_shape={},
        expected_training_hours=1.0,
    )
    assert facts["data_window"] == {"as_of": "2026-11-23", "source": "parameter"}
    assert facts["data_gate"]["passed"] is False and "decision" not in facts


def test_render_markdown_counts_no_training_cost_for_a_run_that_trained_nothing() -> None:
    # A week stopped by the data gate paid for no training: as in history and the run's report.
    stopped = {
        "check-data": TaskOutputs(parameters={"passed": False, "verdict": "stopped"}),
    }
    trained = {
        **stopped,
        "train-custom-job": TaskOutputs(artifacts={"model": {"uri": "/m", "metadata": {}}}),
    }
    lines = {}
    for name, outputs in (("stopped", stopped), ("trained", trained)):
        facts = build_summary(
            outputs, run_name="r", state="FAILED", error_message="",
            job_shape={}, expected_training_hours=2.0,
        )  # fmt: skip
        text = render_markdown(facts)
        lines[name] = next(x for x in text.splitlines() if x.startswith("**Cost on Vertex"))
    assert lines["stopped"].startswith(
        "**Cost on Vertex:** none counted: no training finished in this run (the week as "
        "planned, 2 h of training: on-demand "
    )
    assert lines["trained"].startswith("**Cost on Vertex** (2 h of training assumed): on-demand ")


def test_render_markdown_names_the_deployed_model_id_apart_from_the_version() -> None:
    facts = {
        "registered": {"version_id": "3", "aliases": ["champion", "default"]},
        "deployment": {"deployed_model_id": "2", "traffic": {"2": 100, "1": 0}},
    }
    text = render_markdown(facts)
    assert "**Registered:** version 3 (aliases champion, default)" in text
    assert (
        "**Deployment:** 100% to deployed model id 2 (version 3), 0% to deployed model id 1" in text
    )
    assert "{" not in text
    challenger = render_markdown({"registered": {"version_id": "4", "aliases": []}})
    assert "**Registered:** version 4 (aliases none)" in challenger
    assert "Deployment" not in challenger


def _summary(state: str, *, deployed: bool) -> dict[str, object]:
    outputs = {
        "register-model": TaskOutputs(
            parameters={"version_id": "3", "aliases": ["champion", "default"]}
        )
    }
    if deployed:
        outputs["deploy-model"] = TaskOutputs(
            parameters={"deployed_model_id": "2", "traffic": {"2": 100}}
        )
    return build_summary(
        outputs,
        run_name="weekly-1",
        state=state,
        error_message="",
        job_shape={},
        expected_training_hours=1.0,
    )


def test_summary_says_a_champion_a_stopped_run_never_deployed() -> None:
    # The run ended between register-champion and deploy: traffic stayed where it was.
    stopped = _summary("CANCELLED", deployed=False)
    assert stopped["champion_not_deployed"] == "3"
    assert (
        "**Not deployed:** version 3 holds the champion alias, but the run ended before its "
        "deploy finished" in render_markdown(stopped)
    )
    for ended in (_summary("SUCCEEDED", deployed=False), _summary("FAILED", deployed=True)):
        assert "champion_not_deployed" not in ended
        assert "Not deployed" not in render_markdown(ended)

"""A failed local run's week records the first cause, not kfp.local's generic line."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.cli.failure_record import (
    REQUESTED_SOURCE,
    record_cause,
    record_interruption,
    record_requested_week,
)
from vertex_retrain.cli.local_run import run_pipeline_locally
from vertex_retrain.cli.main import main
from vertex_retrain.run_record import RunRecord

GENERIC = "Task exit-handler-1 failed."


def _failed(run: str, error: str) -> RunRecord:
    return RunRecord(run=run, model="m", backend="local", state="FAILED", error=error)


def _errors() -> dict[str, str]:
    return {record.run: record.error for record in RunHistory().weeks()}


def test_record_cause_replaces_the_generic_line_with_the_causes_first_line(root: Path) -> None:
    RunHistory().record(_failed("r1", GENERIC))
    RunHistory().record(_failed("r2", GENERIC))
    cause = "ValueError: column 'units' is double\nTraceback (most recent call last): ..."
    assert record_cause(root, "r1", cause)
    assert _errors() == {"r1": "ValueError: column 'units' is double", "r2": GENERIC}


def test_record_cause_leaves_a_record_that_already_says_why(root: Path) -> None:
    RunHistory().record(_failed("r1", "JobSpecError: machine_type 'n1-huge'"))
    assert not record_cause(root, "r1", "ValueError: something else")
    assert _errors() == {"r1": "JobSpecError: machine_type 'n1-huge'"}


def test_record_cause_without_a_registry_makes_none(root: Path) -> None:
    assert not record_cause(root, "r1", "ValueError: boom")
    assert not (root / "registry.db").exists()


def test_record_interruption_records_the_week_as_cancelled_at_its_step(root: Path) -> None:
    assert record_interruption(root, "r1", "m", "2026-11-16", "train-custom-job")
    (week,) = RunHistory().weeks("m")
    assert (week.run, week.state, week.as_of) == ("r1", "CANCELLED", "2026-11-16")
    assert week.error == "interrupted at step train-custom-job; nothing after it ran"
    assert record_interruption(root, "r2", "m", "", None)
    assert RunHistory().weeks("m")[0].error == "interrupted between steps; nothing after it ran"


def test_record_interruption_keeps_a_record_the_exit_handler_wrote(root: Path) -> None:
    RunHistory().record(_failed("r1", "ValueError: boom"))
    assert not record_interruption(root, "r1", "m", "2026-11-16", "run-summary")
    assert _errors() == {"r1": "ValueError: boom"}


def test_run_pipeline_locally_records_an_interrupted_run_and_stops(root: Path) -> None:
    def interrupted(**arguments: Any) -> None:
        (root / "pipeline-root" / "weekly-run-1").mkdir(parents=True)
        print("Executing task 'train-custom-job'")  # what kfp.local logs as a task starts
        raise KeyboardInterrupt

    arguments = {"as_of": "2026-11-16", "model_display_name": "m"}
    with pytest.raises(KeyboardInterrupt):
        run_pipeline_locally(interrupted, arguments, console=io.StringIO())
    (week,) = RunHistory().weeks("m")
    assert (week.run, week.state, week.as_of) == ("weekly-run-1", "CANCELLED", "2026-11-16")
    assert "train-custom-job" in week.error


def test_record_interruption_is_the_latest_run_of_its_week(root: Path) -> None:
    from vertex_retrain.cli.history_weeks import rows_of_weeks

    done = RunRecord(run="r1", model="m", backend="local", state="SUCCEEDED", as_of="2026-11-16")
    RunHistory().record(replace(done, recorded_at="2026-11-16T10:00:00+00:00"))
    assert record_interruption(root, "r2", "m", "2026-11-16", "evaluate-model")
    (row,) = rows_of_weeks(RunHistory().weeks("m"))  # r1 decided nothing: the latest run
    latest = row.record
    assert (latest.run, latest.state) == ("r2", "CANCELLED")
    assert latest.recorded_at > "2026-11-16T10:00:00+00:00"


def test_record_requested_week_files_a_weekless_run_under_its_as_of(root: Path) -> None:
    RunHistory().record(_failed("r1", GENERIC))
    RunHistory().record(replace(_failed("r2", GENERIC), as_of="2026-11-09"))
    assert not record_requested_week(root, "r1", "")  # given no as_of: stays weekless
    assert record_requested_week(root, "r1", "2026-11-16")
    assert not record_requested_week(root, "r2", "2026-11-16")  # its window came
    weeks = {record.run: record for record in RunHistory().weeks()}
    assert (weeks["r1"].as_of, weeks["r2"].as_of) == ("2026-11-16", "2026-11-09")
    assert weeks["r1"].window["source"] == REQUESTED_SOURCE


@pytest.mark.parametrize(("as_of", "week"), [("2026-11-16", "2026-11-16"), ("", "")])
def test_run_pipeline_locally_files_a_failed_window_under_the_week_asked_for(
    root: Path, as_of: str, week: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def window_failed(**arguments: Any) -> None:
        (root / "pipeline-root" / "weekly-run-1").mkdir(parents=True)
        # What the exit handler records when data-window failed: no window, no week.
        RunHistory().record(replace(_failed("weekly-run-1", GENERIC), model="m"))
        raise RuntimeError("Task data-window failed")

    arguments = {"as_of": as_of, "model_display_name": "m"}
    outcome = run_pipeline_locally(window_failed, arguments, console=io.StringIO())
    assert not outcome.succeeded
    (record,) = RunHistory().weeks("m")
    assert record.as_of == week
    assert main(["history", "m", "--no-plot"]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if "FAILED" in line]
    assert row.startswith(week or "no window")

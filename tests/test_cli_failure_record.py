"""A failed local run's week records the first cause, not kfp.local's generic line."""

from __future__ import annotations

from pathlib import Path

from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.cli.failure_record import record_cause
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

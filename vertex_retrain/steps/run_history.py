"""Recording a run's week: the run summary's facts become a record the backend keeps.

Locally the record goes to the registry database (``vertex-retrain history`` reads it); on Vertex
it becomes one Vertex AI Experiments run of the model's experiment. A failure to record is
reported in the summary, never raised: the exit handler must still write what it knows.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from vertex_retrain.backends.base import Backend
from vertex_retrain.run_record import RunRecord, record_from_summary
from vertex_retrain.steps.backend import resolve_backend

__all__ = ["record_week"]


def record_week(
    facts: Mapping[str, Any],
    *,
    backend: str | Backend,
    model: str,
    project: str = "",
    location: str = "",
) -> tuple[RunRecord, str]:
    """Builds the week's record from the summary and hands it to the backend.

    Args:
        facts: The run summary (:func:`vertex_retrain.steps.summary.summarize_run`).
        backend: ``"local"`` or ``"vertex"``, or a backend (a test's, with fakes).
        model: The model's display name (the history and the experiment are per model).
        project: Google Cloud project (Vertex).
        location: Google Cloud region (Vertex).

    Returns:
        The record, and where it went (or why it was not recorded).
    """
    chosen = resolve_backend(backend, project=project, location=location)
    record = record_from_summary(
        facts,
        model=model,
        backend=chosen.name,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    try:
        where = chosen.record_run(record)
    except Exception as error:  # the summary must survive an unreachable record keeper
        where = f"not recorded ({type(error).__name__}: {error})"
    return record, where

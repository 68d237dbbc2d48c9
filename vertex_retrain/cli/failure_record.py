"""The cause of a failed local run, put into its week's record.

The run summary (the exit handler) records a failed week with the error kfp hands it, which
kfp.local words as ``Task exit-handler-1 failed.``: the failing step and its error are only in
the run's log. When the run ends, the local runner knows them (the first cause it prints), so
it puts that into the record, and ``history`` says why each failed week failed.

An interrupted run (Ctrl-C, SIGTERM) never reaches its exit handler, so the runner writes its
week's record itself (:func:`record_interruption`): ``history`` shows the week as
``CANCELLED`` with the step it stopped at, instead of showing nothing. A run whose data
window never came (its ``data-window`` step failed) is filed under the ``as_of`` it was given
(:func:`record_requested_week`); given none, it stays a run without a week.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vertex_retrain.run_record import RunRecord

GENERIC_FAILURE = re.compile(r"^Task [\w.-]+ failed\.?$")
"""The error kfp.local gives an exit handler, which names no step and no cause."""

MAX_CAUSE = 2000
"""Characters of the cause kept (its first line): a data gate's verdict runs to several hundred."""


INTERRUPTED_STATE = "CANCELLED"
"""The state of an interrupted run, as Vertex names a cancelled PipelineJob's."""


def record_interruption(root: Path, run: str, model: str, as_of: str, step: str | None) -> bool:
    """Records ``run`` of ``model`` as cancelled at ``step``, unless it already has a record.

    Best effort, as :func:`record_cause`: an exit handler that recorded the run before the
    interruption keeps its record, and a registry that cannot be opened changes nothing.

    Args:
        root: The local root (its ``registry.db`` holds the weeks).
        run: The pipeline run's name.
        model: The model's display name (the week's row in ``history``).
        as_of: The run's ``as_of`` (``YYYY-MM-DD``), "" when unknown.
        step: The step that was running, None between steps.

    Returns:
        True when a record was written.
    """
    from vertex_retrain.backends.local.model_registry.registry_db import (
        DB_FILENAME,
        RegistryError,
        RegistryInputError,
        RegistryNotFoundError,
    )
    from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
    from vertex_retrain.run_record import RunRecord

    where = f"at step {step}" if step else "between steps"
    record = RunRecord(
        run=run,
        model=model,
        backend="local",
        state=INTERRUPTED_STATE,
        as_of=as_of,
        error=f"interrupted {where}; nothing after it ran",
    )
    try:
        history = RunHistory(root / DB_FILENAME)
        if any(week.run == run for week in history.weeks()):
            return False
        history.record(record)
    except (RegistryError, RegistryInputError, RegistryNotFoundError, OSError, sqlite3.Error):
        return False
    return True


def record_cause(root: Path, run: str, cause: str) -> bool:
    """Replaces a generic error in the record of ``run`` under ``root`` with ``cause``.

    Best effort: a run without a record (it stopped before its exit handler), a record that
    already says why, or a registry that cannot be opened change nothing.

    Args:
        root: The local root (its ``registry.db`` holds the weeks).
        run: The pipeline run's name (its folder under the pipeline root).
        cause: The first failed task's error; its first line is kept.

    Returns:
        True when the record was updated.
    """
    first = cause.strip().splitlines()[0][:MAX_CAUSE] if cause.strip() else ""
    if not first:
        return False
    return _amend(
        root,
        run,
        lambda record: (
            replace(record, error=first) if GENERIC_FAILURE.match(record.error.strip()) else None
        ),
    )


REQUESTED_SOURCE = "parameter, unchecked: the data-window step failed"
"""The window source of a failed run filed under the week it asked for."""


def record_requested_week(root: Path, run: str, as_of: str) -> bool:
    """Files the record of ``run`` under the week it asked for when its window never came.

    A run whose ``data-window`` step failed has no window, so its exit handler records it
    without a week; when the run was given ``as_of``, that is the week it belongs to (and
    ``history`` lists it there). Best effort, as :func:`record_cause`; a record with a week,
    or a run given no ``as_of``, is left as it is.

    Args:
        root: The local root (its ``registry.db`` holds the weeks).
        run: The pipeline run's name (its folder under the pipeline root).
        as_of: The ``as_of`` the run was given (``YYYY-MM-DD``), "" when none.

    Returns:
        True when the record was updated.
    """
    if not as_of.strip():
        return False
    return _amend(
        root,
        run,
        lambda record: (
            None
            if record.as_of
            else replace(record, as_of=as_of, window={**record.window, "source": REQUESTED_SOURCE})
        ),
    )


def _amend(root: Path, run: str, change: Callable[[RunRecord], RunRecord | None]) -> bool:
    """Rewrites the record of ``run`` as ``change`` returns it (None: unchanged)."""
    from vertex_retrain.backends.local.model_registry.registry_db import (
        DB_FILENAME,
        RegistryError,
        RegistryNotFoundError,
    )
    from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory

    if not (root / DB_FILENAME).is_file():
        return False
    try:
        history = RunHistory(root / DB_FILENAME)
        for record in history.weeks():
            changed = change(record) if record.run == run else None
            if changed is not None:
                history.record(changed)
                return True
    except (RegistryError, RegistryNotFoundError, OSError, sqlite3.Error):
        return False  # the run's outcome stands whatever the registry says
    return False

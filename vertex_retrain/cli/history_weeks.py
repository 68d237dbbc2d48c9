"""Which run of a week ``vertex-retrain history`` shows: the one that decided it.

A week may be run more than once: after a failure, with other parameters, or again after it
succeeded. Its row is the latest run that reached a decision (promoted its candidate or
refused it), since that decision is what the registry and the endpoint still hold. A
re-run after it that decided nothing (cancelled, failed, stopped by the data gate, or whose
candidate was the champion itself: nothing to decide) does not undo it, so it is a note on
that row, not the row. A week no run decided shows its latest run. Runs before the deciding
one are left out (a count says how many); ``--all-runs`` shows every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vertex_retrain.run_record import RunRecord, decision_word

__all__ = ["LATER_MARK", "WeekRow", "decided", "later_run_note", "rows_of_weeks"]

LATER_MARK = "+"
"""Appended to a row's outcome when the week was re-run after its decision without a new one."""

_NOTE_LIMIT = 160
"""Characters of a later run's note kept in the table (``--json`` has the whole record)."""


@dataclass(frozen=True)
class WeekRow:
    """A week's row: the run shown, and the week's other runs.

    Attributes:
        record: The run that stands for the week.
        later: The week's runs after it, oldest first (none of them decided anything).
        earlier: How many of the week's runs before it are left out.
    """

    record: RunRecord
    later: tuple[RunRecord, ...] = ()
    earlier: int = 0


def decided(record: RunRecord) -> bool:
    """Whether the run decided its week: it promoted or refused its candidate (a candidate
    that was the champion itself decided nothing)."""
    return decision_word(record.decision) in ("champion", "challenger")


def rows_of_weeks(records: Sequence[RunRecord]) -> list[WeekRow]:
    """One row per model and week, in the order of the shown runs in ``records`` (oldest
    first).

    The row's run is the week's latest run that decided it, else its latest run; "latest" by
    ``recorded_at``, then by run name. Runs without a week (stopped before their data window)
    are a row each.
    """

    def week(record: RunRecord) -> tuple[str, str]:
        return record.model, record.as_of or f"run:{record.run}"

    weeks: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        weeks.setdefault(week(record), []).append(record)
    rows: dict[int, WeekRow] = {}
    for runs in weeks.values():
        ordered = sorted(runs, key=lambda r: (r.recorded_at, r.run))
        deciding = [i for i, r in enumerate(ordered) if decided(r)]
        shown = deciding[-1] if deciding else len(ordered) - 1
        row = WeekRow(ordered[shown], tuple(ordered[shown + 1 :]), shown)
        rows[id(row.record)] = row
    return [rows[id(record)] for record in records if id(record) in rows]


def later_run_note(record: RunRecord) -> str:
    """What a re-run that decided nothing came to, in one line: ``re-run RUN: cancelled:
    interrupted at step train-custom-job; ...``, ``...: stopped by the data gate``, or the
    reason it had nothing to decide."""
    if decision_word(record.decision) == "unchanged":
        what = str(record.decision.get("reason", "")) or "nothing to decide"
    elif record.data.get("passed") is False:
        what = "stopped by the data gate"
    else:
        state = (record.state or "no state").lower()
        cause = record.error.strip().splitlines()[0] if record.error.strip() else ""
        what = f"{state}: {cause}" if cause else state
    if len(what) > _NOTE_LIMIT:
        what = what[: _NOTE_LIMIT - 3] + "..."
    return f"re-run {record.run}: {what}"

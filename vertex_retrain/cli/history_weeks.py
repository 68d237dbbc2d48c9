"""Which run of a week ``vertex-retrain history`` shows: the one that decided it.

A week may be run more than once: after a failure, with other parameters, or again after it
succeeded. Its row is the run whose decision the week left in place: its latest run that
promoted its candidate, else its latest run that refused one, else its latest run. A refusal
that repeats an earlier one of the week (the same candidate metrics and reason: a re-run served
from the cache, say) decided nothing new, so the first of them stands. A re-run
after that run (cancelled, failed, stopped by the data gate, refused, or whose candidate was
the champion itself: nothing to decide) promoted nothing, so it does not undo what the row
shows: it is a note on the row, not the row. Runs before the row's run are left out (a count
says how many); ``--all-runs`` shows every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vertex_retrain.run_record import RunRecord, decision_word

__all__ = ["LATER_MARK", "WeekRow", "later_run_note", "rows_of_weeks", "standing"]

LATER_MARK = "+"
"""Appended to a row's outcome when the week was re-run after the row's run, promoting nothing."""

_NOTE_LIMIT = 160
"""Characters of a later run's note kept in the table (``--json`` has the whole record)."""


@dataclass(frozen=True)
class WeekRow:
    """A week's row: the run shown, and the week's other runs.

    Attributes:
        record: The run that stands for the week.
        later: The week's runs after it, oldest first (none of them promoted anything).
        earlier: How many of the week's runs before it are left out.
    """

    record: RunRecord
    later: tuple[RunRecord, ...] = ()
    earlier: int = 0


def standing(record: RunRecord) -> int:
    """How much of its week a run decided: 2 when it promoted its candidate, 1 when it
    refused one, 0 when it decided nothing (a candidate that was the champion itself is
    nothing to decide)."""
    return {"champion": 2, "challenger": 1}.get(decision_word(record.decision), 0)


def rows_of_weeks(records: Sequence[RunRecord]) -> list[WeekRow]:
    """One row per model and week, in the order of the shown runs in ``records`` (oldest
    first).

    The row's run is the week's latest run of the highest :func:`standing`; "latest" by
    ``recorded_at``, then by run name. A refusal that repeats an earlier refusal of the week
    (:func:`_repeats`) stands for that earlier one. Runs without a week (stopped before their
    data window) are a row each.
    """

    def week(record: RunRecord) -> tuple[str, str]:
        return record.model, record.as_of or f"run:{record.run}"

    weeks: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        weeks.setdefault(week(record), []).append(record)
    rows: dict[int, WeekRow] = {}
    for runs in weeks.values():
        ordered = sorted(runs, key=lambda r: (r.recorded_at, r.run))
        shown = max(range(len(ordered)), key=lambda i: (standing(ordered[i]), i))
        shown = next(i for i in range(shown + 1) if _repeats(ordered[shown], ordered[i]))
        row = WeekRow(ordered[shown], tuple(ordered[shown + 1 :]), shown)
        rows[id(row.record)] = row
    return [rows[id(record)] for record in records if id(record) in rows]


def _repeats(later: RunRecord, earlier: RunRecord) -> bool:
    """Whether ``later`` decided nothing ``earlier`` had not: the same run, or the same
    refusal of the same candidate (metrics and reason equal). Only refusals: a promotion
    repeated moves the aliases again, and a run that decided nothing stands only without
    either."""
    if later is earlier:
        return True
    return (
        standing(later) == standing(earlier) == 1
        and bool(later.candidate)
        and later.candidate == earlier.candidate
        and later.decision.get("reason") == earlier.decision.get("reason")
    )


def later_run_note(record: RunRecord) -> str:
    """What a re-run that promoted nothing came to, in one line: ``re-run RUN: cancelled:
    interrupted at step train-custom-job; ...``, ``...: stopped by the data gate``,
    ``...: challenger: <reason>``, or the reason it had nothing to decide."""
    word = decision_word(record.decision)
    reason = str(record.decision.get("reason", ""))
    if word == "unchanged":
        what = reason or "nothing to decide"
    elif word:
        what = f"{word}: {reason}" if reason else word
    elif record.data.get("passed") is False:
        what = "stopped by the data gate"
    else:
        state = (record.state or "no state").lower()
        cause = record.error.strip().splitlines()[0] if record.error.strip() else ""
        what = f"{state}: {cause}" if cause else state
    if len(what) > _NOTE_LIMIT:
        what = what[: _NOTE_LIMIT - 3] + "..."
    return f"re-run {record.run}: {what}"

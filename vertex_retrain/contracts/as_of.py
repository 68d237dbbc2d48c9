"""The run's data window: a run sees only the rows strictly before ``as_of``.

``as_of`` is a calendar date in the data's time zone; the window ends at its midnight
(exclusive), so nothing from that day or later reaches training or evaluation (point in time).
A run gets it, in this order, from:

1. the ``as_of`` pipeline parameter (``--param as_of=2026-11-23`` replays a past week);
2. the time the run was scheduled for (``dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER``);
3. the time the run was created (``dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER``), for a
   manual run;
4. the clock of the task that resolves it (a component called on its own).

A time is converted to the data's time zone and cut to its date, so every run of the same day
has the same ``as_of`` (and Vertex's cache key with it): a re-run of a failed week reuses its
finished steps, and the next period computes afresh.

A file of the declared table holds one period (a day or a week). A file is in the window when
its newest row is before the cut; a file with rows on both sides of the cut (the period in
progress) is left out whole, and so is a file entirely after it. This module is pure: times
arrive as values.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "AS_OF_SOURCES",
    "AsOf",
    "DataWindowError",
    "FileSpan",
    "Selection",
    "check_after_start",
    "check_as_of",
    "cut_of",
    "describe",
    "parse_as_of",
    "resolve_as_of",
    "run_time",
    "select_before",
    "window_labels",
    "zone",
]

AS_OF_SOURCES = ("parameter", "schedule", "creation", "clock")
"""Where a run's ``as_of`` came from, in order of precedence."""

_EARLIEST_RUN_TIME = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
"""A run time before this is no time: a manual run's schedule time may read as the epoch."""

_FORMS = "a date YYYY-MM-DD or an RFC 3339 time such as 2026-11-23T03:00:00+08:00"


class DataWindowError(ValueError):
    """``as_of`` is malformed, in the future or before the data; the message is one line."""


@dataclass(frozen=True)
class AsOf:
    """A resolved window end.

    Attributes:
        date: The window holds rows strictly before this date's midnight.
        source: One of :data:`AS_OF_SOURCES`.
    """

    date: dt.date
    source: str

    def iso(self) -> str:
        """``YYYY-MM-DD``: the form passed between tasks and shown in labels."""
        return self.date.isoformat()


def zone(name: str) -> dt.tzinfo:
    """The IANA time zone ``name`` (``UTC``, ``Asia/Taipei``...).

    Raises:
        DataWindowError: Not a known time zone.
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise DataWindowError(
            f"data_time_zone {name!r} is not an IANA time zone such as 'UTC' or 'Asia/Taipei'"
        ) from None


def parse_as_of(text: str, *, time_zone: str = "UTC") -> dt.date:
    """Reads an ``as_of`` value as the date in the data's time zone.

    A date is taken as is; a time with an offset (``Z``, ``+08:00``) is converted to
    ``time_zone`` first; a time without one is already the data's local time.

    Raises:
        DataWindowError: Neither a date nor a time.
    """
    value = text.strip()
    try:
        if len(value) == 10:
            return dt.date.fromisoformat(value)
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise DataWindowError(f"as_of must be {_FORMS}; got {text!r}") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(zone(time_zone))
    return moment.date()


def run_time(text: str) -> dt.datetime | None:
    """A placeholder's resolved run time, or None when it names no time.

    None for an empty value, a placeholder the orchestrator left unresolved, or a time before
    2000 (a manual run's schedule time may read as the epoch).

    Raises:
        DataWindowError: A value that is none of those and not an ISO 8601 time. Falling back
            to the clock instead could put a late or queued scheduled run in the wrong week.
    """
    value = text.strip()
    if not value or "{{" in value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise DataWindowError(
            f"run time {value!r} is not an ISO 8601 time (e.g. 2026-11-30T03:00:00Z); "
            "pass --param as_of=YYYY-MM-DD to choose the week explicitly"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment if moment >= _EARLIEST_RUN_TIME else None


def resolve_as_of(
    as_of: str,
    *,
    scheduled_time: str = "",
    created_time: str = "",
    now: dt.datetime,
    time_zone: str = "UTC",
) -> AsOf:
    """The run's window end, from the first of parameter, schedule, creation and clock.

    Args:
        as_of: The pipeline parameter (empty: not given).
        scheduled_time: The run's schedule time placeholder, as resolved.
        created_time: The run's creation time placeholder, as resolved.
        now: The clock (timezone-aware), the last resort.
        time_zone: The data's time zone: times are converted to it, then cut to the date.

    Raises:
        DataWindowError: ``as_of`` is malformed or the time zone unknown.
    """
    tz = zone(time_zone)
    if as_of.strip():
        return AsOf(parse_as_of(as_of, time_zone=time_zone), "parameter")
    for source, text in (("schedule", scheduled_time), ("creation", created_time)):
        moment = run_time(text)
        if moment is not None:
            return AsOf(moment.astimezone(tz).date(), source)
    return AsOf(now.astimezone(tz).date(), "clock")


def check_as_of(
    as_of: dt.date,
    *,
    today: dt.date,
    first_row: dt.datetime | None = None,
    today_is: str = "in the data's time zone",
) -> None:
    """Refuses a window end in the future or one that leaves no row.

    Args:
        as_of: The window end.
        today: Today in the data's time zone.
        first_row: The oldest row, when known.
        today_is: Where ``today`` is today, for the message.

    Raises:
        DataWindowError: One line naming the value and what would be accepted.
    """
    if as_of > today:
        raise DataWindowError(
            f"as_of {as_of.isoformat()} is in the future (today is {today.isoformat()} "
            f"{today_is}); give a date up to today, or leave as_of empty to use the run's "
            "time"
        )
    if first_row is not None:
        check_after_start(as_of, first_row)


def check_after_start(as_of: dt.date, first_row: dt.datetime) -> None:
    """Refuses a window end at or before the oldest row.

    Raises:
        DataWindowError: One line naming the value and the first row's time.
    """
    if cut_of(as_of) <= first_row:
        raise DataWindowError(
            f"as_of {as_of.isoformat()} is before the data starts (first row "
            f"{first_row.isoformat(sep=' ')}); give a date after "
            f"{first_row.date().isoformat()}"
        )


def cut_of(as_of: dt.date) -> dt.datetime:
    """The window's end as a naive local time (the rows carry naive local times)."""
    return dt.datetime.combine(as_of, dt.time())


@dataclass(frozen=True)
class FileSpan:
    """One file of the declared table placed in time.

    Attributes:
        path: Relative to the dataset folder.
        rows: Its row count.
        first: Its oldest row's time (None when it holds no rows).
        last: Its newest row's time (None when it holds no rows).
    """

    path: str
    rows: int
    first: dt.datetime | None
    last: dt.datetime | None


@dataclass(frozen=True)
class Selection:
    """Which files a window holds.

    Attributes:
        included: Every row before the cut.
        partial: Rows on both sides of the cut (the period in progress): left out whole.
        after: Every row at or after the cut.
        empty: No rows at all.
    """

    included: list[FileSpan] = field(default_factory=list)
    partial: list[FileSpan] = field(default_factory=list)
    after: list[FileSpan] = field(default_factory=list)
    empty: list[FileSpan] = field(default_factory=list)

    @property
    def first(self) -> dt.datetime | None:
        """The oldest row's time in the window."""
        return min((f.first for f in self.included if f.first is not None), default=None)

    @property
    def last(self) -> dt.datetime | None:
        """The newest row's time in the window."""
        return max((f.last for f in self.included if f.last is not None), default=None)


def select_before(files: Iterable[FileSpan], cut: dt.datetime) -> Selection:
    """Sorts files by where they fall against ``cut`` (see the module docstring)."""
    selection = Selection()
    for span in files:
        if span.first is None or span.last is None:
            selection.empty.append(span)
        elif span.last < cut:
            selection.included.append(span)
        elif span.first < cut:
            selection.partial.append(span)
        else:
            selection.after.append(span)
    return selection


def window_labels(as_of: dt.date, first: dt.datetime | None) -> dict[str, str]:
    """The window as Vertex labels (keys and values of ``[a-z0-9_-]``)."""
    labels = {"data_as_of": as_of.isoformat()}
    if first is not None:
        labels["data_from"] = first.date().isoformat()
    return labels


def describe(as_of: AsOf | dt.date, selection: Selection, periods: Sequence[dt.date] = ()) -> str:
    """One line for logs and summaries: the window and what it left out."""
    date = as_of.date if isinstance(as_of, AsOf) else as_of
    first, last = selection.first, selection.last
    parts = [f"window up to {date.isoformat()} (exclusive)"]
    if first is not None and last is not None:
        parts.append(f"rows {first.isoformat(sep=' ')} .. {last.isoformat(sep=' ')}")
    if periods:
        parts.append(f"periods {min(periods).isoformat()}..{max(periods).isoformat()}")
    if selection.partial:
        parts.append(f"left out the period in progress ({len(selection.partial)} file(s))")
    if selection.after:
        parts.append(f"left out {len(selection.after)} file(s) after as_of")
    return "; ".join(parts)

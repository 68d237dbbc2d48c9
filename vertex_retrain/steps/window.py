"""data_window's logic: the run's ``as_of``, from its parameter, schedule, creation or clock.

The rules are :mod:`vertex_retrain.contracts.as_of`'s; this module adds the clock.
"""

from __future__ import annotations

import datetime as dt

from vertex_retrain.contracts.as_of import (
    AsOf,
    DataWindowError,
    check_as_of,
    parse_as_of,
    resolve_as_of,
    zone,
)

__all__ = ["AsOf", "DataWindowError", "resolve_window", "window_end"]

# The latest civil date anywhere is UTC+14 (Line Islands): a date after it is in the future in
# every time zone, so a step that does not know the data's zone can still refuse it.
_LATEST_OFFSET = dt.timedelta(hours=14)


def resolve_window(
    *,
    as_of: str = "",
    scheduled_time: str = "",
    created_time: str = "",
    time_zone: str = "UTC",
    now: dt.datetime | None = None,
) -> AsOf:
    """The run's window end, checked not to be in the future.

    Args:
        as_of: The ``as_of`` pipeline parameter (empty: not given).
        scheduled_time: ``dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER``, as resolved.
        created_time: ``dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER``, as resolved.
        time_zone: The data's IANA time zone.
        now: The clock (a test's); the system's by default.

    Raises:
        DataWindowError: Malformed, in the future, or an unknown time zone (one line).
    """
    clock = now or dt.datetime.now(dt.UTC)
    resolved = resolve_as_of(
        as_of,
        scheduled_time=scheduled_time,
        created_time=created_time,
        now=clock,
        time_zone=time_zone,
    )
    check_as_of(resolved.date, today=clock.astimezone(zone(time_zone)).date())
    return resolved


def window_end(as_of: str, *, now: dt.datetime | None = None) -> dt.date:
    """The window end a data step was given (empty: today in UTC), refused if in the future.

    Raises:
        DataWindowError: Malformed, or after today everywhere on Earth.
    """
    clock = now or dt.datetime.now(dt.UTC)
    if not as_of.strip():
        return clock.astimezone(dt.UTC).date()
    date = parse_as_of(as_of)
    latest = (clock.astimezone(dt.UTC) + _LATEST_OFFSET).date()
    check_as_of(date, today=latest, today_is="at the latest, anywhere on Earth")
    return date

"""Cron expressions of pipeline schedules: validation, time zones, Vertex's cron string, next runs.

Vertex stores a schedule's cron as ``TZ=<IANA zone> <five-field cron>``. Everything here is
pure: standard library, and croniter imported inside the functions that need it.
"""

from __future__ import annotations

import difflib
import functools
import re
import zoneinfo
from datetime import UTC, datetime

__all__ = [
    "ScheduleError",
    "next_run_times",
    "parse_vertex_cron",
    "validate_cron",
    "validate_time_zone",
    "vertex_cron",
]

# Standard cron only: numbers, * , - / and three-letter month / weekday names. croniter also
# takes Jenkins-style H, L, W, # and ? which Vertex's scheduler is not documented to accept.
_CRON_FIELD = re.compile(r"(?:[0-9*,/-]|[A-Za-z]{3})+")
_FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week")
# Bounds the search in next_run_times when candidates keep landing in daylight-saving gaps.
_MAX_CANDIDATES = 10_000
_TZ_PREFIX = re.compile(r"^(?:CRON_TZ|TZ)=(\S+)\s+(.*)$")


class ScheduleError(ValueError):
    """A schedule declaration (cron, time zone, name, values) is invalid."""


def validate_cron(cron: str) -> str:
    """Checks a five-field cron expression and returns it with single spaces.

    Args:
        cron: ``minute hour day-of-month month day-of-week``, e.g. ``"0 3 * * 1"``.

    Returns:
        The expression with its fields joined by single spaces.

    Raises:
        ScheduleError: Not five fields, a ``TZ=`` prefix, a non-standard token, an
            out-of-range value, or an expression that never fires (``0 0 30 2 *``).
    """
    from croniter import CroniterError, croniter

    fields = cron.split()
    if _TZ_PREFIX.match(cron.strip()):
        raise ScheduleError(
            f"cron {cron!r}: put the time zone in time_zone=..., not in the cron expression"
        )
    if len(fields) != 5:
        raise ScheduleError(
            f"cron {cron!r}: expected 5 fields (minute hour day-of-month month day-of-week), "
            f"got {len(fields)}; e.g. '0 3 * * 1' is Mondays at 03:00"
        )
    for name, value in zip(_FIELD_NAMES, fields, strict=True):
        if not _CRON_FIELD.fullmatch(value):
            raise ScheduleError(
                f"cron {cron!r}: {name} field {value!r} uses syntax outside standard cron "
                "(allowed: numbers, *, ',', '-', '/', and JAN-DEC / SUN-SAT names)"
            )
    normalised = " ".join(fields)
    if not croniter.is_valid(normalised):
        raise ScheduleError(
            f"cron {cron!r}: not a valid cron expression (a value is out of range or "
            "malformed); e.g. '0 3 * * 1' is Mondays at 03:00"
        )
    try:
        croniter(normalised, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterError as error:
        raise ScheduleError(f"cron {cron!r}: never fires ({error})") from None
    return normalised


@functools.cache
def _known_time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def validate_time_zone(name: str) -> zoneinfo.ZoneInfo:
    """Returns the IANA time zone of that name.

    Args:
        name: An IANA time zone database key, e.g. ``"Asia/Taipei"``.

    Returns:
        The time zone.

    Raises:
        ScheduleError: Not an IANA key; close matches are suggested.
    """
    known = _known_time_zones()
    if name not in known:
        by_lower = {zone.lower(): zone for zone in known}
        close = [by_lower[name.lower()]] if name.lower() in by_lower else []
        close = close or difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.7)
        hint = f"; did you mean {' or '.join(repr(zone) for zone in close)}?" if close else ""
        raise ScheduleError(
            f"time zone {name!r} is not in the IANA time zone database{hint} "
            "(e.g. 'Asia/Taipei', 'Europe/London', 'UTC')"
        )
    return zoneinfo.ZoneInfo(name)


def vertex_cron(cron: str, time_zone: str) -> str:
    """Renders the cron string of a Vertex schedule.

    Args:
        cron: Five-field cron expression.
        time_zone: IANA time zone key.

    Returns:
        ``"TZ=<time_zone> <cron>"``, e.g. ``"TZ=Asia/Taipei 0 3 * * 1"``.

    Raises:
        ScheduleError: Invalid cron or time zone.
    """
    validate_time_zone(time_zone)
    return f"TZ={time_zone} {validate_cron(cron)}"


def parse_vertex_cron(text: str) -> tuple[str | None, str]:
    """Splits a Vertex cron string into its time zone and expression.

    Args:
        text: ``"TZ=<zone> <cron>"``, ``"CRON_TZ=<zone> <cron>"`` or a bare cron (UTC).

    Returns:
        ``(zone or None, cron with single spaces)``; both prefixes mean the same to Vertex.
    """
    match = _TZ_PREFIX.match(text.strip())
    if match:
        return match.group(1), " ".join(match.group(2).split())
    return None, " ".join(text.split())


def next_run_times(
    cron: str, time_zone: str, count: int = 5, after: datetime | None = None
) -> list[datetime]:
    """Computes the next run times of a cron expression read in a time zone.

    Cron fields are matched against wall-clock time in ``time_zone``. Around daylight-saving
    changes: a wall-clock time that does not exist (the spring-forward gap) is skipped, and
    one that occurs twice (the fall-back hour) runs once, at its first occurrence. This is the
    prediction printed by ``--dry-run``; Vertex's own handling of those hours is not
    documented.

    Args:
        cron: Five-field cron expression.
        time_zone: IANA time zone key.
        count: How many run times.
        after: Start strictly after this instant (timezone-aware); default now.

    Returns:
        ``count`` timezone-aware datetimes in ``time_zone``, ascending.

    Raises:
        ScheduleError: Invalid cron or time zone, or a naive ``after``.
    """
    from croniter import croniter

    zone = validate_time_zone(time_zone)
    expression = validate_cron(cron)
    start = datetime.now(UTC) if after is None else after
    if start.tzinfo is None:
        raise ScheduleError("after must be timezone-aware (e.g. datetime.now(UTC))")
    # Iterate over naive wall-clock times so the cron fields match local time on both sides of
    # a daylight-saving change; croniter on aware datetimes steps in fixed offsets.
    iterator = croniter(expression, start.astimezone(zone).replace(tzinfo=None, fold=0))
    runs: list[datetime] = []
    for _ in range(_MAX_CANDIDATES):
        if len(runs) == count:
            return runs
        wall: datetime = iterator.get_next(datetime)
        local = wall.replace(tzinfo=zone, fold=0)
        if local.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
            continue  # in the spring-forward gap: this wall-clock time never happens
        # In UTC: same-zone datetimes compare by wall clock and would ignore the fold.
        if local.astimezone(UTC) > start.astimezone(UTC):
            runs.append(local)
    if len(runs) == count:
        return runs
    raise ScheduleError(
        f"cron {cron!r} in {time_zone}: only {len(runs)} of {count} run times among the next "
        f"{_MAX_CANDIDATES} candidates (they fall in daylight-saving gaps)"
    )

"""A run's ``as_of`` at the command line: refused before anything runs, chosen for local runs.

``vertex-retrain run`` checks an ``as_of`` it is given before the run starts
(the ``data_window`` task checks it again): a malformed value or one in the future is one line
and exit 2, and so, for a local run, is one before the local data starts.

A local run without ``as_of`` replays the newest period of its local data (the day after the
newest row's period) and says so; while that period is still in progress, the complete one
before it (as a schedule at the period's start would). The run's own date is what a manual Vertex
run uses; locally it would find the sample data, generated for 2023, years old, and the data
gate would rightly stop every run for a missing latest period.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, TextIO

from vertex_retrain.contracts.as_of import (
    DataWindowError,
    check_after_start,
    check_as_of,
    parse_as_of,
    zone,
)

__all__ = ["as_of_problem", "local_data_span", "with_local_as_of"]


def as_of_problem(
    arguments: Mapping[str, Any], *, local: bool = False, now: dt.datetime | None = None
) -> str | None:
    """Why the run's ``as_of`` cannot be used, in one line, or None.

    Args:
        arguments: The run's arguments (``as_of``, ``data_time_zone``, ``data_uri``,
            ``dataset_declaration``).
        local: The run is local: an ``as_of`` before the local data starts is refused too.
        now: The clock (a test's).
    """
    as_of = str(arguments.get("as_of") or "")
    if not as_of.strip():
        return None
    time_zone = str(arguments.get("data_time_zone") or "UTC")
    try:
        date = parse_as_of(as_of, time_zone=time_zone)
        clock = now or dt.datetime.now(dt.UTC)
        check_as_of(date, today=clock.astimezone(zone(time_zone)).date())
        span = local_data_span(arguments) if local else None
        if span is not None:
            check_after_start(date, span[0])
    except DataWindowError as error:
        return str(error)
    return None


def local_data_span(arguments: Mapping[str, Any]) -> tuple[dt.datetime, dt.datetime] | None:
    """The oldest and newest row of the run's declared table when it is on this machine."""
    uri = arguments.get("data_uri")
    if not isinstance(uri, str) or not uri:
        return None
    import pyarrow.parquet as pq

    from vertex_retrain.contracts.dataset import parse_dataset_declaration
    from vertex_retrain.steps.table_files import open_dataset, scan_file

    try:
        declaration = parse_dataset_declaration(arguments.get("dataset_declaration"))
        folder = open_dataset("local", uri, declaration)
        spans = [
            scan_file(pq.ParquetFile(p), p, folder.rel(p), declaration.table).span
            for p in folder.files
        ]
    except (OSError, ValueError):
        return None  # the run's own steps report what is wrong with the data
    firsts = [s.first for s in spans if s.first is not None]
    lasts = [s.last for s in spans if s.last is not None]
    if not firsts or not lasts:
        return None
    return min(firsts), max(lasts)


def _after(row: dt.datetime, now: dt.datetime) -> bool:
    """Whether a row's time is after ``now`` (aware, in the data's zone); a row without a
    zone is read on the data's wall clock (``data_time_zone``)."""
    return row > now if row.tzinfo else row > now.replace(tzinfo=None)


def _period_start(arguments: Mapping[str, Any], newest: dt.datetime) -> dt.date:
    """The first day of the declared period that holds ``newest``."""
    from vertex_retrain.contracts.dataset import parse_dataset_declaration

    return parse_dataset_declaration(arguments.get("dataset_declaration")).table.period_start(
        newest
    )


def _end_of_period(arguments: Mapping[str, Any], newest: dt.datetime) -> dt.date:
    """The first day after the declared period that holds ``newest``: the ``as_of`` a schedule
    at the start of the next period would use (a weekly table dated on Mondays gives the next
    Monday, not the Tuesday after its newest row)."""
    from vertex_retrain.contracts.dataset import parse_dataset_declaration

    table = parse_dataset_declaration(arguments.get("dataset_declaration")).table
    return _period_start(arguments, newest) + dt.timedelta(days=table.period_days)


def with_local_as_of(
    arguments: Mapping[str, Any], out: TextIO, *, now: dt.datetime | None = None
) -> dict[str, Any]:
    """The arguments, with ``as_of`` set to replay the local data's newest period if not given.

    Args:
        arguments: A local run's arguments.
        out: Where the line saying what was chosen goes.
        now: The clock (a test's).
    """
    chosen = dict(arguments)
    if "as_of" not in chosen or str(chosen["as_of"] or "").strip():
        return chosen
    span = local_data_span(chosen)
    if span is None:
        return chosen
    time_zone = str(chosen.get("data_time_zone") or "UTC")
    try:
        here = (now or dt.datetime.now(dt.UTC)).astimezone(zone(time_zone))
    except DataWindowError:
        return chosen  # data_window reports the zone
    today = here.date()
    end = _end_of_period(chosen, span[1])
    newest = "newest period"
    detail = f"newest row {span[1].isoformat(sep=' ')}"
    if _after(span[1], here):
        # No window ever holds such rows: most often a clock or time-zone error in the data.
        detail += (
            f", after now ({here:%Y-%m-%d %H:%M} {time_zone}, data_time_zone): rows dated in "
            "the future are in no week"
        )
    current = _period_start(chosen, dt.datetime.combine(today, dt.time()))
    if end > current:
        # The newest period is still in progress (or the data runs past today): its rows are
        # left out of any window, so the run replays the complete period before today's, with
        # the as_of a schedule at the start of the period uses (today's date would name the
        # same week again, differently).
        end = current
        newest = "newest complete period"
        detail += f"; the period from {current.isoformat()} is still in progress and left out"
    chosen["as_of"] = end.isoformat()
    print(
        f"as_of not given: this local run replays the {newest} of its data, "
        f"as_of={chosen['as_of']} ({detail}); "
        "pass --param as_of=YYYY-MM-DD to choose the week",
        file=out,
    )
    return chosen

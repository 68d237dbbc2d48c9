"""data_window: the run's week, as ``as_of``; never cached, so each run resolves its own."""

from typing import NamedTuple

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
def data_window(
    as_of: str = "",
    scheduled_time: str = "",
    created_time: str = "",
    time_zone: str = "UTC",
) -> NamedTuple("Outputs", [("as_of", str), ("source", str)]):
    """Resolves the end of the run's data window; data steps see only rows before it.

    ``as_of`` wins when given (``--param as_of=2026-11-23`` replays a past week); otherwise
    the time the run was scheduled for, then the time it was created (a manual run), then the
    task's clock. A time is converted to ``time_zone`` and cut to its date, so every run of the
    same day gets the same ``as_of``, and tasks keyed on it reuse their cached outputs only
    within that day's week. Run it with caching off: its output is the week's cache key.

    Args:
        as_of: ``YYYY-MM-DD`` or an RFC 3339 time; empty: the run's time.
        scheduled_time: Pass ``dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER``.
        created_time: Pass ``dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER``.
        time_zone: The data's IANA time zone (its timestamps are local times there).

    Returns:
        as_of: The window end, ``YYYY-MM-DD`` (exclusive).
        source: Where it came from: parameter, schedule, creation or clock.
    """
    from vertex_retrain.steps.window import resolve_window

    window = resolve_window(
        as_of=as_of,
        scheduled_time=scheduled_time,
        created_time=created_time,
        time_zone=time_zone,
    )
    print(f"data window: rows before {window.iso()} ({window.source})")
    return (window.iso(), window.source)

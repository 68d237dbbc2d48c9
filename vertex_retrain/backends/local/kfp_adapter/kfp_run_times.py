"""The run's creation and schedule times in kfp.local, which kfp 2.17 does not resolve.

A pipeline gives its ``data_window`` task ``dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER`` and
``dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER``; Vertex AI resolves them. kfp 2.17's
kfp.local does not: ``placeholder_utils.resolve_individual_placeholder`` fails with an
IndexError on them (later kfp resolves both to the task's UTC time). For the length of one
local run, :func:`run_time_placeholders` resolves them before kfp.local sees them: the
creation time is the run's start, and the schedule time is empty, because a local run is
never scheduled (``data_window`` then takes the creation time, as for a manual Vertex run).
Nothing changes when the installed kfp resolves them itself.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
from collections.abc import Iterator
from typing import Any

__all__ = ["CREATE_TIME", "SCHEDULE_TIME", "run_time_placeholders"]

CREATE_TIME = "{{$.pipeline_job_create_time_utc}}"
SCHEDULE_TIME = "{{$.pipeline_job_schedule_time_utc}}"


@contextlib.contextmanager
def run_time_placeholders(created: dt.datetime) -> Iterator[None]:
    """Resolves the time placeholders of one local run (see the module docstring).

    Args:
        created: The run's creation time (timezone-aware).
    """
    from kfp.local import placeholder_utils

    original = placeholder_utils.resolve_individual_placeholder
    if "utc_timestamp" in inspect.signature(original).parameters:
        yield  # this kfp resolves them itself
        return
    stamp = created.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def resolve(element: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(element, str):
            element = element.replace(CREATE_TIME, stamp).replace(SCHEDULE_TIME, "")
        return original(element, *args, **kwargs)

    placeholder_utils.resolve_individual_placeholder = resolve
    try:
        yield
    finally:
        placeholder_utils.resolve_individual_placeholder = original

"""Vertex's run-time and cloud placeholders, resolved in kfp.local for one local run.

kfp 2.17's kfp.local stops with an IndexError in
``placeholder_utils.resolve_individual_placeholder`` on placeholders that Vertex AI resolves:

- the run's times: a pipeline gives its ``data_window`` task
  ``dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER`` and
  ``dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER``. Locally the creation time is the run's
  start and the schedule time is empty, because a local run is never scheduled
  (``data_window`` then takes the creation time, as for a manual Vertex run). A kfp that
  resolves them itself (a ``utc_timestamp`` parameter) is left to do so;
- the project, region and service account GCPC's job components default to: the local
  backend ignores their values, so they become :data:`LOCAL_PROJECT`, :data:`LOCAL_LOCATION`
  and an empty account, and a pipeline that does not pass them runs as one that does.

:func:`local_placeholders` replaces them before kfp.local sees them, for the length of one run
(the installed kfp is not edited).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
from collections.abc import Iterator
from typing import Any

from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS

__all__ = [
    "CLOUD_PLACEHOLDERS",
    "CREATE_TIME",
    "LOCAL_LOCATION",
    "LOCAL_PROJECT",
    "SCHEDULE_TIME",
    "local_placeholders",
]

CREATE_TIME = "{{$.pipeline_job_create_time_utc}}"
SCHEDULE_TIME = "{{$.pipeline_job_schedule_time_utc}}"
LOCAL_PROJECT = "local-project"
LOCAL_LOCATION = "local"

CLOUD_PLACEHOLDERS = {
    RUN_PLACEHOLDERS.project: LOCAL_PROJECT,
    RUN_PLACEHOLDERS.location: LOCAL_LOCATION,
    RUN_PLACEHOLDERS.service_account: "",
}
"""Vertex's project, region and service-account placeholders, and what they are in a local
run (no account: local jobs run as this machine's user)."""


def _run_times(created: dt.datetime, resolver: Any) -> dict[str, str]:
    """The time placeholders and their local values; none when `resolver` handles them."""
    if "utc_timestamp" in inspect.signature(resolver).parameters:
        return {}
    stamp = created.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {CREATE_TIME: stamp, SCHEDULE_TIME: ""}


@contextlib.contextmanager
def local_placeholders(created: dt.datetime) -> Iterator[None]:
    """Resolves Vertex's run-time and cloud placeholders for one local run.

    Args:
        created: The run's creation time (timezone-aware).
    """
    from kfp.local import placeholder_utils

    original = placeholder_utils.resolve_individual_placeholder
    values = {**_run_times(created, original), **CLOUD_PLACEHOLDERS}

    def resolve(element: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(element, str):
            for placeholder, value in values.items():
                element = element.replace(placeholder, value)
        return original(element, *args, **kwargs)

    placeholder_utils.resolve_individual_placeholder = resolve
    try:
        yield
    finally:
        placeholder_utils.resolve_individual_placeholder = original

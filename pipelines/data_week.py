"""The start both pipelines share: the run's week, and the data gate on that week.

Called while a pipeline body is being built, so its tasks join the calling pipeline (inside
whatever ``dsl.ExitHandler`` is open), exactly as if written there.
"""

from typing import Any

from kfp import dsl

from vertex_retrain.components.check_data import check_data
from vertex_retrain.components.data_window import data_window


def week_and_data_gate(
    *,
    backend: Any,
    data_uri: Any,
    dataset_declaration: Any,
    as_of: Any,
    time_zone: Any,
    thresholds: Any,
    accept: Any,
) -> tuple[Any, Any]:
    """Adds the ``data-window`` and ``data-gate`` tasks; returns the week and the gate task.

    The window is never cached: it reads the run's schedule (else creation) time, and its
    ``as_of`` output is the cache key of every task that follows.

    Args:
        backend: The pipeline's ``backend`` parameter.
        data_uri: Where the declared table is.
        dataset_declaration: The dataset declaration.
        as_of: ``YYYY-MM-DD`` to replay a past week; empty: the run's week.
        time_zone: The data's time zone, which says when a week starts.
        thresholds: Gate thresholds overridden by name.
        accept: Gate checks a person accepts for this run.

    Returns:
        The week (``data_window``'s ``as_of`` output) and the ``check_data`` task, whose
        ``passed`` output decides whether training runs.
    """
    window = data_window(
        as_of=as_of,
        scheduled_time=dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER,
        created_time=dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER,
        time_zone=time_zone,
    ).set_display_name("data-window")
    window.set_caching_options(False)
    week = window.outputs["as_of"]
    gate = check_data(
        backend=backend,
        data_uri=data_uri,
        dataset_declaration=dataset_declaration,
        as_of=week,
        thresholds=thresholds,
        accept=accept,
    ).set_display_name("data-gate")
    return week, gate

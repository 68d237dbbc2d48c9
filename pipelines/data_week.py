"""The start both pipelines share: the run's week, its window of the data, the data gate, and
the prepared dataset that only data which passed the gate becomes.

Called while a pipeline body is being built, so its tasks join the calling pipeline (inside
whatever ``dsl.ExitHandler`` is open), exactly as if written there.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kfp import dsl

from vertex_retrain.components.check_data import check_data
from vertex_retrain.components.data_window import data_window
from vertex_retrain.components.extract_window import extract_window
from vertex_retrain.components.prepare_dataset import prepare_dataset
from vertex_retrain.components.stop_run import stop_run

from .branches import name_branches


def week_and_data_gate(
    *,
    backend: Any,
    data_uri: Any,
    dataset_declaration: Any,
    as_of: Any,
    time_zone: Any,
    thresholds: Any,
    accept: Any,
    project: Any = "",
    location: Any = "",
) -> tuple[Any, Any, Any]:
    """Adds the ``data-window``, ``extract-window`` and ``data-gate`` tasks.

    The window is never cached: it reads the run's schedule (else creation) time, and its
    ``as_of`` output is the cache key of every task that follows. Nor is the gate: it reads
    the files, and its ``window_digest`` output keys ``prepare-dataset``. Nor is the extraction: it
    reads the declared source (a warehouse's window, written to a folder named by its content;
    a Parquet folder's URI passed on), and its ``data_uri`` output keys the data steps.

    Args:
        backend: The pipeline's ``backend`` parameter.
        data_uri: Where the declared table is.
        dataset_declaration: The dataset declaration.
        as_of: ``YYYY-MM-DD`` to replay a past week; empty: the run's week.
        time_zone: The data's time zone, which says when a week starts.
        thresholds: Gate thresholds overridden by name.
        accept: Gate checks a person accepts for this run.
        project: The pipeline's project (a BigQuery source is queried there).
        location: The pipeline's region (a BigQuery source is queried there).

    Returns:
        The week (``data_window``'s ``as_of`` output), the ``check_data`` task, whose
        ``passed`` output decides whether training runs, and the Parquet folder the data steps
        read (``extract_window``'s ``data_uri`` output).
    """
    window = data_window(
        as_of=as_of,
        scheduled_time=dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER,
        created_time=dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER,
        time_zone=time_zone,
    ).set_display_name("data-window")
    window.set_caching_options(False)
    week = window.outputs["as_of"]
    extracted = extract_window(
        backend=backend,
        data_uri=data_uri,
        dataset_declaration=dataset_declaration,
        as_of=week,
        output_root=dsl.PIPELINE_ROOT_PLACEHOLDER,
        project=project,
        location=location,
    ).set_display_name("extract-window")
    extracted.set_caching_options(False)
    folder = extracted.outputs["data_uri"]
    gate = check_data(
        backend=backend,
        data_uri=folder,
        dataset_declaration=dataset_declaration,
        as_of=week,
        thresholds=thresholds,
        accept=accept,
    ).set_display_name("data-gate")
    # Never cached: it looks at the files (a period rewritten in place keeps its name), and
    # its window_digest output keys prepare-dataset.
    gate.set_caching_options(False)
    return week, gate, folder


@contextmanager
def gated_dataset(
    *,
    backend: Any,
    gate: Any,
    data_uri: Any,
    week: Any,
    dataset_declaration: Any,
    selection_periods: Any,
    gate_periods: Any,
) -> Iterator[Any]:
    """Opens the ``data-ok`` branch with its ``prepare-dataset`` task; the run stops otherwise.

    The tasks the ``with`` block adds run only when the data gate passed; when it did not,
    ``stop-before-training`` ends the run with the gate's verdict.

    Args:
        backend: The pipeline's ``backend`` parameter.
        gate: The ``check_data`` task of :func:`week_and_data_gate`.
        data_uri: The Parquet folder the data steps read (its third result).
        week: The run's week (its first result).
        dataset_declaration: The dataset declaration.
        selection_periods: Periods before the gate period that select (early stopping,
            tuning's objective).
        gate_periods: The newest periods, which only the gate judges on.

    Yields:
        The ``prepare_dataset`` task: ``training_dataset`` (without the gate period) for
        tuning and training, ``dataset`` for evaluation.
    """
    with dsl.If(gate.outputs["passed"] == True, name="data-ok"):  # noqa: E712
        yield prepare_dataset(
            backend=backend,
            data_uri=data_uri,
            dataset_declaration=dataset_declaration,
            selection_periods=selection_periods,
            gate_periods=gate_periods,
            as_of=week,
            window_digest=gate.outputs["window_digest"],
        ).set_display_name("prepare-dataset")
    with dsl.Else(name="data-breach") as breach:
        stop_run(reason=gate.outputs["verdict"]).set_display_name("stop-before-training")
    name_branches(breach, "data-ok-or-breach")


@contextmanager
def gated_week(
    *,
    backend: Any,
    data_uri: Any,
    dataset_declaration: Any,
    as_of: Any,
    time_zone: Any,
    thresholds: Any,
    accept: Any,
    selection_periods: Any,
    gate_periods: Any,
    project: Any = "",
    location: Any = "",
) -> Iterator[tuple[Any, Any]]:
    """The start of both templates: :func:`week_and_data_gate`, then :func:`gated_dataset`'s
    ``data-ok`` branch, which the ``with`` block adds its tasks to.

    Args:
        backend: The pipeline's ``backend`` parameter.
        data_uri: Where the declared table is.
        dataset_declaration: The dataset declaration.
        as_of: ``YYYY-MM-DD`` to replay a past week; empty: the run's week.
        time_zone: The data's time zone, which says when a week starts.
        thresholds: Gate thresholds overridden by name.
        accept: Gate checks a person accepts for this run.
        selection_periods: Periods before the gate period that select.
        gate_periods: The newest periods, which only the gate judges on.
        project: The pipeline's project (a BigQuery source is queried there).
        location: The pipeline's region (a BigQuery source is queried there).

    Yields:
        The week (``data_window``'s ``as_of`` output) and the ``prepare_dataset`` task.
    """
    week, gate, window_data = week_and_data_gate(
        backend=backend,
        data_uri=data_uri,
        dataset_declaration=dataset_declaration,
        as_of=as_of,
        time_zone=time_zone,
        thresholds=thresholds,
        accept=accept,
        project=project,
        location=location,
    )
    with gated_dataset(
        backend=backend,
        gate=gate,
        data_uri=window_data,
        week=week,
        dataset_declaration=dataset_declaration,
        selection_periods=selection_periods,
        gate_periods=gate_periods,
    ) as data:
        yield week, data

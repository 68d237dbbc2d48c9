"""What one pipeline run costs on Vertex: the training jobs (and tuning trials) it launches.

Built from the compiled pipeline's tasks and the run's arguments with the same code the
components use, so an estimate and a run can never disagree on the job shape, for any
pipeline. Orchestration steps and endpoint serving are not included, and every estimate says
so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vertex_retrain.cli.week_costs import WeekKinds, estimate_week_kinds, is_refusal_retrain
from vertex_retrain.specs import PipelineCostEstimate, estimate_job_cost, estimate_pipeline_cost
from vertex_retrain.specs.defaults import TRAINING
from vertex_retrain.specs.prices import load_prices
from vertex_retrain.specs.problems import JobSpecError, errors_of

NOT_INCLUDED = (
    "not included: the pipeline's own lightweight steps (a few minutes of a small VM each) "
    "and the endpoint's serving nodes (billed per node-hour while deployed)"
)


def training_hours(arguments: Mapping[str, Any], override: float | None = None) -> float:
    """Expected hours of one training job: ``override``, else the run's, else the library's.

    Args:
        arguments: The run's parameters (compiled defaults merged with overrides); a pipeline
            that reports cost declares ``expected_training_hours``.
        override: An explicit figure (``vertex-retrain estimate --training-hours``).

    Returns:
        The hours, on one GPU.
    """
    if override is not None:
        return override
    declared = arguments.get("expected_training_hours")
    return TRAINING.expected_training_hours if declared is None else float(declared)


# A region name such as us-central1 (not a placeholder such as {{$.pipeline_google_cloud_...}}).
_REGION = re.compile(r"[a-z]+-[a-z]+[0-9]+")


def price_location(arguments: Mapping[str, Any], override: str | None = None) -> tuple[str, str]:
    """The region whose prices an estimate uses, and where that choice comes from.

    Args:
        arguments: The run's parameters; a pipeline that names its region declares a
            ``location`` default (or the run overrides it with ``--param location=...``).
        override: An explicit region (``vertex-retrain estimate --location``).

    Returns:
        ``(region, origin)``: ``--location``, else the run's ``location`` when it names a
        region, else the price book's default (us-central1).
    """
    if override:
        return override, "--location"
    declared = arguments.get("location")
    if isinstance(declared, str) and _REGION.fullmatch(declared):
        return declared, "the pipeline's location parameter"
    return load_prices().default_location, "the default: the pipeline names no region"


def warehouse_budget(arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    """A BigQuery source's window query, priced at its declared budget; None without one.

    The extraction refuses a query that would scan more than ``source.max_bytes``, so the
    budget is the most a run is billed for its data (BigQuery's dry run gives the figure of a
    run; the run summary its bill).

    Args:
        arguments: The run's parameters; ``dataset_declaration`` holds the source.
    """
    from vertex_retrain.contracts.dataset import (
        DatasetDeclarationError,
        parse_dataset_declaration,
    )
    from vertex_retrain.specs.bigquery_cost import BIGQUERY_PRICE, bigquery_query_cost

    declared = arguments.get("dataset_declaration")
    if not isinstance(declared, Mapping) or not declared:
        return None
    try:
        source = parse_dataset_declaration(declared).source
    except DatasetDeclarationError:
        return None  # the run's preflight says what is wrong with it
    if source.kind != "bigquery":
        return None
    budget = source.max_bytes
    return {
        "table": source.table,
        "max_bytes": budget,
        "at_most_usd": bigquery_query_cost(budget) if budget else None,
        "price": BIGQUERY_PRICE,
    }


PRICED_FUNCTIONS = ("hp_tune", "train_custom_job")
"""The job components whose jobs an estimate prices: tuning and training (the evaluation job is
a short CPU job on demand)."""


def _priced_jobs(spec: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[Any]:
    from vertex_retrain.cli.job_tasks import job_tasks

    return [
        job
        for job in job_tasks(spec, arguments)
        if job.function in PRICED_FUNCTIONS and job.runs is not False
    ]


def estimate_kinds(
    spec: Mapping[str, Any],
    arguments: Mapping[str, Any],
    *,
    hours: float,
    location: str,
    currency: str = "",
) -> WeekKinds | None:
    """The warm-started week, the full retrain's, the refused warm start's and a typical
    month (:mod:`vertex_retrain.cli.week_costs`); None for a pipeline that plans no kind.
    The month follows the trainer's warm-start declaration, read as the run reads it
    (:mod:`vertex_retrain.cli.trainer_declaration`).

    Args:
        spec: The compiled pipeline.
        arguments: The run's parameters.
        hours: Hours of one full training job.
        location: Region whose prices apply.
        currency: The prices' currency.
    """
    from vertex_retrain.cli.trainer_declaration import trainer_warm_start

    if "full_retrain_every_weeks" not in arguments:
        return None  # no kinds of week to price, no declaration to read
    jobs = [job for job in _priced_jobs(spec, arguments) if job.payload is not None]
    return estimate_week_kinds(
        [job.payload for job in jobs if not is_refusal_retrain(job.payload)],
        [job.payload for job in jobs if is_refusal_retrain(job.payload)],
        arguments,
        full_hours=hours,
        location=location,
        currency=currency,
        trainer=trainer_warm_start(spec, arguments),
    )


def estimate_run(
    spec: Mapping[str, Any],
    arguments: Mapping[str, Any],
    *,
    hours: float | None = None,
    location: str | None = None,
) -> PipelineCostEstimate:
    """Estimates one run on Vertex: on-demand against Spot, assumptions stated.

    Every training and tuning job a task of the pipeline would submit with ``arguments`` is
    priced, built as its component builds it (:mod:`vertex_retrain.cli.job_tasks`); a task
    that does not run with these arguments (``dsl.If(tune == True)`` with ``tune=false``) is
    left out, and an input only the run knows takes the component's default.

    Args:
        spec: The compiled pipeline.
        arguments: The run's parameters (defaults merged with overrides).
        hours: Expected run time of one training job on one GPU; default
            :func:`training_hours` of ``arguments``.
        location: Region whose prices apply; default :func:`price_location` of
            ``arguments``. Every price is labelled quoted, derived or unknown; an unknown
            one leaves its total unknown.

    Returns:
        The estimate; ``describe()`` prints the breakdown and assumptions.

    Raises:
        JobSpecError: A job the arguments describe is impossible (each problem names its
            task).
    """
    from vertex_retrain.cli.job_tasks import problems_by_task

    hours = training_hours(arguments, hours)
    location = location or price_location(arguments)[0]
    # The full retrain after a refused warm start is priced apart (estimate_kinds).
    jobs = [job for job in _priced_jobs(spec, arguments) if not is_refusal_retrain(job.payload)]
    problems = problems_by_task([(job.name, problem) for job in jobs for problem in job.problems])
    if errors_of(problems):
        raise JobSpecError(problems)
    steps = [
        estimate_job_cost(
            job.payload,
            hours,
            label=f"{job.name} (all trials)" if job.tuning else job.name,
            location=location,
        )
        for job in jobs
        if job.payload is not None
    ]
    name = spec.get("pipelineInfo", {}).get("name", "pipeline")
    return estimate_pipeline_cost(steps, label=f"{name} run")

"""What one pipeline run costs on Vertex: the training job (and tuning trials) it launches.

Built from the run's arguments with the same code the components use, so an estimate and a
run can never disagree on the job shape. Orchestration steps and endpoint serving are not
included, and every estimate says so.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs import PipelineCostEstimate, estimate_job_cost, estimate_pipeline_cost
from vertex_retrain.specs.defaults import TRAINING, TUNING
from vertex_retrain.specs.prices import load_prices
from vertex_retrain.steps.training_cost import estimate_training_cost, request_for_shape
from vertex_retrain.steps.tune import TuningRequest, tuning_job_payload

NOT_INCLUDED = (
    "not included: the pipeline's own lightweight steps (a few minutes of a small VM each) "
    "and the endpoint's serving nodes (billed per node-hour while deployed)"
)


def training_hours(arguments: Mapping[str, Any], override: float | None = None) -> float:
    """Expected hours of one training job: ``override``, else the run's, else the library's.

    Args:
        arguments: The run's parameters (compiled defaults merged with overrides); a pipeline
            that reports cost declares ``expected_training_hours``.
        override: An explicit figure (``compile.py estimate --training-hours``).

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
        override: An explicit region (``compile.py estimate --location``).

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


def estimate_run(
    pipeline_name: str,
    arguments: Mapping[str, Any],
    *,
    hours: float | None = None,
    location: str | None = None,
) -> PipelineCostEstimate:
    """Estimates one run on Vertex: on-demand against Spot, assumptions stated.

    The job shape comes from ``arguments``, which callers read from the compiled pipeline's
    defaults with the run's overrides on top; what they lack takes the request types'
    defaults (:data:`vertex_retrain.specs.defaults.TRAINING`), which are also the defaults of
    the components that run the job.

    Args:
        pipeline_name: The pipeline (for the label).
        arguments: The run's parameters (defaults merged with overrides).
        hours: Expected run time of one training job on one GPU; default
            :func:`training_hours` of ``arguments``.
        location: Region whose prices apply; default :func:`price_location` of
            ``arguments``. Every price is labelled quoted, derived or unknown; an unknown
            one leaves its total unknown.

    Returns:
        The estimate; ``describe()`` prints the breakdown and assumptions.

    Raises:
        JobSpecError: The job the arguments describe is impossible.
    """
    hours = training_hours(arguments, hours)
    location = location or price_location(arguments)[0]
    request = request_for_shape(arguments)
    steps = []
    if bool(arguments.get("tune", False)):
        tuning = TuningRequest(
            # Trials run on the primary pool alone, as weekly-retraining's hp_tune does.
            trial=dataclasses.replace(request, worker_count=0),
            parameter_specs=_tuning_parameters(),
            metric_id="objective",
            max_trial_count=int(arguments.get("max_trial_count", TUNING.max_trial_count)),
            parallel_trial_count=int(
                arguments.get("parallel_trial_count", TUNING.parallel_trial_count)
            ),
        )
        steps.append(
            estimate_job_cost(
                tuning_job_payload(tuning),
                hours,
                label="tune (all trials)",
                location=location,
            )
        )
    steps.append(estimate_training_cost(request, hours, location=location))
    return estimate_pipeline_cost(steps, label=f"{pipeline_name} run")


def _tuning_parameters() -> list[dict[str, Any]]:
    from vertex_retrain.pipelines.weekly import TUNING_PARAMETERS

    return list(TUNING_PARAMETERS)

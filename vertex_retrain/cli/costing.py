"""What one pipeline run costs on Vertex: the training job (and tuning trials) it launches.

Built from the run's arguments with the same code the components use, so an estimate and a
run can never disagree on the job shape. Orchestration steps and endpoint serving are not
included, and every estimate says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from vertex_retrain.pipelines import defaults
from vertex_retrain.specs import PipelineCostEstimate, estimate_job_cost, estimate_pipeline_cost
from vertex_retrain.steps.training_cost import (
    SPOT_PRICE_FRACTION,
    estimate_training_cost,
    request_for_shape,
)
from vertex_retrain.steps.tune import TuningRequest, tuning_job_payload

NOT_INCLUDED = (
    "not included: the pipeline's own lightweight steps (a few minutes of a small VM each) "
    "and the endpoint's serving nodes (billed per node-hour while deployed)"
)


def estimate_run(
    pipeline_name: str,
    arguments: Mapping[str, Any],
    *,
    training_hours: float = defaults.EXPECTED_TRAINING_HOURS,
    spot_price_fraction: float | None = SPOT_PRICE_FRACTION,
) -> PipelineCostEstimate:
    """Estimates one run on Vertex: on-demand against Spot, assumptions stated.

    Args:
        pipeline_name: The pipeline (for the label).
        arguments: The run's parameters (defaults merged with overrides).
        training_hours: Expected run time of one training job on one GPU.
        spot_price_fraction: Spot price as a share of on-demand; None uses the catalog's
            Spot prices (unknown ones make the Spot total unknown).

    Returns:
        The estimate; ``describe()`` prints the breakdown and assumptions.
    """
    request = request_for_shape(arguments)
    steps = []
    if bool(arguments.get("tune", False)):
        tuning = TuningRequest(
            # Trials run on the primary pool alone, as weekly-retraining's hp_tune does.
            trial=dataclasses.replace(request, worker_count=0),
            parameter_specs=_tuning_parameters(),
            metric_id="ndcg_at_10",
            max_trial_count=int(arguments.get("max_trial_count", 8)),
            parallel_trial_count=int(arguments.get("parallel_trial_count", 2)),
        )
        steps.append(
            estimate_job_cost(
                tuning_job_payload(tuning),
                training_hours,
                label="tune (all trials)",
                spot_price_fraction=spot_price_fraction,
            )
        )
    steps.append(
        estimate_training_cost(request, training_hours, spot_price_fraction=spot_price_fraction)
    )
    return estimate_pipeline_cost(steps, label=f"{pipeline_name} run")


def _tuning_parameters() -> list[dict[str, Any]]:
    from vertex_retrain.pipelines.weekly_retraining import TUNING_PARAMETERS

    return list(TUNING_PARAMETERS)

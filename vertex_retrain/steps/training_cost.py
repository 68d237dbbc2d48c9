"""The cost of a training job on Vertex, with the assumptions that go with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs import CostEstimate, estimate_job_cost
from vertex_retrain.specs.prices import PriceBook
from vertex_retrain.steps.job_request import TrainingRequest, custom_job_payload

_SHAPE_FIELDS: dict[str, type] = {
    "executor_image_uri": str,
    "machine_type": str,
    "accelerator_type": str,
    "accelerator_count": int,
    "worker_count": int,
    "distribution": str,
    "scheduling_strategy": str,
    "timeout_seconds": int,
}
"""The request fields that shape a job's cost, with their types (pipeline parameter names)."""


STAND_IN_IMAGE = f"us-docker.pkg.dev/cost-estimate/images/cuda-training@sha256:{'0' * 64}"
"""The container a cost estimate's job runs: the code does not change the price, and the
templates' jobs run a custom container (whose GPU base is CUDA's, hence the name)."""


def request_for_shape(shape: Mapping[str, Any]) -> TrainingRequest:
    """A training job with the machine shape named in ``shape`` (pipeline parameter names).

    Only the hardware and strategy matter for cost; the code (a stand-in container, as the
    templates run by default) and paths are stand-ins. Missing (or None) keys take
    :class:`TrainingRequest`'s defaults, which are
    :data:`vertex_retrain.specs.defaults.TRAINING`, as the components' are.
    """
    given = {
        name: kind(shape[name])
        for name, kind in _SHAPE_FIELDS.items()
        if shape.get(name) is not None
    }
    return TrainingRequest(
        backend="vertex",
        display_name="cost-estimate",
        base_output_directory="gs://cost-estimate/out",
        python_module="estimate.task",
        package_uris=["gs://cost-estimate/estimate-1.0.0-py3-none-any.whl"],
        image_uri=STAND_IN_IMAGE,
        **given,
    )


def estimate_training_cost(
    request: TrainingRequest,
    hours: float,
    *,
    label: str = "train",
    location: str | None = None,
    prices: PriceBook | None = None,
) -> CostEstimate:
    """Estimates one training job of ``hours`` on one GPU (multi-GPU jobs scale from that).

    ``location`` is the region whose prices apply (default: the price book's); each price
    is labelled quoted, derived or unknown (:mod:`vertex_retrain.specs.prices`); ``prices``
    is the book (default: the packaged one, read now).

    Raises:
        JobSpecError: The job is impossible.
    """
    return estimate_job_cost(
        custom_job_payload(request), hours, label=label, location=location, prices=prices
    )

"""The cost of a training job on Vertex, with the assumptions that go with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs import CostEstimate, estimate_job_cost
from vertex_retrain.steps.job_request import TrainingRequest, custom_job_payload

SPOT_PRICE_FRACTION = 0.6
"""Spot priced as this share of on-demand: the source article's teaching figure, used because
the catalog records no Spot list prices (real Spot discounts are often deeper)."""


_PREBUILT_PYTORCH_GPU = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"


def request_for_shape(shape: Mapping[str, Any]) -> TrainingRequest:
    """A training job with the machine shape named in ``shape`` (pipeline parameter names).

    Only the hardware and strategy matter for cost; the code and paths are stand-ins.
    Missing keys take the pipelines' defaults (one T4 on ``n1-standard-8``, Spot).
    """

    def get(name: str, fallback: Any) -> Any:
        value = shape.get(name)
        return fallback if value is None else value

    return TrainingRequest(
        backend="vertex",
        display_name="cost-estimate",
        base_output_directory="gs://cost-estimate/out",
        python_module="trainer.task",
        package_uris=["gs://cost-estimate/vertex_retrain_trainer-1.0.0-py3-none-any.whl"],
        executor_image_uri=str(get("executor_image_uri", _PREBUILT_PYTORCH_GPU)),
        machine_type=str(get("machine_type", "n1-standard-8")),
        accelerator_type=str(get("accelerator_type", "NVIDIA_TESLA_T4")),
        accelerator_count=int(get("accelerator_count", 1)),
        worker_count=int(get("worker_count", 0)),
        distribution="ddp",
        scheduling_strategy=str(get("scheduling_strategy", "SPOT")),
        timeout_seconds=int(get("timeout_seconds", 4 * 3600)),
    )


def estimate_training_cost(
    request: TrainingRequest,
    hours: float,
    *,
    label: str = "train",
    spot_price_fraction: float | None = SPOT_PRICE_FRACTION,
) -> CostEstimate:
    """Estimates one training job of ``hours`` on one GPU (multi-GPU jobs scale from that).

    Raises:
        JobSpecError: The job is impossible.
    """
    return estimate_job_cost(
        custom_job_payload(request), hours, label=label, spot_price_fraction=spot_price_fraction
    )

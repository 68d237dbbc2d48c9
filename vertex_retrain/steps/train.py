"""train_custom_job's logic: validate, run on the chosen backend, report model and goodput."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.backends.base import Backend, JobFailedError
from vertex_retrain.rules.spot_fallback import FallbackPolicy
from vertex_retrain.steps.backend import resolve_backend
from vertex_retrain.steps.job_request import TrainingRequest, custom_job_payload
from vertex_retrain.steps.spot_fallback import FallbackFailedError, fall_back_to_on_demand

__all__ = ["TrainingJobFailedError", "TrainingRequest", "TrainingResult", "train"]


@dataclass(frozen=True)
class TrainingResult:
    """What the component outputs."""

    state: str
    model_uri: str
    goodput: float | None
    restarts: int | None
    metrics: dict[str, float] = field(default_factory=dict)
    model_metadata: dict[str, Any] = field(default_factory=dict)


class TrainingJobFailedError(RuntimeError):
    """The training job ended without success; the message says which replica and why."""


def train(
    request: TrainingRequest,
    *,
    gcp_resources_path: str,
    request_key: str = "",
    backend: Backend | None = None,
    fallback: FallbackPolicy | None = None,
) -> TrainingResult:
    """Runs the CustomJob described by ``request`` and waits for it.

    Args:
        request: The job, as the component's inputs describe it.
        gcp_resources_path: Where the job resource is recorded (GCPC's format).
        request_key: Makes a re-run of the same pipeline task adopt the job it started
            before instead of starting another (``rules.idempotency.task_key``).
        backend: The backend to run on (a test's, with fakes); by default the one
            ``request.backend`` names.
        fallback: Whether a Spot job that lost its capacity runs again on demand, resuming
            from its checkpoints (:mod:`vertex_retrain.steps.spot_fallback`); off by default.

    Returns:
        The final state, model directory, goodput and restarts (None where the job records
        none: never a guess; after a fallback: the
        on-demand job's, with ``spot_fallback``, ``spot_seconds`` and ``on_demand_seconds``
        in the metrics).

    Raises:
        ValueError: An unknown backend; nothing was submitted.
        JobSpecError: The job is impossible; nothing was submitted.
        TrainingJobFailedError: The job failed or was cancelled.
    """
    chosen = resolve_backend(
        request.backend, project=request.project, location=request.location, backend=backend
    )
    payload = custom_job_payload(request)
    started = time.monotonic()
    extra: dict[str, float] = {}
    try:
        run = chosen.run_custom_job(
            payload,
            gcp_resources_path=gcp_resources_path,
            request_key=request_key,
            preemption_after_s=request.local_preemption_after_seconds,
        )
    except JobFailedError as failure:
        try:
            rescued = fall_back_to_on_demand(
                chosen,
                request,
                failure,
                policy=fallback or FallbackPolicy(),
                spot_seconds=time.monotonic() - started,
                gcp_resources_path=gcp_resources_path,
                request_key=request_key,
            )
        except FallbackFailedError as both:
            raise TrainingJobFailedError(str(both)) from both
        if rescued is None:
            raise TrainingJobFailedError(str(failure)) from failure
        run, extra = rescued.run, rescued.metrics
    return TrainingResult(
        state=run.state,
        model_uri=run.model_uri,
        goodput=run.goodput,
        restarts=run.restarts,
        metrics={**run.metrics, **extra},
        model_metadata={"job": run.job_name, "backend": chosen.name},
    )

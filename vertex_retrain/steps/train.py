"""train_custom_job's logic: validate, run on the chosen backend, report model and goodput."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.steps.backend import check_backend
from vertex_retrain.steps.gcp_resources import write_local_gcp_resources
from vertex_retrain.steps.job_request import TrainingRequest, custom_job_payload

__all__ = ["TrainingRequest", "TrainingResult", "train"]


@dataclass(frozen=True)
class TrainingResult:
    """What the component outputs."""

    state: str
    model_uri: str
    goodput: float
    restarts: int
    metrics: dict[str, float] = field(default_factory=dict)
    model_metadata: dict[str, Any] = field(default_factory=dict)


class TrainingJobFailedError(RuntimeError):
    """The training job ended without success; the message says which replica and why."""


def train(
    request: TrainingRequest, *, gcp_resources_path: str, request_key: str = ""
) -> TrainingResult:
    """Runs the CustomJob described by ``request`` and waits for it.

    Args:
        request: The job, as the component's inputs describe it.
        gcp_resources_path: Where the job resource is recorded (GCPC's format).
        request_key: Makes a re-run of the same pipeline task adopt the job it started
            before instead of starting another (Vertex backend).

    Returns:
        The final state, model directory, goodput and restarts.

    Raises:
        JobSpecError: The job is impossible; nothing was submitted.
        TrainingJobFailedError: The job failed or was cancelled.
    """
    payload = custom_job_payload(request)
    if check_backend(request.backend) == "local":
        return _train_locally(request, payload, gcp_resources_path)
    return _train_on_vertex(request, payload, gcp_resources_path, request_key)


def _train_locally(
    request: TrainingRequest, payload: dict[str, Any], gcp_resources_path: str
) -> TrainingResult:
    from vertex_retrain.backends.local.executor import run_custom_job
    from vertex_retrain.backends.local.spot import PreemptionSchedule

    preemption = None
    if request.local_preemption_after_seconds > 0:
        preemption = PreemptionSchedule(after_seconds=request.local_preemption_after_seconds)
    result = run_custom_job(payload, preemption=preemption)
    write_local_gcp_resources(gcp_resources_path, "CustomJob", result.job_dir)
    if not result.succeeded:
        raise TrainingJobFailedError(_local_failure_message(result))
    goodput = result.goodput.goodput if result.goodput.goodput is not None else 1.0
    metrics = {
        "goodput": goodput,
        "restarts": float(result.restarts),
        "wall_seconds": result.wall_seconds,
        "time_lost_seconds": result.goodput.time_lost_seconds,
    }
    return TrainingResult(
        state=result.state,
        model_uri=result.model_dir or "",
        goodput=goodput,
        restarts=result.restarts,
        metrics=metrics,
        model_metadata={"job": result.job_id, "backend": "local"},
    )


def _local_failure_message(result: Any) -> str:
    lines = [f"local CustomJob {result.job_id} ended in {result.state}: {result.error}"]
    if result.failure is not None:
        failure = result.failure
        lines.append(f"failing replica: {failure.replica}, exit code {failure.exit_code}")
        if failure.advice:
            lines.append(f"advice: {failure.advice}")
        if failure.log_tail:
            lines.append("last log lines:\n" + failure.log_tail)
    return "\n".join(lines)


def _train_on_vertex(
    request: TrainingRequest,
    payload: dict[str, Any],
    gcp_resources_path: str,
    request_key: str,
) -> TrainingResult:
    from vertex_retrain.backends.vertex.custom_job import (
        VertexJobFailedError,
        custom_job_model_dir,
        run_custom_job_on_vertex,
    )

    try:
        job = run_custom_job_on_vertex(
            payload,
            project=request.project,
            location=request.location,
            gcp_resources_path=gcp_resources_path,
            request_key=request_key or None,
        )
    except VertexJobFailedError as failure:
        raise TrainingJobFailedError(str(failure)) from failure
    wall = _wall_seconds(job)
    return TrainingResult(
        state=str(job.get("state", "JOB_STATE_SUCCEEDED")),
        model_uri=custom_job_model_dir(job),
        # Vertex reports no step-level progress, so goodput and restarts are known only
        # locally; the outputs say 1.0 and 0 and the metrics carry the wall time alone.
        goodput=1.0,
        restarts=0,
        metrics={"wall_seconds": wall} if wall is not None else {},
        model_metadata={"job": str(job.get("name", "")), "backend": "vertex"},
    )


def _wall_seconds(job: dict[str, Any]) -> float | None:
    """Run time from the job's ``startTime`` and ``endTime`` (RFC 3339), when both are set."""
    import datetime as dt

    try:
        start = dt.datetime.fromisoformat(str(job["startTime"]).replace("Z", "+00:00"))
        end = dt.datetime.fromisoformat(str(job["endTime"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()

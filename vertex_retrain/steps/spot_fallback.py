"""Running a training job again on demand after its Spot attempts lost their capacity.

The rule (:mod:`vertex_retrain.rules.spot_fallback`) decides; this runs the on-demand job:
the same request with strategy STANDARD and the same output directory, so the trainer finds
the Spot attempts' checkpoints in ``AIP_CHECKPOINT_DIR`` and resumes. The on-demand job, or
study (:mod:`vertex_retrain.steps.tune_fallback`), starts through :func:`run_on_demand`: it is
recorded in its own ``gcp_resources`` file (``<path>.on-demand``), so a restarted task polls
it instead of the failed Spot one, under its own request key, and is copied to
``gcp_resources`` once it succeeds.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from vertex_retrain.backends.base import Backend, CustomJobRun, JobFailedError
from vertex_retrain.rules.spot_fallback import FallbackPolicy, decide_fallback
from vertex_retrain.steps.job_request import TrainingRequest, custom_job_payload

ON_DEMAND_SUFFIX = ".on-demand"
Finished = TypeVar("Finished")


@dataclass(frozen=True)
class FallbackRun:
    """The on-demand job that finished what the Spot attempts started.

    Attributes:
        run: The on-demand job.
        reason: Why the step fell back.
        metrics: ``spot_fallback`` (1.0), ``spot_seconds`` (the Spot attempts, from the start
            of the step to their failure) and ``on_demand_seconds``.
    """

    run: CustomJobRun
    reason: str
    metrics: dict[str, float] = field(default_factory=dict)


class FallbackFailedError(RuntimeError):
    """The on-demand job failed too; the message gives both failures."""


def run_on_demand(
    start: Callable[[str, str], Finished],
    failure: JobFailedError,
    *,
    what: str,
    gcp_resources_path: str,
    request_key: str,
) -> Finished:
    """Runs the on-demand job or study that continues a Spot one, as every fallback does.

    Args:
        start: Runs it given its ``gcp_resources`` path and request key; returns its result.
        failure: How the Spot one failed, for the message when this one fails too.
        what: ``job`` or ``study``, for that message.
        gcp_resources_path: The task's ``gcp_resources`` output.
        request_key: The task's idempotency key (``""``: none).

    Returns:
        What ``start`` returned.

    Raises:
        FallbackFailedError: The on-demand one failed as well.
    """
    on_demand_resources = gcp_resources_path + ON_DEMAND_SUFFIX
    try:
        finished = start(on_demand_resources, f"{request_key}-on-demand" if request_key else "")
    except JobFailedError as second:
        raise FallbackFailedError(
            f"the Spot {what} lost its capacity ({failure}) and the on-demand {what} that "
            f"continued it failed too: {second}"
        ) from second
    if Path(on_demand_resources).is_file():  # the task's output names the one that finished
        shutil.copyfile(on_demand_resources, gcp_resources_path)
    return finished


def on_demand_request(request: TrainingRequest, timeout_seconds: int) -> TrainingRequest:
    """The Spot request as an on-demand one: same job and output directory, strategy STANDARD.

    The Spot rehearsal's preemptions stop (on-demand VMs are not preempted).
    """
    return replace(
        request,
        scheduling_strategy="STANDARD",
        timeout_seconds=timeout_seconds,
        local_preemption_after_seconds=0.0,
    )


def fall_back_to_on_demand(
    backend: Backend,
    request: TrainingRequest,
    failure: JobFailedError,
    *,
    policy: FallbackPolicy,
    spot_seconds: float,
    gcp_resources_path: str,
    request_key: str = "",
    clock: Callable[[], float] = time.monotonic,
) -> FallbackRun | None:
    """Runs the job on demand if the policy says so; None when it does not.

    Args:
        backend: The backend the Spot job ran on.
        request: The Spot job's request.
        failure: How the Spot job failed.
        policy: The fallback policy.
        spot_seconds: Seconds from the start of the step to the Spot job's failure.
        gcp_resources_path: The task's ``gcp_resources`` output.
        request_key: The task's idempotency key; the on-demand job gets its own.
        clock: Monotonic seconds (tests pass a fake).

    Raises:
        FallbackFailedError: The on-demand job failed as well.
    """
    decision = decide_fallback(
        strategy=request.scheduling_strategy,
        failure=failure.failure,
        policy=policy,
        elapsed_seconds=spot_seconds,
        job_timeout_seconds=request.timeout_seconds,
    )
    if not decision.fall_back:
        return None
    print(f"[executor] {decision.reason} (timeout {decision.timeout_seconds} s)", flush=True)
    started = clock()
    payload = custom_job_payload(on_demand_request(request, decision.timeout_seconds))
    run = run_on_demand(
        lambda path, key: backend.run_custom_job(payload, gcp_resources_path=path, request_key=key),
        failure,
        what="job",
        gcp_resources_path=gcp_resources_path,
        request_key=request_key,
    )
    on_demand_seconds = run.metrics.get("wall_seconds", clock() - started)
    return FallbackRun(
        run=run,
        reason=decision.reason,
        metrics={
            "spot_fallback": 1.0,
            "spot_seconds": float(spot_seconds),
            "on_demand_seconds": float(on_demand_seconds),
        },
    )

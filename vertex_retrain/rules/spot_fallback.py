"""Spot fallback: when a Spot job that lost its capacity runs again on on-demand VMs.

Vertex restarts a preempted Spot job at most six times; a seventh preemption, or no Spot
capacity at all (``STOCKOUT``), fails the job. With the fallback on, the week does not end
there: the same job runs again with ``scheduling.strategy`` STANDARD, in the same output
directory, so the trainer resumes from the checkpoints the Spot attempts left. It must finish
within a deadline counted from the start of the training step; the on-demand job's timeout is
cut to what is left of it.

Whether a failure lost capacity is :func:`vertex_retrain.rules.job_failure.capacity_verdict`:
the job's final state and structured error first, then known messages with their sources; an
unknown failure never falls back. Everything here is pure: the caller measures the time and
runs the jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vertex_retrain.rules.job_failure import JobFailure, capacity_verdict

MAX_SPOT_RESTARTS = 6
"""Vertex restarts a preempted Spot job at most this many times."""

MIN_FALLBACK_SECONDS = 1
"""An on-demand job given less than this is not started: it could not even begin."""


@dataclass(frozen=True)
class FallbackPolicy:
    """Whether a Spot job that lost its capacity runs again on demand, and by when.

    Attributes:
        enabled: Fall back at all.
        deadline_seconds: Seconds from the start of the training step by which the on-demand
            job must end; 0: no deadline beyond the job's own timeout.
    """

    enabled: bool = False
    deadline_seconds: float = 0.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.deadline_seconds) or self.deadline_seconds < 0:
            raise ValueError(
                "spot_fallback_deadline_seconds must be a finite number of seconds, 0 or more "
                f"(0: only the job's timeout applies); got {self.deadline_seconds!r}"
            )


@dataclass(frozen=True)
class FallbackDecision:
    """What to do after a failed job.

    Attributes:
        fall_back: Run the job again with strategy STANDARD.
        reason: Why (or why not), in one sentence.
        timeout_seconds: The on-demand job's timeout (only meaningful when ``fall_back``).
    """

    fall_back: bool
    reason: str
    timeout_seconds: int = 0


def decide_fallback(
    *,
    strategy: str,
    failure: JobFailure,
    policy: FallbackPolicy,
    elapsed_seconds: float,
    job_timeout_seconds: int,
) -> FallbackDecision:
    """Decides whether a failed job runs again on demand.

    Args:
        strategy: The failed job's ``scheduling.strategy``.
        failure: What the failed job reported (state, structured error, message).
        policy: The fallback policy.
        elapsed_seconds: Seconds since the training step started (the Spot attempts).
        job_timeout_seconds: The job's own timeout (0: none).

    Returns:
        The decision; the on-demand job's timeout is the job's own, cut to what is left of
        the deadline.
    """
    if not policy.enabled:
        return FallbackDecision(False, "spot fallback is off")
    if strategy != "SPOT":
        return FallbackDecision(False, f"the job ran with strategy {strategy}, not SPOT")
    verdict = capacity_verdict(failure)
    if not verdict.lost_capacity:
        return FallbackDecision(
            False, f"the job failed for another reason than lost Spot capacity: {verdict.evidence}"
        )
    timeout = int(job_timeout_seconds) if job_timeout_seconds > 0 else 0
    if policy.deadline_seconds > 0:
        left = math.floor(policy.deadline_seconds - elapsed_seconds)
        if left < MIN_FALLBACK_SECONDS:
            return FallbackDecision(
                False,
                f"the Spot attempts took {elapsed_seconds:.0f} s of the "
                f"{policy.deadline_seconds:g} s deadline; no time is left for on-demand",
            )
        timeout = min(timeout, left) if timeout else left
    return FallbackDecision(
        True,
        f"Spot capacity was lost ({verdict.evidence}; source: {verdict.source}); running on "
        "demand (STANDARD) from the Spot attempts' checkpoints",
        timeout,
    )

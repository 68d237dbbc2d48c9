"""Spot fallback: when a Spot job that lost its capacity runs again on on-demand VMs.

Vertex restarts a preempted Spot job at most six times; a seventh preemption, or no Spot
capacity at all (``STOCKOUT``), fails the job. With the fallback on, the week does not end
there: the same job runs again with ``scheduling.strategy`` STANDARD, in the same output
directory, so the trainer resumes from the checkpoints the Spot attempts left. It must finish
within a deadline counted from the start of the training step; the on-demand job's timeout is
cut to what is left of it.

Everything here is pure: the caller measures the time and runs the jobs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_SPOT_RESTARTS = 6
"""Vertex restarts a preempted Spot job at most this many times."""

MIN_FALLBACK_SECONDS = 1
"""An on-demand job given less than this is not started: it could not even begin."""

_CAPACITY_LOSS = re.compile(
    r"STOCKOUT|preempt|ZONE_RESOURCE_POOL_EXHAUSTED|resource pool exhausted|"
    r"(?:not|isn't) enough resources|resources are insufficient",
    re.IGNORECASE,
)
"""How a job failure says it lost (or never got) Spot capacity, on Vertex and locally."""


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


def lost_spot_capacity(failure_message: str) -> bool:
    """True when a job failure says Spot capacity was lost or unavailable (STOCKOUT...)."""
    return bool(_CAPACITY_LOSS.search(failure_message))


def decide_fallback(
    *,
    strategy: str,
    failure_message: str,
    policy: FallbackPolicy,
    elapsed_seconds: float,
    job_timeout_seconds: int,
) -> FallbackDecision:
    """Decides whether a failed job runs again on demand.

    Args:
        strategy: The failed job's ``scheduling.strategy``.
        failure_message: Why it failed, as the backend reported it.
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
    if not lost_spot_capacity(failure_message):
        return FallbackDecision(False, "the job failed for another reason than lost Spot capacity")
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
        "Spot capacity was lost (preempted past Vertex's "
        f"{MAX_SPOT_RESTARTS} restarts, or STOCKOUT); running on demand (STANDARD) from "
        "the Spot attempts' checkpoints",
        timeout,
    )

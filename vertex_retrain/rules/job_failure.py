"""Why a job failed, read structured first: was it lost (or never given) capacity?

A Spot job or study that lost its capacity runs again on demand
(:mod:`vertex_retrain.rules.spot_fallback`); anything else must not, because a second job
would fail the same way and cost as much again. The decision reads, in order:

1. the job's final state: only ``JOB_STATE_FAILED`` can be lost capacity (a cancelled,
   paused or expired job ended by decision or by its own limits);
2. its structured error (``google.rpc.Status``): the code, when it is one GCPC's launcher
   treats as the user's error, and the ``ErrorInfo`` reasons in its details (a quota is not
   capacity; a pool exhausted is);
3. known messages, each with the source that shows it: the ones that say the code or the
   quota failed are checked before the ones that say capacity ran out.

A failure none of them explains is unknown, and unknown is never treated as capacity. Pure:
the backends hand over what the job reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "CAPACITY_REASONS",
    "KNOWN_MESSAGES",
    "CapacityVerdict",
    "JobFailure",
    "KnownMessage",
    "capacity_verdict",
    "fails_again",
]

FAILED = "JOB_STATE_FAILED"

USER_ERROR_CODES = {
    3: "INVALID_ARGUMENT",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    9: "FAILED_PRECONDITION",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
}
"""google.rpc codes GCPC's launcher treats as the user's error (GCPC 2.22,
``container/v1/gcp_launcher/job_remote_runner.py``, ``_JOB_USER_ERROR_CODES``)."""

QUOTA_REASONS = frozenset({"RESOURCE_QUOTA_EXCEEDED", "RATE_LIMIT_EXCEEDED"})
"""``ErrorInfo`` reasons of a quota or rate limit (googleapis ``google/api/error_reason.proto``,
installed as ``google.api.error_reason_pb2``)."""

CAPACITY_REASONS = frozenset(
    {"STOCKOUT", "ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"}
)
"""``ErrorInfo`` reasons that say the zone had no capacity: Compute Engine's error codes
("Troubleshooting resource availability errors"), and ``STOCKOUT``, which the local Spot
rehearsal gives a job that exhausted Vertex's six restarts."""

_GCE_AVAILABILITY = (
    "Compute Engine, 'Troubleshooting resource availability errors' "
    "(cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability)"
)


@dataclass(frozen=True)
class KnownMessage:
    """A message seen on failed jobs, what it means, and where it was seen.

    Attributes:
        pattern: A regular expression, matched case-insensitively.
        capacity: Whether it says capacity was lost or unavailable.
        source: Where the message is shown (a document, an issue, a module).
    """

    pattern: str
    capacity: bool
    source: str


KNOWN_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        r"quota metrics exceed quota limits|quota exceeded|exceeded quota",
        False,
        "Vertex's quota refusal, 'The following quota metrics exceed quota limits: "
        "aiplatform.googleapis.com/custom_model_training_...' "
        "(GoogleCloudPlatform/vertex-ai-samples#3479, stable-diffusion-on-gcp#12)",
    ),
    KnownMessage(
        r"replica \S+ exited with a non-zero status",
        False,
        "Vertex's report of a training container that exited with an error, 'The replica "
        "workerpool0-0 exited with a non-zero status of 1' (Vertex custom training logs)",
    ),
    KnownMessage(
        r"replicas low on memory",
        False,
        "Vertex's report of a replica out of host memory, 'Replicas low on memory: "
        "workerpool0' (Vertex custom training)",
    ),
    KnownMessage(
        r"does not have enough resources available to fulfill the request",
        True,
        "Compute Engine's ZONE_RESOURCE_POOL_EXHAUSTED message, \"The zone '...' does not "
        f'have enough resources available to fulfill the request" ({_GCE_AVAILABILITY})',
    ),
    KnownMessage(
        r"ZONE_RESOURCE_POOL_EXHAUSTED",
        True,
        f"Compute Engine's error code for a zone without capacity ({_GCE_AVAILABILITY})",
    ),
    KnownMessage(
        r"resources are insufficient in region",
        True,
        "Vertex custom training's 'Resources are insufficient in region: us-central1' "
        "(openreview/openreview-expertise#401)",
    ),
    KnownMessage(
        r"^STOCKOUT\b",
        True,
        "the local Spot rehearsal's failure after Vertex's six restarts "
        "(vertex_retrain.backends.local.jobs.spot.stockout_message)",
    ),
)
"""Known messages, the non-capacity ones first: a quota message that mentions resources
must not read as lost capacity."""


@dataclass(frozen=True)
class JobFailure:
    """What a failed job reported, as both backends hand it over.

    Attributes:
        state: The final ``JobState`` name (``JOB_STATE_FAILED``...).
        message: The error's message (and, for a study, its trials' messages, one a line).
        code: The ``google.rpc.Code`` of its error, or None when it has none.
        reasons: ``ErrorInfo`` reasons found in the error's details.
    """

    state: str
    message: str
    code: int | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class CapacityVerdict:
    """Whether a failure was lost capacity, and what says so.

    Attributes:
        lost_capacity: True only when the state, the structured error or a known message
            says so.
        evidence: What decided, in words.
        source: Where that evidence is documented ("" for an unknown failure).
    """

    lost_capacity: bool
    evidence: str
    source: str = ""


def capacity_verdict(failure: JobFailure) -> CapacityVerdict:
    """Reads ``failure`` as the module docstring says; an unknown failure is not capacity."""
    if failure.state and failure.state != FAILED:
        return CapacityVerdict(
            False,
            f"the job ended {failure.state}, which no loss of capacity causes",
            "aiplatform_v1 JobState",
        )
    if failure.code in USER_ERROR_CODES:
        return CapacityVerdict(
            False,
            f"its error code is {USER_ERROR_CODES[failure.code]}, a user error",
            "GCPC 2.22 job_remote_runner._JOB_USER_ERROR_CODES",
        )
    for reason in failure.reasons:
        if reason in QUOTA_REASONS:
            return CapacityVerdict(
                False, f"its error reason is {reason}: a quota, not capacity", "error_reason.proto"
            )
        if reason in CAPACITY_REASONS:
            return CapacityVerdict(True, f"its error reason is {reason}", _GCE_AVAILABILITY)
    for known in KNOWN_MESSAGES:
        found = re.search(known.pattern, failure.message, re.IGNORECASE | re.MULTILINE)
        if found:
            return CapacityVerdict(
                known.capacity, f"its message says {found.group(0)!r}", known.source
            )
    return CapacityVerdict(
        False, "no structured error or known message says it lost capacity (unknown failure)"
    )


def fails_again(failure: JobFailure) -> bool:
    """Whether the same job, started again on the same inputs, would fail the same way.

    True only for a failure known not to be lost capacity: the user's error code, a quota, the
    training code exiting non-zero or a replica out of memory. Lost capacity may return, and an
    unknown failure may be Vertex's own, so both are worth another job.
    """
    verdict = capacity_verdict(failure)
    return not verdict.lost_capacity and bool(verdict.source)

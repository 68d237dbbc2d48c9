"""Spot rehearsal: simulated preemptions, Vertex's restart budget, and goodput.

On Vertex a preempted Spot job fails with a STOCKOUT error and is retried up to six times.
Compute Engine gives a Spot VM about 30 seconds between the preemption notice (SIGTERM to the
container) and the hard stop; locally the grace period defaults to 5 seconds so tests stay
fast. Goodput is read from the trainer's progress file, `$AIP_CHECKPOINT_DIR/progress.json`:
`{"step": <last completed step>, "checkpoint_step": <newest durable checkpoint>,
"total_steps": <int or null>}`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.rules.spot_fallback import MAX_SPOT_RESTARTS

PROGRESS_FILE = "progress.json"
LOCAL_GRACE_SECONDS = 5.0
VERTEX_GRACE_SECONDS = 30.0


@dataclass(frozen=True)
class PreemptionSchedule:
    """When the local executor preempts a SPOT job (opt-in rehearsal).

    Either a fixed delay (`after_seconds`, counted from the start of every attempt) or random
    preemptions at `rate_per_second` (exponential waiting times drawn from `seed`).

    Attributes:
        after_seconds: Preempt each attempt this many seconds after it starts.
        rate_per_second: Mean preemptions per second of running time, for random schedules.
        seed: Seed of the random schedule, so a rehearsal can be replayed.
        max_preemptions: Stop preempting after this many (None: no limit, so the job
            eventually exhausts Vertex's six restarts).
        grace_seconds: Time between SIGTERM and SIGKILL.
    """

    after_seconds: float | None = None
    rate_per_second: float | None = None
    seed: int = 0
    max_preemptions: int | None = None
    grace_seconds: float = LOCAL_GRACE_SECONDS

    def __post_init__(self) -> None:
        if (self.after_seconds is None) == (self.rate_per_second is None):
            raise ValueError(
                "PreemptionSchedule needs exactly one of after_seconds (fixed delay) or "
                f"rate_per_second (random); got after_seconds={self.after_seconds}, "
                f"rate_per_second={self.rate_per_second}"
            )
        for name in ("after_seconds", "rate_per_second"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"PreemptionSchedule.{name} must be positive, got {value}")
        if self.max_preemptions is not None and self.max_preemptions < 0:
            raise ValueError(f"max_preemptions must be >= 0, got {self.max_preemptions}")
        if self.grace_seconds < 0:
            raise ValueError(f"grace_seconds must be >= 0, got {self.grace_seconds}")

    def delays(self) -> list[float | None]:
        """Seconds into each attempt at which it is preempted; None means never.

        The list covers the first `MAX_SPOT_RESTARTS + 1` attempts, enough to exhaust Vertex's
        retry budget.
        """
        rng = random.Random(self.seed)
        out: list[float | None] = []
        for attempt in range(MAX_SPOT_RESTARTS + 1):
            if self.max_preemptions is not None and attempt >= self.max_preemptions:
                out.append(None)
            elif self.after_seconds is not None:
                out.append(self.after_seconds)
            else:
                assert self.rate_per_second is not None
                out.append(rng.expovariate(self.rate_per_second))
        return out


@dataclass(frozen=True)
class Progress:
    """A snapshot of the trainer's progress file."""

    step: int
    checkpoint_step: int
    total_steps: int | None


def read_progress(checkpoint_dir: Path | None) -> Progress | None:
    """Read `progress.json` from the checkpoint folder; None when absent or unreadable."""
    if checkpoint_dir is None:
        return None
    try:
        raw: Any = json.loads((checkpoint_dir / PROGRESS_FILE).read_text(encoding="utf-8"))
        total = raw.get("total_steps")
        return Progress(
            step=int(raw["step"]),
            checkpoint_step=int(raw.get("checkpoint_step", 0)),
            total_steps=None if total is None else int(total),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass
class GoodputStats:
    """Runtime goodput of a job across its attempts.

    Attributes:
        useful_steps: Steps of this job that count toward the final model: the last
            attempt's step, less the step the job's first attempt resumed from (a job that
            resumes another's checkpoints, such as an on-demand rerun after Spot, is not
            credited with the other job's steps).
        executed_steps: Steps run across all attempts, including ones redone after a restart.
        goodput: useful_steps / executed_steps; None when the trainer wrote no progress file.
        time_lost_seconds: Per preempted attempt, the share of its running time spent on steps
            no checkpoint saved, plus the time taken to stop it (SIGTERM to exit); the whole
            attempt when progress is unknown.
        restarts: Number of restarts after preemptions.
        attempts: Per attempt: outcome, wall seconds, start step, end step, checkpoint step.
    """

    useful_steps: int | None = None
    origin_step: int | None = None
    """The step the first attempt started from (0, or an earlier job's checkpoint)."""
    executed_steps: int = 0
    goodput: float | None = None
    time_lost_seconds: float = 0.0
    restarts: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def record_attempt(
        self,
        outcome: str,
        wall_seconds: float,
        before: Progress | None,
        after: Progress | None,
        stop_seconds: float = 0.0,
    ) -> None:
        """Account for one attempt, given the progress file before and after it.

        Args:
            outcome: "preempted", "succeeded", "failed", ...
            wall_seconds: The attempt's wall time, stopping included.
            before: Progress when the attempt started (its resume point).
            after: Progress when it ended.
            stop_seconds: Time spent stopping the replicas (part of `wall_seconds`).
        """
        start = before.checkpoint_step if before else 0
        if self.origin_step is None:
            self.origin_step = start
        executed = max(after.step - start, 0) if after else None
        saved = max(after.checkpoint_step - start, 0) if after else None
        self.attempts.append(
            {
                "outcome": outcome,
                "wall_seconds": round(wall_seconds, 3),
                "start_step": start,
                "end_step": after.step if after else None,
                "checkpoint_step": after.checkpoint_step if after else None,
            }
        )
        if executed is not None:
            self.executed_steps += executed
        if outcome == "preempted":
            running = max(wall_seconds - stop_seconds, 0.0)
            if executed and saved is not None:
                lost = running * (1 - min(saved, executed) / executed)
            else:
                lost = running
            self.time_lost_seconds += lost + stop_seconds
        if after is not None:
            self.useful_steps = max(after.step - self.origin_step, 0)
            if self.executed_steps:
                self.goodput = round(self.useful_steps / self.executed_steps, 4)

    def as_dict(self) -> dict[str, Any]:
        """Plain-JSON form, for the job's state file."""
        return {
            "useful_steps": self.useful_steps,
            "executed_steps": self.executed_steps,
            "goodput": self.goodput,
            "time_lost_seconds": round(self.time_lost_seconds, 3),
            "restarts": self.restarts,
            "attempts": self.attempts,
        }


def stockout_message(preemptions: int) -> str:
    """The error a job gets when preemptions exhaust Vertex's restart budget."""
    return (
        f"STOCKOUT: the Spot capacity was reclaimed {preemptions} times; Vertex restarts a "
        f"preempted Spot job at most {MAX_SPOT_RESTARTS} times, so the job failed. Checkpoint "
        "more often, retry later, or drop scheduling.strategy SPOT for on-demand capacity"
    )

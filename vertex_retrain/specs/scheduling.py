"""Typed builder for ``jobSpec.scheduling``: timeout, strategy, retries, queueing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Strategy = Literal["STANDARD", "SPOT", "FLEX_START"]


@dataclass(frozen=True)
class Scheduling:
    """How and how long a job runs.

    Attributes:
        timeout_s: Maximum run time in seconds (None: the Vertex default, 7 days).
        strategy: ``STANDARD`` (on-demand), ``SPOT`` (cheap, can be reclaimed; checkpoint!)
            or ``FLEX_START`` (Dynamic Workload Scheduler: queued until the GPUs are free).
            None leaves it unset (Vertex treats that as on-demand).
        max_wait_s: FLEX_START only: how long the job may wait in the queue.
        restart_job_on_worker_restart: Restart every replica when one worker restarts.
        disable_retries: Fail on the first error instead of retrying.
    """

    timeout_s: int | None = None
    strategy: Strategy | None = None
    max_wait_s: int | None = None
    restart_job_on_worker_restart: bool = False
    disable_retries: bool = False

    def to_payload(self) -> dict[str, Any]:
        """Returns the ``scheduling`` JSON (durations as ``"<seconds>s"`` strings)."""
        out: dict[str, Any] = {}
        if self.timeout_s is not None:
            out["timeout"] = f"{int(self.timeout_s)}s"
        if self.restart_job_on_worker_restart:
            out["restartJobOnWorkerRestart"] = True
        if self.strategy is not None:
            out["strategy"] = self.strategy
        if self.disable_retries:
            out["disableRetries"] = True
        if self.max_wait_s is not None:
            out["maxWaitDuration"] = f"{int(self.max_wait_s)}s"
        return out

"""What a local run gives back (``vertex_retrain.run_local``, ``run --local``): how it ended,
where its files are, and what the pipeline returned."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.backends.base import TaskOutputs

__all__ = ["LocalRunOutcome", "pipeline_outputs"]


@dataclass(frozen=True)
class LocalRunOutcome:
    """How a local run ended and where to look.

    Attributes:
        succeeded: Every task that had to run succeeded.
        run_dir: The run's folder under ``<local root>/pipeline-root`` (each task's outputs
            are in a folder of it); None when no run started.
        log_path: Every line the run printed.
        wall_seconds: How long the run took.
        summary: The exit handler's run summary, when the pipeline writes one.
        refused: Why the run did not start (another run holds the model's lock, or the
            installed kfp is not one the local runner supports); None if it ran.
        outputs: The pipeline's outputs as kfp.local returns them, by output name (a pipeline
            that returns one value names it ``Output``): parameters as Python values,
            artifacts as ``dsl.Artifact`` objects (``uri``, ``metadata``); empty when the
            pipeline declares none or the run failed.
    """

    succeeded: bool
    run_dir: Path | None
    log_path: Path
    wall_seconds: float
    summary: dict[str, Any] | None
    refused: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str | None:
        """The run's name (its folder's), as the run summary and ``history`` name it."""
        return self.run_dir.name if self.run_dir is not None else None

    @property
    def status(self) -> str:
        """``SUCCEEDED``, ``FAILED``, or ``REFUSED`` when the run did not start."""
        if self.refused is not None:
            return "REFUSED"
        return "SUCCEEDED" if self.succeeded else "FAILED"

    def task_outputs(self) -> dict[str, TaskOutputs]:
        """Each task's outputs, read from the run folder (task name -> parameters,
        artifacts, whether the cache served it); empty when no run started."""
        from vertex_retrain.backends.local.kfp_adapter.pipeline_runs import (
            read_local_task_outputs,
        )

        return {} if self.run_dir is None else read_local_task_outputs(self.run_dir)


def pipeline_outputs(returned: Any) -> dict[str, Any]:
    """The outputs of what calling a pipeline under kfp.local returned (its task)."""
    outputs = getattr(returned, "outputs", None)
    return dict(outputs) if isinstance(outputs, Mapping) else {}

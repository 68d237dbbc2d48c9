"""Reading the outputs of a pipeline run's tasks, for the exit handler's summary.

Locally, kfp.local leaves ``<pipeline root>/<run>/<task>/executor_output.json``; on Vertex the
PipelineJob's task details carry the same facts. Each backend reads its own
(``Backend.read_task_outputs``).
"""

from __future__ import annotations

from vertex_retrain.backends.base import Backend, TaskOutputs
from vertex_retrain.steps.backend import resolve_backend

__all__ = ["TaskOutputs", "read_task_outputs"]


def read_task_outputs(
    *,
    backend: str | Backend,
    pipeline_root: str,
    run_name: str,
    project: str = "",
    location: str = "",
) -> dict[str, TaskOutputs]:
    """Task name -> outputs, for every task of the run that wrote any.

    Args:
        backend: ``"local"`` or ``"vertex"``, or a backend (a test's, with fakes).
        pipeline_root: The pipeline root (local runs keep task outputs under it).
        run_name: The pipeline run's name.
        project: Google Cloud project (Vertex).
        location: Google Cloud region (Vertex).
    """
    chosen = resolve_backend(backend, project=project, location=location)
    return chosen.read_task_outputs(pipeline_root=pipeline_root, run_name=run_name)

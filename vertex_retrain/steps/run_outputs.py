"""Reading the outputs of a pipeline run's tasks, for the exit handler's summary.

Locally, kfp.local leaves ``<pipeline root>/<run>/<task>/executor_output.json``; on Vertex the
PipelineJob's task details carry the same facts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.steps.backend import check_backend


@dataclass
class TaskOutputs:
    """One task's output parameters and artifacts (uri and metadata)."""

    parameters: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_task_outputs(
    *, backend: str, pipeline_root: str, run_name: str, project: str = "", location: str = ""
) -> dict[str, TaskOutputs]:
    """Task name -> outputs, for every task of the run that wrote any."""
    if check_backend(backend) == "local":
        return read_local_task_outputs(Path(pipeline_root) / run_name)
    return read_vertex_task_outputs(project=project, location=location, run_name=run_name)


def read_local_task_outputs(run_dir: Path) -> dict[str, TaskOutputs]:
    """Parses kfp.local's executor output files under one run's folder."""
    outputs: dict[str, TaskOutputs] = {}
    for path in sorted(run_dir.glob("*/executor_output.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        task = TaskOutputs(parameters=dict(document.get("parameterValues", {})))
        for name, listing in document.get("artifacts", {}).items():
            artifacts = listing.get("artifacts", [])
            if artifacts:
                task.artifacts[name] = {
                    "uri": artifacts[0].get("uri", ""),
                    "metadata": dict(artifacts[0].get("metadata", {})),
                }
        outputs[path.parent.name] = task
    return outputs


def read_vertex_task_outputs(
    *, project: str, location: str, run_name: str, job_getter: Any = None
) -> dict[str, TaskOutputs]:
    """Reads task outputs from the Vertex PipelineJob (``job_getter`` is a seam for tests)."""
    if job_getter is None:
        from google.cloud import aiplatform

        def job_getter(name: str) -> Any:
            return aiplatform.PipelineJob.get(name, project=project, location=location)

    job = job_getter(f"projects/{project}/locations/{location}/pipelineJobs/{run_name}")
    outputs: dict[str, TaskOutputs] = {}
    for detail in job.task_details:
        task = TaskOutputs()
        metadata = plain(getattr(detail.execution, "metadata", None) or {})
        for key, value in metadata.items():
            if key.startswith("output:"):
                task.parameters[key.removeprefix("output:")] = value
        for name, listing in dict(detail.outputs).items():
            if listing.artifacts:
                artifact = listing.artifacts[0]
                task.artifacts[name] = {
                    "uri": artifact.uri,
                    "metadata": plain(artifact.metadata or {}),
                }
        if task.parameters or task.artifacts:
            outputs[detail.task_name] = task
    return outputs


def plain(value: Any) -> Any:
    """Converts proto-plus Struct values (MapComposite, RepeatedComposite) to dicts and lists.

    ``dict()`` converts only the top level, and json cannot write what is left below it.
    """
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(item) for item in value]
    return value

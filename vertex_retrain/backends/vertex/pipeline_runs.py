"""The outputs of a Vertex PipelineJob's tasks, read from its task details."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vertex_retrain.backends.base import TaskOutputs
from vertex_retrain.compiled_dags import dag_tasks

PipelineJobGetter = Callable[[str], Any]
"""Fetches a PipelineJob (with ``task_details``) by its resource name."""


def default_pipeline_job_getter(project: str, location: str) -> PipelineJobGetter:
    """The real getter: ``aiplatform.PipelineJob.get`` in that project and region."""

    def get(name: str) -> Any:
        from google.cloud import aiplatform

        return aiplatform.PipelineJob.get(name, project=project, location=location)

    return get


def read_vertex_task_outputs(
    *, project: str, location: str, run_name: str, job_getter: PipelineJobGetter | None = None
) -> dict[str, TaskOutputs]:
    """Task name -> output parameters and artifacts, for every task that wrote any.

    Args:
        project: Google Cloud project id.
        location: Vertex AI region.
        run_name: The PipelineJob's id (its run name).
        job_getter: Fetches the PipelineJob; the real one when omitted.
    """
    getter = job_getter or default_pipeline_job_getter(project, location)
    job = getter(f"projects/{project}/locations/{location}/pipelineJobs/{run_name}")
    keys, by_display_name = task_keys(plain(getattr(job, "pipeline_spec", None) or {}))
    outputs: dict[str, TaskOutputs] = {}
    for detail in job.task_details:
        task = TaskOutputs(cached=reused_from_cache(detail))
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
            name = str(detail.task_name)
            outputs[name if name in keys else by_display_name.get(name, name)] = task
    return outputs


def task_keys(pipeline_spec: Mapping[str, Any]) -> tuple[set[str], dict[str, str]]:
    """The task keys of a compiled pipeline, and each task's display name -> its key.

    The summary knows tasks by key (``register-model-2``); a task detail names its task
    "as defined in pipeline_spec" (aiplatform_v1), which may be the display name
    (``taskInfo.name``, ``register-champion``) that the templates set. Read both ways, the
    outputs are found whichever Vertex reports. Tasks inside condition groups and nested
    pipelines are in the components' DAGs.
    """
    keys: set[str] = set()
    by_display_name: dict[str, str] = {}
    for key, task in dag_tasks(pipeline_spec):
        keys.add(key)
        display_name = task.get("taskInfo", {}).get("name")
        if isinstance(display_name, str) and display_name != key:
            by_display_name.setdefault(display_name, key)
    return keys, by_display_name


def reused_from_cache(detail: Any) -> bool:
    """Whether a task detail says the task reused an earlier run's outputs.

    Two fields say it (aiplatform_v1): the task's state ``SKIPPED`` ("skipped due to cache
    hit") and its execution's state ``CACHED`` ("completed through Cache hit").
    """
    task_state = getattr(detail.state, "name", detail.state)
    execution = getattr(detail, "execution", None)
    execution_state = getattr(getattr(execution, "state", None), "name", None)
    return task_state == "SKIPPED" or execution_state == "CACHED"


def plain(value: Any) -> Any:
    """Converts proto-plus Struct values (MapComposite, RepeatedComposite) to dicts and lists.

    ``dict()`` converts only the top level, and json cannot write what is left below it.
    """
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(item) for item in value]
    return value

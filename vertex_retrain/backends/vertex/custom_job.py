"""Runs a CustomJob payload on Vertex AI through GCPC's in-process launcher."""

from __future__ import annotations

from typing import Any

from vertex_retrain.backends.vertex._launcher import (
    JobClientFactory,
    JobKind,
    VertexJobFailedError,
    VertexUnreachableError,
    run_job,
)

__all__ = [
    "VertexJobFailedError",
    "VertexUnreachableError",
    "custom_job_model_dir",
    "run_custom_job_on_vertex",
]


def _custom_job_kind() -> JobKind:
    from google.cloud import aiplatform_v1
    from google_cloud_pipeline_components.container.v1.custom_job import remote_runner

    return JobKind(
        resource_type="CustomJob",
        message_cls=aiplatform_v1.CustomJob,
        create_with_client=remote_runner.create_custom_job_with_client,
        get_with_client=remote_runner.get_custom_job_with_client,
        list_method="list_custom_jobs",
        cancel_method="cancel_custom_job",
    )


def run_custom_job_on_vertex(
    payload: dict[str, Any],
    *,
    project: str,
    location: str,
    gcp_resources_path: str,
    request_key: str | None = None,
    job_client_factory: JobClientFactory | None = None,
    connection_retries: int = 5,
    retry_wait_s: float = 20.0,
) -> dict[str, Any]:
    """Creates a CustomJob (or resumes the one already started) and waits for it to finish.

    The launcher is GCPC's `JobRemoteRunner`, so `gcp_resources` is written right after the job
    is created, a re-run that finds that file polls the same job instead of creating another,
    and SIGTERM (pipeline cancelled) cancels the job and exits the process with status 0.

    Args:
        payload: The CustomJob in REST JSON form (docs/architecture.md). Unknown fields are
            refused before anything is sent.
        project: Google Cloud project id.
        location: Vertex AI region, e.g. "europe-west4".
        gcp_resources_path: Where to write GCPC's `gcp_resources` JSON (the KFP output path).
        request_key: A key unique to this pipeline task, e.g. "<run name>-<task name>". It is
            stored (hashed) as a job label, so when gcp_resources is missing or a create
            call failed with a connection error, a still-live job from an earlier attempt is
            adopted instead of creating a duplicate. Without it, a failed create is not retried.
        job_client_factory: Builds the JobServiceClient from (ClientOptions, ClientInfo); the
            default builds the real `aiplatform_v1.JobServiceClient`.
        connection_retries: Attempts per API call on connection errors.
        retry_wait_s: Seconds between those attempts.

    Returns:
        The final CustomJob resource (state JOB_STATE_SUCCEEDED) in REST JSON form.

    Raises:
        ValueError: The payload does not parse as a CustomJob, or gcp_resources is unreadable.
        VertexJobFailedError: The job failed, was cancelled or paused; `.job` holds the final
            resource with its `state` and `error`.
        VertexUnreachableError: Vertex AI could not be reached.
    """
    return run_job(
        _custom_job_kind(),
        payload,
        project=project,
        location=location,
        gcp_resources_path=gcp_resources_path,
        request_key=request_key,
        job_client_factory=job_client_factory,
        connection_retries=connection_retries,
        retry_wait_s=retry_wait_s,
    )


def custom_job_model_dir(job: dict[str, Any]) -> str:
    """Returns where a CustomJob's trainer wrote its model: `<baseOutputDirectory>/model`.

    Vertex sets `AIP_MODEL_DIR` to this directory (see `CustomJobSpec.base_output_directory`).

    Args:
        job: A CustomJob resource or payload in REST JSON form.

    Raises:
        ValueError: The job has no `jobSpec.baseOutputDirectory.outputUriPrefix`.
    """
    prefix = job.get("jobSpec", {}).get("baseOutputDirectory", {}).get("outputUriPrefix", "")
    if not prefix:
        raise ValueError(
            "the CustomJob has no jobSpec.baseOutputDirectory.outputUriPrefix, so Vertex did "
            "not set AIP_MODEL_DIR; set baseOutputDirectory in the job spec."
        )
    return f"{prefix.rstrip('/')}/model"

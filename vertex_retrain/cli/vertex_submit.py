"""Build and submit ``aiplatform.PipelineJob`` runs of compiled templates.

:func:`build_pipeline_job` constructs the job without any network call when the template is a
local file and credentials are given (the tests use anonymous credentials);
:func:`submit` sends it. aiplatform is imported inside the functions: importing this module
stays cheap.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.cli.params import check_values, load_pipeline_spec, parameter_definitions

if TYPE_CHECKING:
    from google.auth.credentials import Credentials
    from google.cloud.aiplatform import PipelineJob

__all__ = ["PIPELINE_ROOT", "SubmitError", "build_pipeline_job", "submit", "submit_spec"]

PIPELINE_ROOT = re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,221}[a-z0-9](/.*)?")
"""A well-formed pipeline root: ``gs://BUCKET[/PATH]`` with a valid bucket name."""


class SubmitError(ValueError):
    """A job argument is invalid; nothing was submitted."""


def build_pipeline_job(
    template_path: str | Path,
    *,
    project: str,
    location: str,
    pipeline_root: str,
    parameter_values: Mapping[str, Any] | None = None,
    display_name: str | None = None,
    enable_caching: bool | None = None,
    labels: Mapping[str, str] | None = None,
    job_id: str | None = None,
    credentials: Credentials | None = None,
) -> PipelineJob:
    """Constructs an ``aiplatform.PipelineJob`` without submitting it.

    Parameter values of a local template are checked against its definitions first (the SDK
    checks only the names; Vertex would reject a wrong type after submission).

    Args:
        template_path: A compiled template: a local file, or an Artifact Registry version URI
            (fetched by the SDK, with ``credentials``).
        project: Google Cloud project that runs the job.
        location: Vertex AI region, e.g. ``"asia-east1"``.
        pipeline_root: ``gs://BUCKET/PATH`` for the run's artifacts.
        parameter_values: Parameter overrides; unset parameters keep their defaults.
        display_name: Job display name; default the pipeline name.
        enable_caching: Overrides every task's compile-time caching setting when not None.
        labels: Job labels.
        job_id: Job ID; default ``<pipeline-name>-<timestamp>``.
        credentials: Credentials; default application default credentials.

    Returns:
        The configured, unsubmitted job.

    Raises:
        SubmitError: ``pipeline_root`` is not a gs:// URI, or ``project`` / ``location`` is empty.
        vertex_retrain.cli.params.TemplateError: A local template is not a compiled pipeline.
        vertex_retrain.cli.params.ParameterError: A parameter value does not fit the template.
    """
    if not project or not location:
        raise SubmitError("project and location are required, e.g. my-project / asia-east1")
    if not PIPELINE_ROOT.fullmatch(pipeline_root):
        raise SubmitError(
            f"pipeline_root {pipeline_root!r}: expected gs://BUCKET/PATH, "
            "e.g. gs://my-bucket/pipeline-root"
        )
    values = dict(parameter_values or {})
    template = str(template_path)
    if not template.startswith(("https://", "gs://")):
        spec = load_pipeline_spec(template)
        check_values(values, parameter_definitions(spec))
        pipeline_name = str(spec["pipelineInfo"]["name"])
    else:
        pipeline_name = template.rstrip("/").split("/")[-2]

    from google.cloud import aiplatform

    return aiplatform.PipelineJob(
        display_name=display_name or pipeline_name,
        template_path=template,
        job_id=job_id,
        pipeline_root=pipeline_root,
        parameter_values=values,
        enable_caching=enable_caching,
        labels=dict(labels) if labels else None,
        credentials=credentials,
        project=project,
        location=location,
    )


def submit(
    job: PipelineJob, *, service_account: str | None = None, network: str | None = None
) -> str:
    """Submits a built job to Vertex AI Pipelines without waiting for it.

    Args:
        job: A job from :func:`build_pipeline_job`.
        service_account: Runtime service account the pipeline's steps run as; the caller
            needs ``iam.serviceAccounts.actAs`` on it (Service Account User).
        network: VPC network to peer with, ``projects/NUMBER/global/networks/NAME``.

    Returns:
        The job's resource name.
    """
    job.submit(service_account=service_account, network=network)
    return str(job.resource_name)


def submit_spec(
    spec: dict[str, Any],
    name: str,
    *,
    service_account: str | None = None,
    **job_options: Any,
) -> tuple[PipelineJob, str]:
    """Writes a compiled spec to a scratch template, builds the job from it and submits it.

    Args:
        spec: A compiled pipeline spec (the dict ``kfp`` compiles to).
        name: The template's file name, without ``.yaml`` (the pipeline's name).
        service_account: Runtime service account (see :func:`submit`).
        **job_options: Keyword arguments of :func:`build_pipeline_job` (project, location,
            pipeline_root, parameter_values, ...).

    Returns:
        The submitted job (to wait on) and its resource name.
    """
    from vertex_retrain.cli.compiling import write_spec

    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / f"{name}.yaml"
        write_spec(spec, template)
        job = build_pipeline_job(str(template), **job_options)
        resource_name = submit(job, service_account=service_account)
    return job, resource_name

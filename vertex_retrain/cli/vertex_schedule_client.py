"""The default :class:`vertex_retrain.schedules.ScheduleClient`, backed by aiplatform.

Creating, pausing and resuming go through ``aiplatform.PipelineJobSchedule``; so does updating
the cron and the maximum concurrency (``PipelineJobSchedule.update``). That method cannot change
the scheduled pipeline-job request (template, parameters, service account, pipeline root), so
those are sent with the same ``update_schedule`` call it makes, with the field mask
``create_pipeline_job_request``. aiplatform is imported inside the methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vertex_retrain.schedules import SCHEDULE_FIELDS, ObservedSchedule, ScheduleSpec

if TYPE_CHECKING:
    from google.auth.credentials import Credentials
    from google.cloud.aiplatform import PipelineJob

__all__ = ["VertexScheduleClient", "observed_from_resource"]


def observed_from_resource(resource: Mapping[str, Any]) -> ObservedSchedule:
    """Reads a Vertex ``Schedule`` in its REST JSON form (``MessageToDict``, camelCase).

    Args:
        resource: The schedule resource.

    Returns:
        The observed schedule; absent fields read as empty.
    """
    job = resource.get("createPipelineJobRequest", {}).get("pipelineJob", {})
    runtime = job.get("runtimeConfig", {})
    state = str(resource.get("state", "STATE_UNSPECIFIED"))
    return ObservedSchedule(
        resource_name=str(resource.get("name", "")),
        state=state,
        spec=ScheduleSpec(
            display_name=str(resource.get("displayName", "")),
            cron=str(resource.get("cron", "")),
            # int64 fields arrive as strings in the JSON mapping.
            max_concurrent_run_count=int(resource.get("maxConcurrentRunCount", 0)),
            template_uri=str(job.get("templateUri", "")),
            parameter_values=dict(runtime.get("parameterValues", {})),
            service_account=str(job.get("serviceAccount", "")),
            pipeline_root=str(runtime.get("gcsOutputDirectory", "")),
            paused=state == "PAUSED",
        ),
    )


class VertexScheduleClient:
    """Reads and changes pipeline schedules in one project and region through aiplatform."""

    def __init__(self, project: str, location: str, credentials: Credentials | None = None) -> None:
        """Binds the client to a project and region.

        Args:
            project: Google Cloud project.
            location: Vertex AI region.
            credentials: Credentials; default application default credentials.
        """
        self.project = project
        self.location = location
        self.credentials = credentials

    def _where(self) -> dict[str, Any]:
        return {"project": self.project, "location": self.location, "credentials": self.credentials}

    def list(self, display_name: str) -> list[ObservedSchedule]:
        """Schedules with exactly this display name (the filter is re-checked locally)."""
        from google.cloud import aiplatform
        from google.protobuf import json_format

        quoted = display_name.replace("\\", "\\\\").replace('"', '\\"')
        found = aiplatform.PipelineJobSchedule.list(
            filter=f'display_name="{quoted}"', **self._where()
        )
        observed = [
            observed_from_resource(json_format.MessageToDict(schedule.gca_resource._pb))
            for schedule in found
        ]
        return [schedule for schedule in observed if schedule.spec.display_name == display_name]

    def create(self, desired: ScheduleSpec) -> ObservedSchedule:
        """Creates an active schedule pinned to ``desired.template_uri``."""
        from google.cloud import aiplatform
        from google.protobuf import json_format

        schedule = aiplatform.PipelineJobSchedule(
            pipeline_job=self._pipeline_job(desired),
            display_name=desired.display_name,
            **self._where(),
        )
        schedule.create(
            cron=desired.cron,
            max_concurrent_run_count=desired.max_concurrent_run_count,
            service_account=desired.service_account,
        )
        return observed_from_resource(json_format.MessageToDict(schedule.gca_resource._pb))

    def update(self, existing: ObservedSchedule, desired: ScheduleSpec, fields: set[str]) -> None:
        """Sets the differing fields; see the module docstring for how each kind travels."""
        from google.protobuf import field_mask_pb2

        schedule = self._get(existing)
        schedule_fields = fields & SCHEDULE_FIELDS
        if schedule_fields:
            schedule.update(
                cron=desired.cron if "cron" in schedule_fields else None,
                max_concurrent_run_count=(
                    desired.max_concurrent_run_count
                    if "max_concurrent_run_count" in schedule_fields
                    else None
                ),
            )
        if fields - SCHEDULE_FIELDS:
            job = self._pipeline_job(desired)
            resource = schedule.gca_resource
            request = resource.create_pipeline_job_request
            request.pipeline_job.pipeline_spec = job.pipeline_spec
            request.pipeline_job.runtime_config = job.runtime_config
            request.pipeline_job.template_uri = desired.template_uri
            request.pipeline_job.service_account = desired.service_account
            schedule.api_client.update_schedule(
                schedule=resource,
                update_mask=field_mask_pb2.FieldMask(paths=["create_pipeline_job_request"]),
            )

    def pause(self, existing: ObservedSchedule) -> None:
        """Pauses the schedule."""
        self._get(existing).pause()

    def resume(self, existing: ObservedSchedule) -> None:
        """Resumes the schedule; runs missed while paused are not started."""
        self._get(existing).resume(catch_up=False)

    def _get(self, existing: ObservedSchedule) -> Any:
        from google.cloud import aiplatform

        return aiplatform.PipelineJobSchedule.get(existing.resource_name, **self._where())

    def _pipeline_job(self, desired: ScheduleSpec) -> PipelineJob:
        from google.cloud import aiplatform

        # The SDK fetches the template from Artifact Registry and records template_uri, so
        # every scheduled run names the exact version it came from.
        return aiplatform.PipelineJob(
            display_name=desired.display_name,
            template_path=desired.template_uri,
            pipeline_root=desired.pipeline_root,
            parameter_values=dict(desired.parameter_values),
            **self._where(),
        )

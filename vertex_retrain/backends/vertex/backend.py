"""``VertexBackend``: the :class:`~vertex_retrain.backends.base.Backend` that calls Vertex AI.

Jobs and studies go through GCPC's ``JobRemoteRunner`` (``_launcher``): gcp_resources is
written as soon as the job exists, a re-run resumes or adopts it, and SIGTERM cancels it.
Every Google client is passed to the constructor or, when omitted, built on first use; tests
pass the fakes of ``tests/fakes`` here. The rules it shares with the local backend come from
``vertex_retrain.rules``.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vertex_retrain.backends.base import (
    AliasHolder,
    BuildOutcome,
    CustomJobRun,
    DeploymentOutcome,
    DeploySpec,
    JobFailedError,
    RegisteredVersion,
    StudyFailedError,
    TaskOutputs,
    TuningJobRun,
    VersionSpec,
)
from vertex_retrain.backends.vertex._launcher import JobClientFactory
from vertex_retrain.backends.vertex._protos import job_failure
from vertex_retrain.backends.vertex.endpoints import Deployment
from vertex_retrain.backends.vertex.model_registry import RegisteredModel
from vertex_retrain.backends.vertex.pipeline_runs import PipelineJobGetter
from vertex_retrain.run_record import RunRecord


def wall_seconds(job: dict[str, Any]) -> float | None:
    """Run time from a job's ``startTime`` and ``endTime`` (RFC 3339), when both are set."""
    try:
        start = dt.datetime.fromisoformat(str(job["startTime"]).replace("Z", "+00:00"))
        end = dt.datetime.fromisoformat(str(job["endTime"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def _outcome(deployment: Deployment) -> DeploymentOutcome:
    return DeploymentOutcome(
        endpoint_uri=deployment.uri,
        endpoint_resource_name=deployment.endpoint_name,
        deployed_model_id=deployment.deployed_model_id,
        traffic=dict(deployment.traffic_split),
        previous_traffic=dict(deployment.previous_traffic_split),
    )


def _registered(model: RegisteredModel) -> RegisteredVersion:
    return RegisteredVersion(
        version_id=model.version_id,
        aliases=sorted(model.version_aliases),
        resource_name=model.resource_name,
        artifact_uri=model.uri,
    )


class VertexBackend:
    """Runs jobs, studies, registry, endpoints and builds on Vertex AI and Google Cloud.

    Args:
        project: Google Cloud project id.
        location: Vertex AI region, e.g. ``europe-west4``.
        job_client_factory: Builds the JobServiceClient from (ClientOptions, ClientInfo).
        model_client: An ``aiplatform_v1.ModelServiceClient``.
        endpoint_client: An ``aiplatform_v1.EndpointServiceClient``.
        prediction_client: An ``aiplatform_v1.PredictionServiceClient`` (a new deployment's
            sample-instance check).
        build_client: A ``cloudbuild_v1.CloudBuildClient``.
        storage_client: A ``google.cloud.storage.Client``.
        pipeline_job_getter: Fetches a PipelineJob by resource name (task outputs).
        experiments: The Vertex AI Experiments seam (``experiments.ExperimentsClient``).
        connection_retries: Attempts per job API call on connection errors.
        retry_wait_s: Seconds between those attempts.
        operation_poll_s: Seconds between polls of an upload or deploy operation.

    Every client left out is the real one, built when first needed.
    """

    name = "vertex"

    def __init__(
        self,
        project: str = "",
        location: str = "",
        *,
        job_client_factory: JobClientFactory | None = None,
        model_client: Any = None,
        endpoint_client: Any = None,
        prediction_client: Any = None,
        build_client: Any = None,
        storage_client: Any = None,
        pipeline_job_getter: PipelineJobGetter | None = None,
        experiments: Any = None,
        connection_retries: int = 5,
        retry_wait_s: float = 20.0,
        operation_poll_s: float = 20.0,
    ) -> None:
        self.project = project
        self.location = location
        self._job_client_factory = job_client_factory
        self._model_client = model_client
        self._endpoint_client = endpoint_client
        self._prediction_client = prediction_client
        self._build_client = build_client
        self._storage_client = storage_client
        self._pipeline_job_getter = pipeline_job_getter
        self._experiments = experiments
        self._connection_retries = connection_retries
        self._retry_wait_s = retry_wait_s
        self._operation_poll_s = operation_poll_s

    def _models(self) -> Any:
        if self._model_client is None:
            from vertex_retrain.backends.vertex.model_registry import default_model_client

            self._model_client = default_model_client(self.location)
        return self._model_client

    def _endpoints(self) -> Any:
        if self._endpoint_client is None:
            from vertex_retrain.backends.vertex.endpoints import default_endpoint_client

            self._endpoint_client = default_endpoint_client(self.location)
        return self._endpoint_client

    def readable_path(self, uri: str) -> Path:
        """``gs://B/P`` is ``/gcs/B/P``, where Vertex mounts Cloud Storage; others as given."""
        if uri.startswith("gs://"):
            return Path("/gcs") / uri[len("gs://") :]
        return Path(uri)

    def holds_files(self, uri: str) -> bool:
        """Whether any object (not a folder placeholder) lies under the Cloud Storage folder.

        Raises:
            ValueError: ``uri`` is neither ``gs://`` nor ``/gcs/``.
        """
        if uri.startswith("/gcs/"):
            uri = "gs://" + uri[len("/gcs/") :]
        if not uri.startswith("gs://"):
            raise ValueError(
                f"model folder {uri!r} is not in Cloud Storage; Vertex registers models from "
                "gs://BUCKET/PATH (a training job's AIP_MODEL_DIR)"
            )
        bucket, _, path = uri[len("gs://") :].partition("/")
        prefix = f"{path.strip('/')}/" if path.strip("/") else ""
        if self._storage_client is None:
            import google.cloud.storage

            self._storage_client = google.cloud.storage.Client(project=self.project or None)
        blobs = self._storage_client.list_blobs(bucket, prefix=prefix)
        return any(not blob.name.endswith("/") for blob in blobs)

    def _job_options(self, gcp_resources_path: str, request_key: str) -> dict[str, Any]:
        return {
            "project": self.project,
            "location": self.location,
            "gcp_resources_path": gcp_resources_path,
            "request_key": request_key or None,
            "job_client_factory": self._job_client_factory,
            "connection_retries": self._connection_retries,
            "retry_wait_s": self._retry_wait_s,
        }

    def run_custom_job(
        self,
        payload: dict[str, Any],
        *,
        gcp_resources_path: str,
        request_key: str = "",
        preemption_after_s: float = 0.0,
    ) -> CustomJobRun:
        """Runs the CustomJob through GCPC's launcher; Vertex preempts Spot VMs for real.

        Vertex's CustomJob resource records no step progress and no restart count
        (aiplatform_v1 ``CustomJob``: state, times, error, labels...), so goodput and
        restarts are unknown (None) and the metrics carry the wall time alone.
        """
        from vertex_retrain.backends.vertex.custom_job import (
            VertexJobFailedError,
            custom_job_model_dir,
            run_custom_job_on_vertex,
        )

        try:
            job = run_custom_job_on_vertex(
                payload, **self._job_options(gcp_resources_path, request_key)
            )
        except VertexJobFailedError as failure:
            raise JobFailedError(str(failure), failure=job_failure(failure.job)) from failure
        wall = wall_seconds(job)
        return CustomJobRun(
            job_name=str(job.get("name", "")),
            state=str(job.get("state", "JOB_STATE_SUCCEEDED")),
            model_uri=custom_job_model_dir(job),
            metrics={"wall_seconds": wall} if wall is not None else {},
        )

    def run_tuning_job(
        self,
        payload: dict[str, Any],
        *,
        gcp_resources_path: str,
        request_key: str = "",
        preemption_after_s: float = 0.0,
    ) -> TuningJobRun:
        """Runs the HyperparameterTuningJob through GCPC's launcher (Vertex preempts for real).

        A failed study's error carries the trials it ran, read from its final resource.
        """
        from vertex_retrain.backends.vertex.tuning_job import (
            VertexJobFailedError,
            run_tuning_job_on_vertex,
            study_trials,
        )

        metrics = payload.get("studySpec", {}).get("metrics", [])
        metric_id = str(metrics[0].get("metricId", "")) if metrics else ""
        try:
            job = run_tuning_job_on_vertex(
                payload, **self._job_options(gcp_resources_path, request_key)
            )
        except VertexJobFailedError as failure:
            raise StudyFailedError(
                str(failure),
                job_name=str(failure.job.get("name", "")),
                trials=study_trials(failure.job, metric_id),
                failure=job_failure(failure.job),
            ) from failure
        return TuningJobRun(job_name=str(job.get("name", "")), trials=study_trials(job, metric_id))

    def register_version(self, spec: VersionSpec) -> RegisteredVersion:
        """Uploads the version under the model of that display name (or finds it by key).

        Vertex has no place for free-form metrics or sample instances; the description
        carries lineage and evaluation instead.
        """
        from vertex_retrain.backends.vertex.model_registry import register_model_version

        return _registered(
            register_model_version(
                project=self.project,
                location=self.location,
                display_name=spec.display_name,
                artifact_uri=spec.artifact_uri,
                serving_container=spec.serving_container,
                request_key=spec.request_key,
                labels=spec.labels,
                description=spec.description,
                model_client=self._models(),
                gcp_resources_path=spec.gcp_resources_path,
                poll_s=self._operation_poll_s,
            )
        )

    def move_aliases(self, version: RegisteredVersion, aliases: Sequence[str]) -> RegisteredVersion:
        """One MergeVersionAliases call, skipped when the version holds the aliases."""
        from vertex_retrain.backends.vertex.model_registry import merge_version_aliases

        model_name, _, version_id = version.resource_name.rpartition("@")
        model = RegisteredModel(
            model_name=model_name,
            version_id=version_id,
            version_aliases=tuple(version.aliases),
            created=False,
            location=self.location,
        )
        return _registered(merge_version_aliases(model, aliases, model_client=self._models()))

    def find_alias_holder(self, display_name: str, alias: str) -> AliasHolder | None:
        """The version carrying ``alias``, or None."""
        from vertex_retrain.backends.vertex.model_registry import find_model_version

        found = find_model_version(
            project=self.project,
            location=self.location,
            display_name=display_name,
            alias=alias,
            model_client=self._models(),
        )
        if found is None:
            return None
        labels = {str(k): str(v) for k, v in (found.get("labels") or {}).items()}
        return AliasHolder(
            str(found.get("versionId", "")), str(found.get("artifactUri", "")), labels
        )

    def deploy(self, spec: DeploySpec) -> DeploymentOutcome:
        """Deploys to the endpoint of that display name (created if missing).

        The version is deployed with no traffic, given its share, and must answer the
        sample instances through the endpoint, or it is withdrawn (``endpoints``).
        """
        from vertex_retrain.backends.vertex.endpoints import deploy_model_version

        return _outcome(
            deploy_model_version(
                project=self.project,
                location=self.location,
                endpoint_display_name=spec.endpoint_display_name,
                model_resource_name=spec.model_resource_name,
                traffic_percentage=spec.traffic_percentage,
                keep_last=spec.keep_last_n,
                dedicated_resources={
                    "machineSpec": {"machineType": spec.machine_type},
                    "minReplicaCount": int(spec.min_replica_count),
                    "maxReplicaCount": int(spec.max_replica_count),
                },
                service_account=spec.service_account,
                endpoint_client=self._endpoints(),
                sample_instances=list(spec.sample_instances),
                prediction_client=self._prediction_client,
                gcp_resources_path=spec.gcp_resources_path,
                poll_s=self._operation_poll_s,
            )
        )

    def rollback(self, endpoint_display_name: str) -> DeploymentOutcome:
        """Restores the split recorded in the endpoint's labels before its last deployment."""
        from vertex_retrain.backends.vertex.endpoints import rollback_endpoint

        return _outcome(
            rollback_endpoint(
                project=self.project,
                location=self.location,
                endpoint_display_name=endpoint_display_name,
                endpoint_client=self._endpoints(),
            )
        )

    def build_container_image(
        self,
        context: Path,
        *,
        image: str,
        dockerfile: str = "Dockerfile",
        gpu: bool = True,
        staging_uri: str = "",
    ) -> BuildOutcome:
        """Builds with Cloud Build, once per context digest.

        Raises:
            ValueError: No ``gs://`` staging folder for the context tarball.
        """
        from vertex_retrain.backends.vertex.cloud_build import build_image_with_cloud_build

        if not staging_uri.startswith("gs://"):
            raise ValueError(
                "a Cloud Build needs staging_uri, a gs:// folder for the build context "
                f"tarball (e.g. gs://my-bucket/staging); got {staging_uri!r}"
            )
        built = build_image_with_cloud_build(
            context,
            project=self.project,
            location=self.location,
            image=image,
            staging_uri=staging_uri,
            dockerfile=dockerfile,
            gpu=gpu,
            build_client=self._build_client,
            storage_client=self._storage_client,
        )
        return BuildOutcome(built.image_uri, f"sha256:{built.context_digest}", built.skipped)

    def build_python_package(
        self, source: Path, *, destination: str, name: str = "", version: str = ""
    ) -> BuildOutcome:
        """Builds a reproducible wheel in a scratch folder and uploads it once per content."""
        from vertex_retrain.backends.vertex.cloud_build import upload_python_package
        from vertex_retrain.build.wheel import build_wheel, package_source

        package = package_source(source, name=name or None, version=version or None)
        with tempfile.TemporaryDirectory(prefix="vertex-retrain-wheel-") as scratch:
            # The upload is keyed by the wheel's bytes, so they must not vary between builds.
            wheel = build_wheel(package, Path(scratch))
            uploaded = upload_python_package(
                wheel,
                project=self.project,
                destination_uri=destination,
                storage_client=self._storage_client,
            )
        return BuildOutcome(uploaded.uri, f"sha256:{package.digest}", uploaded.skipped)

    def read_task_outputs(self, *, pipeline_root: str, run_name: str) -> dict[str, TaskOutputs]:
        """Reads the PipelineJob's task details (``pipeline_root`` is not needed on Vertex)."""
        from vertex_retrain.backends.vertex.pipeline_runs import read_vertex_task_outputs

        return read_vertex_task_outputs(
            project=self.project,
            location=self.location,
            run_name=run_name,
            job_getter=self._pipeline_job_getter,
        )

    def record_run(self, record: RunRecord) -> str:
        """Logs the week as one Vertex AI Experiments run of the model's experiment."""
        from vertex_retrain.backends.vertex.experiments import log_week

        return log_week(
            record, project=self.project, location=self.location, client=self._experiments
        )

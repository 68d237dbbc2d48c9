"""``LocalBackend``: the :class:`~vertex_retrain.backends.base.Backend` that runs on this machine.

Jobs run as processes (``executor``), studies with Optuna (``tuning``), versions go to the
SQLite registry, endpoints serve on 127.0.0.1 and builds land in the local storage root. The
rules it shares with the Vertex backend come from ``vertex_retrain.rules``.
"""

from __future__ import annotations

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
    StudyTrial,
    TaskOutputs,
    TuningJobRun,
    VersionSpec,
)
from vertex_retrain.backends.local.jobs.exit_advice import TRACEBACK
from vertex_retrain.backends.local.jobs.job_resources import write_local_gcp_resources
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_db import (
    DB_FILENAME,
    RegistryNotFoundError,
)
from vertex_retrain.backends.local.model_registry.registry_records import (
    Lineage,
    ModelVersion,
    parse_resource_name,
)
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.storage import local_root, to_local_path
from vertex_retrain.rules.job_failure import JobFailure
from vertex_retrain.run_record import RunRecord


def _registered(version: ModelVersion) -> RegisteredVersion:
    return RegisteredVersion(
        version_id=version.version_id,
        aliases=sorted(version.aliases),
        resource_name=version.resource_name,
        artifact_uri=version.artifact_uri,
    )


def failure_message(result: Any) -> str:
    """What a failed local CustomJob tells the task: state, failing replica, advice, log tail."""
    lines = [f"local CustomJob {result.job_id} ended in {result.state}: {result.error}"]
    if result.failure is not None:
        failure = result.failure
        lines.append(f"failing replica: {failure.replica}, exit code {failure.exit_code}")
        if failure.advice:
            lines.append(f"advice: {failure.advice}")
        tail = _tail_not_in_advice(failure.log_tail or "", failure.advice or "")
        if tail:
            lines.append("last log lines:\n" + tail)
    return "\n".join(lines)


def _tail_not_in_advice(tail: str, advice: str) -> str:
    """The log tail without the traceback the advice already shows (printed once, not twice):
    what the program wrote before it, if anything."""
    start = tail.rfind(TRACEBACK)
    if start < 0 or tail[start:].strip().splitlines()[-1] not in advice:
        return tail
    return tail[:start].rstrip()


class LocalBackend:
    """Runs jobs, studies, registry, endpoints and builds on this machine.

    Args:
        root: The local storage root (jobs, builds, ``gs://`` objects, registry); defaults to
            ``$VERTEX_LOCAL_ROOT`` (``./.local-vertex``), read when first needed.
        registry: The model registry; defaults to ``<root>/registry.db``.
        endpoints: The endpoints; default to the registry's database.
    """

    name = "local"

    def __init__(
        self,
        root: Path | None = None,
        *,
        registry: ModelRegistry | None = None,
        endpoints: LocalEndpoints | None = None,
    ) -> None:
        self._root = root
        self._registry = registry
        self._endpoints = endpoints

    @property
    def root(self) -> Path:
        """The local storage root."""
        return (self._root or local_root()).resolve()

    def _db_path(self) -> Path | None:
        return None if self._root is None else self.root / DB_FILENAME

    @property
    def registry(self) -> ModelRegistry:
        """The model registry (opened on first use)."""
        if self._registry is None:
            self._registry = ModelRegistry(self._db_path())
        return self._registry

    @property
    def endpoints(self) -> LocalEndpoints:
        """The endpoints (opened on first use, in the registry's database)."""
        if self._endpoints is None:
            self._endpoints = LocalEndpoints(self.registry.db.path)
        return self._endpoints

    def readable_path(self, uri: str) -> Path:
        """``gs://`` and ``/gcs/`` map into the storage root; local paths stay as they are."""
        return to_local_path(uri, self._root)

    def holds_files(self, uri: str) -> bool:
        """Whether the folder (mapped into the storage root) holds a file at any depth."""
        folder = to_local_path(uri, self._root)
        return folder.is_dir() and any(path.is_file() for path in folder.rglob("*"))

    def run_custom_job(
        self,
        payload: dict[str, Any],
        *,
        gcp_resources_path: str,
        request_key: str = "",
        preemption_after_s: float = 0.0,
    ) -> CustomJobRun:
        """Runs the job's replicas as processes; ``request_key`` is not needed locally.

        A local job dies with its task, so a re-run has no live job to adopt.
        """
        from vertex_retrain.backends.local.jobs.executor import run_custom_job
        from vertex_retrain.backends.local.jobs.spot import PreemptionSchedule

        preemption = None
        if preemption_after_s > 0:
            preemption = PreemptionSchedule(after_seconds=preemption_after_s)
        result = run_custom_job(payload, root=self._root, preemption=preemption)
        write_local_gcp_resources(gcp_resources_path, "CustomJob", result.job_dir)
        if not result.succeeded:
            message = failure_message(result)
            structured = JobFailure(
                state=result.state,
                message=message,
                reasons=(result.reason,) if result.reason else (),
            )
            raise JobFailedError(message, failure=structured)
        # Goodput needs the trainer's progress file; without it, it is unknown, not 1.0.
        goodput = result.goodput.goodput
        metrics = {
            "restarts": float(result.restarts),
            "wall_seconds": result.wall_seconds,
            "time_lost_seconds": result.goodput.time_lost_seconds,
        }
        if goodput is not None:
            metrics["goodput"] = goodput
        return CustomJobRun(
            job_name=result.job_id,
            state=result.state,
            model_uri=result.model_dir or "",
            goodput=goodput,
            restarts=result.restarts,
            metrics=metrics,
        )

    def run_tuning_job(
        self,
        payload: dict[str, Any],
        *,
        gcp_resources_path: str,
        request_key: str = "",
        preemption_after_s: float = 0.0,
    ) -> TuningJobRun:
        """Runs the study with Optuna, each trial a local CustomJob.

        With ``preemption_after_s``, each attempt of each SPOT trial is preempted that many
        seconds in, so a trial that runs longer ends in ``STOCKOUT`` on its seventh.
        """
        from vertex_retrain.backends.local.jobs.spot import PreemptionSchedule
        from vertex_retrain.backends.local.studies.tuning import run_tuning_job

        preemption = None
        if preemption_after_s > 0:
            preemption = PreemptionSchedule(after_seconds=preemption_after_s)
        result = run_tuning_job(payload, root=self._root, preemption=preemption)
        write_local_gcp_resources(
            gcp_resources_path, "HyperparameterTuningJob", self.root / "jobs" / result.job_id
        )
        trials = [
            StudyTrial(
                trial_id=t.trial_id,
                state=t.state,
                parameters=dict(t.parameters),
                metric=t.metric,
                model_uri=t.model_dir or "",
                message=t.error or "",
            )
            for t in result.trials
        ]
        if result.error:
            message = (
                f"local tuning job {result.job_id} ended in {result.state}: {result.error}\n"
                f"{result.table()}"
            )
            raise StudyFailedError(
                message,
                job_name=result.job_id,
                trials=trials,
                failure=JobFailure(state=result.state, message=message),
            )
        return TuningJobRun(job_name=result.job_id, trials=trials)

    def register_version(self, spec: VersionSpec) -> RegisteredVersion:
        """Adds a version to the SQLite registry (or finds it again by the request key)."""
        version = self.registry.upload_version(
            spec.display_name,
            artifact_uri=spec.artifact_uri,
            container_spec=spec.serving_container,
            labels=spec.labels,
            metrics=spec.metrics,
            description=spec.description,
            lineage=Lineage(
                pipeline_run=spec.pipeline_run or None, dataset_uri=spec.dataset_uri or None
            ),
            is_default_version=False,
            sample_instances=spec.sample_instances or None,
            request_id=spec.request_key,
            serving_package_uri=spec.serving_package_uri,
            serving_extras=spec.serving_extras,
        )
        return _registered(version)

    def move_aliases(self, version: RegisteredVersion, aliases: Sequence[str]) -> RegisteredVersion:
        """Moves the aliases in one registry transaction, unless the version holds them."""
        if set(aliases) <= set(version.aliases):
            return version
        display_name, version_id = parse_resource_name(version.resource_name)
        return _registered(
            self.registry.merge_version_aliases(display_name, version_id, list(aliases))
        )

    def find_alias_holder(self, display_name: str, alias: str) -> AliasHolder | None:
        """The registry's holder of ``alias``, or None."""
        try:
            version = self.registry.get_version(display_name, alias)
        except RegistryNotFoundError:
            return None
        return AliasHolder(version.version_id, version.artifact_uri, dict(version.labels))

    def deploy(self, spec: DeploySpec) -> DeploymentOutcome:
        """Starts and checks the version's server before any traffic moves (see deployment)."""
        from vertex_retrain.backends.local.serving.deployment import deploy_locally

        return deploy_locally(self.endpoints, spec)

    def rollback(self, endpoint_display_name: str) -> DeploymentOutcome:
        """Restores the split from before the latest deployment (see deployment)."""
        from vertex_retrain.backends.local.serving.deployment import rollback_locally

        return rollback_locally(self.endpoints, endpoint_display_name)

    def build_container_image(
        self,
        context: Path,
        *,
        image: str,
        dockerfile: str = "Dockerfile",
        gpu: bool = True,
        staging_uri: str = "",
    ) -> BuildOutcome:
        """Records the image in the local build index; no staging is needed locally."""
        from vertex_retrain.backends.local.environments.builder import build_container_image

        result = build_container_image(
            context, image_uri=image, dockerfile=dockerfile, gpu=gpu, root=self._root
        )
        return BuildOutcome(result.uri, f"sha256:{result.digest}", result.skipped)

    def build_python_package(
        self, source: Path, *, destination: str, name: str = "", version: str = ""
    ) -> BuildOutcome:
        """Builds the wheel into the storage root under ``destination``."""
        from vertex_retrain.backends.local.environments.builder import build_python_package

        result = build_python_package(
            source,
            destination_uri=destination,
            name=name or None,
            version=version or None,
            root=self._root,
        )
        return BuildOutcome(result.uri, f"sha256:{result.digest}", result.skipped)

    def read_task_outputs(self, *, pipeline_root: str, run_name: str) -> dict[str, TaskOutputs]:
        """Reads kfp.local's executor output files under ``<pipeline_root>/<run_name>``."""
        from vertex_retrain.backends.local.kfp_adapter.pipeline_runs import read_local_task_outputs

        return read_local_task_outputs(Path(pipeline_root) / run_name)

    def record_run(self, record: RunRecord) -> str:
        """Writes the run's record to the registry database (``vertex-retrain history``)."""
        from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory

        RunHistory(self.registry.db).record(record)
        return f"local run history ({self.registry.db.path})"

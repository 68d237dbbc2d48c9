"""The one interface both backends implement, and the values that cross it.

A component's step (``vertex_retrain/steps``) is written once against :class:`Backend`; the
rules both backends follow (``vertex_retrain/rules``) sit above them. ``LocalBackend``
(``backends/local/backend.py``) runs everything on this machine; ``VertexBackend``
(``backends/vertex/backend.py``) calls Vertex AI. Each takes its clients through its
constructor, so tests pass fakes there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from vertex_retrain.rules.job_failure import JobFailure
from vertex_retrain.run_record import RunRecord

BACKENDS = ("vertex", "local")


def check_backend(backend: str) -> str:
    """Returns ``backend`` if it is known, else raises a ValueError that lists the choices."""
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(repr(b) for b in BACKENDS)}; got {backend!r}. "
            "Use 'local' to run on this machine and 'vertex' on Vertex AI Pipelines."
        )
    return backend


class JobFailedError(RuntimeError):
    """A job or a study ended without success; the message says which part failed and why.

    Attributes:
        failure: What the job reported, structured (state, error code, reasons, message) as
            far as the backend knows it; the Spot fallback reads it
            (:mod:`vertex_retrain.rules.job_failure`).
    """

    def __init__(self, message: str, *, failure: JobFailure | None = None) -> None:
        super().__init__(message)
        self.failure = failure or JobFailure(state="", message=message)


class StudyFailedError(JobFailedError):
    """A tuning study ended without success, with the trials it ran before it did.

    Attributes:
        job_name: The study's name (a Vertex resource name, or the local job id).
        trials: Every trial the study ran, in trial order (those that finished keep their
            metric, so a fallback study need not run them again).
    """

    def __init__(
        self,
        message: str,
        *,
        job_name: str = "",
        trials: Sequence[StudyTrial] = (),
        failure: JobFailure | None = None,
    ) -> None:
        super().__init__(message, failure=failure)
        self.job_name = job_name
        self.trials = list(trials)


@dataclass(frozen=True)
class CustomJobRun:
    """A finished CustomJob.

    Attributes:
        job_name: The job's name (a Vertex resource name, or the local job id).
        state: ``JOB_STATE_SUCCEEDED``.
        model_uri: Where the trainer wrote its model (``AIP_MODEL_DIR``).
        goodput: Useful steps / executed steps; None where the job records no step progress
            (Vertex's CustomJob resource has none; locally, a trainer without a progress
            file), never a guess.
        restarts: Restarts after preemption; None where the job records none (Vertex).
        metrics: What the backend measured of the run (wall time, goodput, time lost...).
    """

    job_name: str
    state: str
    model_uri: str
    goodput: float | None = None
    restarts: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyTrial:
    """One trial of a tuning study, as both backends report it.

    Attributes:
        trial_id: The trial id (a decimal string).
        state: ``SUCCEEDED``, ``INFEASIBLE``, ``ACTIVE``, ``STOPPING``...
        parameters: Parameter id -> value; integer parameters are ints.
        metric: The final value of the study's metric, if the trial reported one.
        model_uri: The trial's model directory (its ``AIP_MODEL_DIR``).
        message: Why it failed, when it did.
    """

    trial_id: str
    state: str
    parameters: dict[str, Any]
    metric: float | None
    model_uri: str
    message: str = ""


@dataclass(frozen=True)
class TuningJobRun:
    """A finished HyperparameterTuningJob: its name and every trial, in trial order."""

    job_name: str
    trials: list[StudyTrial]


@dataclass(frozen=True)
class VersionSpec:
    """A model version to register.

    Attributes:
        display_name: The registry model; versions of one model share it.
        artifact_uri: The model directory.
        serving_container: The Vertex ``ModelContainerSpec`` in REST JSON form.
        request_key: Idempotency key (``vertex_retrain.rules.idempotency``): a second
            registration with it returns the first one's version.
        labels: Labels on the version.
        description: Free text (Vertex keeps lineage and metrics here).
        metrics: Evaluation metrics (the local registry stores them as fields).
        sample_instances: Instances a deployment must answer before traffic moves.
        pipeline_run: Lineage: the run that produced the version.
        dataset_uri: Lineage: the training data.
        gcp_resources_path: The task's ``gcp_resources`` output: the upload operation is
            recorded there and resumed from it (Vertex; empty: nowhere).
        serving_package_uri: The wheel or sdist holding the serving code: the local backend
            runs the serving command in an environment built from it (Vertex: lineage only).
        serving_extras: Extras of that package the serving code needs.
    """

    display_name: str
    artifact_uri: str
    serving_container: dict[str, Any]
    request_key: str
    labels: dict[str, str] = field(default_factory=dict)
    description: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    sample_instances: list[Any] = field(default_factory=list)
    pipeline_run: str = ""
    dataset_uri: str = ""
    gcp_resources_path: str = ""
    serving_package_uri: str = ""
    serving_extras: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RegisteredVersion:
    """A version in a model registry.

    Attributes:
        version_id: The version id (a decimal string).
        aliases: Its aliases, sorted.
        resource_name: ``<model>@<version>``, what ``deploy`` takes.
        artifact_uri: The ``google.VertexModel`` artifact's URI.
    """

    version_id: str
    aliases: list[str]
    resource_name: str
    artifact_uri: str


@dataclass(frozen=True)
class AliasHolder:
    """The version holding an alias, where its model artifacts are, and its labels (its data
    window among them: ``data_from``, ``data_gate_from``, ``data_as_of``)."""

    version_id: str
    artifact_uri: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DeploySpec:
    """A version to deploy, and how.

    Attributes:
        model_resource_name: ``RegisteredVersion.resource_name`` of the version.
        endpoint_display_name: The endpoint (created on first use).
        traffic_percentage: Its share, 0..100 (checked by ``rules.traffic``).
        keep_last_n: See ``rules.retention``.
        machine_type: Serving machine (Vertex).
        min_replica_count: Minimum serving replicas (Vertex).
        max_replica_count: Maximum serving replicas (Vertex).
        sample_instances: Instances the new deployment must answer before the call
            succeeds (local: empty means those registered with the version).
        service_account: Service account the deployed model runs as (Vertex).
        gcp_resources_path: The task's ``gcp_resources`` output: the deploy operation is
            recorded there and resumed from it (Vertex; empty: nowhere).
    """

    model_resource_name: str
    endpoint_display_name: str
    traffic_percentage: int = 100
    keep_last_n: int = 2
    machine_type: str = "n1-standard-4"
    min_replica_count: int = 1
    max_replica_count: int = 1
    sample_instances: list[Any] = field(default_factory=list)
    service_account: str = ""
    gcp_resources_path: str = ""


@dataclass(frozen=True)
class DeploymentOutcome:
    """An endpoint after a deployment or a rollback.

    Attributes:
        endpoint_uri: The ``google.VertexEndpoint`` artifact's URI.
        endpoint_resource_name: The endpoint's resource name.
        deployed_model_id: The deployed model serving the version (after a rollback: the
            one with the largest share).
        traffic: Deployed model id -> percent, the models serving traffic.
        previous_traffic: The split a rollback restores (before a rollback: the one replaced).
    """

    endpoint_uri: str
    endpoint_resource_name: str
    deployed_model_id: str
    traffic: dict[str, int]
    previous_traffic: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BuildOutcome:
    """A built container image or Python package.

    Attributes:
        reference: ``IMAGE@sha256:DIGEST``, or the package's ``gs://`` URI.
        digest: The source digest, ``sha256:<hex>`` (the same on both backends).
        skipped: An earlier build of the same digest was reused.
    """

    reference: str
    digest: str
    skipped: bool


@dataclass
class TaskOutputs:
    """One pipeline task's output parameters and artifacts (uri and metadata)."""

    parameters: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    cached: bool = False
    """The task reused an earlier run's outputs (the backend's cache): it spent nothing in
    this run."""


@runtime_checkable
class Backend(Protocol):
    """What a component's step needs from a backend."""

    name: str
    """``"local"`` or ``"vertex"``."""

    def readable_path(self, uri: str) -> Path:
        """Maps a ``gs://``, ``/gcs/`` or local location to a path this process can open."""
        ...

    def holds_files(self, uri: str) -> bool:
        """Whether the folder ``uri`` exists and holds at least one file (at any depth)."""
        ...

    def run_custom_job(
        self,
        payload: dict[str, Any],
        *,
        gcp_resources_path: str,
        request_key: str = "",
        preemption_after_s: float = 0.0,
    ) -> CustomJobRun:
        """Runs a validated CustomJob payload to the end and records it in gcp_resources.

        Args:
            payload: The CustomJob in REST JSON form.
            gcp_resources_path: Where the job resource is recorded (GCPC's format).
            request_key: Lets a re-run of the same task adopt the job it started.
            preemption_after_s: Rehearses a Spot preemption after this many seconds (local;
                Vertex preempts for real and ignores it).

        Raises:
            JobFailedError: The job failed or was cancelled.
        """
        ...

    def run_tuning_job(
        self,
        payload: dict[str, Any],
        *,
        gcp_resources_path: str,
        request_key: str = "",
        preemption_after_s: float = 0.0,
    ) -> TuningJobRun:
        """Runs a validated HyperparameterTuningJob payload to the end.

        Args:
            payload: The HyperparameterTuningJob in REST JSON form.
            gcp_resources_path: Where the job resource is recorded (GCPC's format).
            request_key: Lets a re-run of the same task adopt the study it started.
            preemption_after_s: Rehearses a Spot preemption this many seconds into each
                attempt of each Spot trial (local; Vertex preempts for real and ignores it).

        Raises:
            StudyFailedError: The study failed (too many failed trials, or was cancelled);
                it carries the trials that ran.
        """
        ...

    def register_version(self, spec: VersionSpec) -> RegisteredVersion:
        """Registers a version, or returns the one registered before under the request key.

        The new version takes no alias (a model's first version becomes its default).
        """
        ...

    def move_aliases(self, version: RegisteredVersion, aliases: Sequence[str]) -> RegisteredVersion:
        """Moves ``aliases`` onto ``version`` in one step; nothing is sent if it holds them."""
        ...

    def find_alias_holder(self, display_name: str, alias: str) -> AliasHolder | None:
        """The version of ``display_name`` holding ``alias``, or None (no model, or no holder)."""
        ...

    def deploy(self, spec: DeploySpec) -> DeploymentOutcome:
        """Deploys a version with a share of traffic (once), then prunes by ``keep_last_n``."""
        ...

    def rollback(self, endpoint_display_name: str) -> DeploymentOutcome:
        """Restores the traffic split from before the endpoint's latest deployment.

        Running it again gives the same split. Nothing is undeployed.

        Raises:
            ValueError: Nothing to roll back to, or a model of that split is gone.
        """
        ...

    def build_container_image(
        self,
        context: Path,
        *,
        image: str,
        dockerfile: str = "Dockerfile",
        gpu: bool = True,
        staging_uri: str = "",
    ) -> BuildOutcome:
        """Lints the context's Dockerfile and builds the image, unless its digest was built."""
        ...

    def build_python_package(
        self, source: Path, *, destination: str, name: str = "", version: str = ""
    ) -> BuildOutcome:
        """Builds a reproducible wheel and publishes it under ``destination`` once."""
        ...

    def read_task_outputs(self, *, pipeline_root: str, run_name: str) -> dict[str, TaskOutputs]:
        """Task name -> outputs, for every task of a pipeline run that wrote any."""
        ...

    def record_run(self, record: RunRecord) -> str:
        """Keeps a pipeline run's record (its week); returns where, in words.

        Locally: the registry database (``vertex-retrain history``); on Vertex: one Vertex AI
        Experiments run in the model's experiment.
        """
        ...

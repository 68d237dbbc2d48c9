"""register_model's logic: a new version of a registry model, aliases moved when told."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.backends.base import Backend, RegisteredVersion, VersionSpec
from vertex_retrain.rules.aliases import aliases_to_move, role_alias
from vertex_retrain.rules.idempotency import registration_key
from vertex_retrain.steps.backend import resolve_backend
from vertex_retrain.steps.service_resources import ensure_recorded

__all__ = [
    "RegisteredVersion",
    "RegistrationRequest",
    "register",
    "serving_container",
    "version_description",
]


@dataclass(frozen=True)
class RegistrationRequest:
    """What ``register_model`` is asked to register."""

    backend: str
    artifact_uri: str
    display_name: str
    serving_image_uri: str
    make_champion: bool = False
    champion_alias: str = "champion"
    challenger_alias: str = "challenger"
    serving_command: list[str] = field(default_factory=list)
    serving_args: list[str] = field(default_factory=list)
    health_route: str = "/health"
    predict_route: str = "/predict"
    labels: dict[str, str] = field(default_factory=dict)
    evaluation_metrics: dict[str, Any] = field(default_factory=dict)
    sample_instances: list[Any] = field(default_factory=list)
    dataset_uri: str = ""
    pipeline_run: str = ""
    project: str = ""
    location: str = ""
    gcp_resources_path: str = ""
    serving_package_uri: str = ""
    serving_extras: list[str] = field(default_factory=list)


def serving_container(request: RegistrationRequest) -> dict[str, Any]:
    """The Vertex ``ModelContainerSpec`` (REST JSON) for the version."""
    spec: dict[str, Any] = {
        "imageUri": request.serving_image_uri,
        "healthRoute": request.health_route,
        "predictRoute": request.predict_route,
        "ports": [{"containerPort": 8080}],
    }
    if request.serving_command:
        spec["command"] = list(request.serving_command)
    if request.serving_args:
        spec["args"] = list(request.serving_args)
    return spec


_DESCRIPTION_LIMIT = 2000


def version_description(request: RegistrationRequest) -> str:
    """Lineage and evaluation of a version, as text for the Vertex version's description.

    The local registry stores them as fields; Vertex's Model resource has no place for
    free-form metrics, so they travel in the description (bounded in length).
    """
    role = role_alias(
        make_champion=request.make_champion,
        champion_alias=request.champion_alias,
        challenger_alias=request.challenger_alias,
    )
    parts = [f"{role} version"]
    if request.pipeline_run:
        parts.append(f"pipeline run {request.pipeline_run}")
    if request.dataset_uri:
        parts.append(f"data {request.dataset_uri}")
    if request.serving_package_uri:
        extras = f"[{','.join(request.serving_extras)}]" if request.serving_extras else ""
        parts.append(f"serving package {request.serving_package_uri}{extras}")
    metrics = [
        f"{name}={value:.6g}" if isinstance(value, float) else f"{name}={value}"
        for name, value in sorted(request.evaluation_metrics.items())
    ]
    if metrics:
        parts.append("evaluation " + ", ".join(metrics))
    return "; ".join(parts)[:_DESCRIPTION_LIMIT]


def register(request: RegistrationRequest, *, backend: Backend | None = None) -> RegisteredVersion:
    """Registers the version, then moves its aliases as the evaluation gate decided.

    The champion alias and the default version move only with ``make_champion``, in one
    alias move; otherwise the version gets the challenger alias (``rules.aliases``). The same
    model folder registered again (a retry, a re-run of a week whose training came from the
    cache) returns the version it already is (``rules.idempotency.registration_key``), and
    finishes an alias move a crash cut short; a version that is the champion already keeps
    its aliases when the decision was not to promote (the candidate is the champion itself).
    On Vertex the upload operation is recorded in ``gcp_resources`` and a re-run of the task
    waits for it instead of uploading again.

    Args:
        request: The version and the decision.
        backend: The backend to register on (a test's, with fakes); by default the one
            ``request.backend`` names.

    Raises:
        ValueError: Bad alias, display name, backend or artifact URI, or a model folder that
            is missing or empty; nothing was registered.
    """
    chosen = resolve_backend(
        request.backend, project=request.project, location=request.location, backend=backend
    )
    if not chosen.holds_files(request.artifact_uri):
        raise ValueError(
            f"model folder {request.artifact_uri!r} is missing or empty, so there is nothing "
            f"to register as a version of {request.display_name!r}; the training job must "
            "write its model under AIP_MODEL_DIR (locally, a trainer that maps gs://B/P to "
            "/gcs/B/P writes under <root>/gcs/B/P)"
        )
    aliases = aliases_to_move(
        make_champion=request.make_champion,
        champion_alias=request.champion_alias,
        challenger_alias=request.challenger_alias,
    )
    version = chosen.register_version(
        VersionSpec(
            display_name=request.display_name,
            artifact_uri=request.artifact_uri,
            serving_container=serving_container(request),
            request_key=registration_key(
                display_name=request.display_name, artifact_uri=request.artifact_uri
            ),
            labels=dict(request.labels),
            description=version_description(request),
            metrics=dict(request.evaluation_metrics),
            sample_instances=list(request.sample_instances),
            pipeline_run=request.pipeline_run,
            dataset_uri=request.dataset_uri,
            gcp_resources_path=request.gcp_resources_path,
            serving_package_uri=request.serving_package_uri,
            serving_extras=list(request.serving_extras),
        )
    )
    ensure_recorded(request.gcp_resources_path)
    if not request.make_champion and request.champion_alias in version.aliases:
        return version  # a cached candidate that already is the champion: nothing to move
    return chosen.move_aliases(version, aliases)

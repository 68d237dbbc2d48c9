"""register_model's logic: a new version of a registry model, aliases moved when told."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.steps.backend import check_backend


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


@dataclass(frozen=True)
class RegisteredVersion:
    """The version registered (or found again, on a re-run)."""

    version_id: str
    aliases: list[str]
    resource_name: str
    artifact_uri: str


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
    parts = [f"{request.challenger_alias if not request.make_champion else 'champion'} version"]
    if request.pipeline_run:
        parts.append(f"pipeline run {request.pipeline_run}")
    if request.dataset_uri:
        parts.append(f"data {request.dataset_uri}")
    metrics = [
        f"{name}={value:.6g}" if isinstance(value, float) else f"{name}={value}"
        for name, value in sorted(request.evaluation_metrics.items())
    ]
    if metrics:
        parts.append("evaluation " + ", ".join(metrics))
    return "; ".join(parts)[:_DESCRIPTION_LIMIT]


def register(request: RegistrationRequest) -> RegisteredVersion:
    """Uploads the version; ``champion`` and ``default`` move only with ``make_champion``.

    A re-run with the same pipeline run returns the version it registered before (the
    request key is the run plus the decision), so a crash after the upload never leaves a
    duplicate.

    Raises:
        ValueError: Bad alias, display name or artifact URI; nothing was registered.
    """
    check_backend(request.backend)
    role = request.champion_alias if request.make_champion else request.challenger_alias
    key = f"{request.pipeline_run}:{role}" if request.pipeline_run else None
    if request.backend == "local":
        return _register_locally(request, role, key)
    from vertex_retrain.backends.vertex.model_registry import CHAMPION_ALIAS, register_model_version

    # register_model_version moves its own `champion` alias only through make_champion; any
    # other champion alias is an extra alias, merged in the same call as `default`.
    moves_builtin_champion = request.make_champion and role == CHAMPION_ALIAS
    registered = register_model_version(
        project=request.project,
        location=request.location,
        display_name=request.display_name,
        artifact_uri=request.artifact_uri,
        serving_container=serving_container(request),
        request_key=key or f"{request.display_name}:{request.artifact_uri}",
        aliases=() if moves_builtin_champion else (role,),
        make_champion=moves_builtin_champion,
        make_default=request.make_champion,
        labels=request.labels,
        description=version_description(request),
    )
    return RegisteredVersion(
        version_id=registered.version_id,
        aliases=list(registered.version_aliases),
        resource_name=registered.resource_name,
        artifact_uri=registered.uri,
    )


def _register_locally(
    request: RegistrationRequest, role: str, key: str | None
) -> RegisteredVersion:
    from vertex_retrain.backends.local.registry import ModelRegistry
    from vertex_retrain.backends.local.registry_records import Lineage

    registry = ModelRegistry()
    version = registry.upload_version(
        request.display_name,
        artifact_uri=request.artifact_uri,
        container_spec=serving_container(request),
        labels=request.labels,
        metrics=request.evaluation_metrics,
        lineage=Lineage(
            pipeline_run=request.pipeline_run or None, dataset_uri=request.dataset_uri or None
        ),
        aliases=[role],
        is_default_version=request.make_champion,
        sample_instances=request.sample_instances or None,
        request_id=key,
    )
    if request.make_champion and not version.is_default:
        # A re-run after a crash between upload and alias move finishes the move.
        version = registry.merge_version_aliases(
            request.display_name, version.version_id, ["default", request.champion_alias]
        )
    return RegisteredVersion(
        version_id=version.version_id,
        aliases=list(version.aliases),
        resource_name=version.resource_name,
        artifact_uri=version.artifact_uri,
    )

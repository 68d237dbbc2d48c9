"""deploy_model's logic: deploy a version with a traffic share, keep rollback targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.steps.backend import check_backend

LOCAL_RESOURCE_PREFIX = "models/"


@dataclass(frozen=True)
class DeploymentRequest:
    """What ``deploy_model`` is asked to deploy."""

    backend: str
    model_resource_name: str
    model_version_id: str
    endpoint_display_name: str
    traffic_percentage: int = 100
    keep_last_n: int = 2
    machine_type: str = "n1-standard-4"
    min_replica_count: int = 1
    max_replica_count: int = 1
    sample_instances: list[Any] = field(default_factory=list)
    service_account: str = ""
    project: str = ""
    location: str = ""


@dataclass(frozen=True)
class DeploymentOutcome:
    """The endpoint after the deployment."""

    endpoint_uri: str
    endpoint_resource_name: str
    deployed_model_id: str
    traffic: dict[str, int]


def deploy(request: DeploymentRequest) -> DeploymentOutcome:
    """Deploys the version (idempotently) and prunes old zero-traffic deployments.

    Raises:
        ValueError: Bad traffic percentage or model reference; traffic is unchanged.
        ServerStartError (local): The new server failed its health or sample check; traffic
            is unchanged and no process is left running.
    """
    if not 0 <= int(request.traffic_percentage) <= 100:
        raise ValueError(
            f"traffic_percentage must be between 0 and 100; got {request.traffic_percentage}"
        )
    if request.keep_last_n < 2:
        raise ValueError(
            "keep_last_n must be at least 2 (the new version and a rollback target); got "
            f"{request.keep_last_n}"
        )
    if check_backend(request.backend) == "local":
        return _deploy_locally(request)
    model = request.model_resource_name
    if "@" not in model and request.model_version_id:
        # An imported google.VertexModel may carry the version in its metadata only.
        model = f"{model}@{request.model_version_id}"
    from vertex_retrain.backends.vertex.endpoints import deploy_model_version

    deployment = deploy_model_version(
        project=request.project,
        location=request.location,
        endpoint_display_name=request.endpoint_display_name,
        model_resource_name=model,
        traffic_percentage=int(request.traffic_percentage),
        keep_last=int(request.keep_last_n),
        dedicated_resources={
            "machineSpec": {"machineType": request.machine_type},
            "minReplicaCount": int(request.min_replica_count),
            "maxReplicaCount": int(request.max_replica_count),
        },
        service_account=request.service_account,
    )
    return DeploymentOutcome(
        endpoint_uri=deployment.uri,
        endpoint_resource_name=deployment.endpoint_name,
        deployed_model_id=deployment.deployed_model_id,
        traffic=dict(deployment.traffic_split),
    )


def parse_local_model_name(resource_name: str) -> tuple[str, str]:
    """Splits ``models/<display name>@<version>`` (the local registry's resource name)."""
    body = resource_name.removeprefix(LOCAL_RESOURCE_PREFIX)
    display_name, at, version = body.rpartition("@")
    if not resource_name.startswith(LOCAL_RESOURCE_PREFIX) or not (at and display_name and version):
        raise ValueError(
            f"expected a local model resource name 'models/<display name>@<version>' (from "
            f"register_model with backend='local'); got {resource_name!r}"
        )
    return display_name, version


def _deploy_locally(request: DeploymentRequest) -> DeploymentOutcome:
    from vertex_retrain.backends.local.endpoints import LocalEndpoints
    from vertex_retrain.backends.local.traffic_split import reassign

    display_name, version = parse_local_model_name(request.model_resource_name)
    endpoints = LocalEndpoints()
    endpoint = endpoints.get_or_create(request.endpoint_display_name)
    existing = next(
        (
            m
            for m in endpoint.deployed_models
            if m.model_display_name == display_name and m.model_version_id == version
        ),
        None,
    )
    if existing is None:
        deployed = endpoints.deploy(
            request.endpoint_display_name,
            display_name,
            version,
            traffic_percentage=int(request.traffic_percentage),
            sample_instances=request.sample_instances or None,
        )
        deployed_id = deployed.deployed_model_id
    else:
        # A re-run after a crash: the version is deployed already; don't start a second one,
        # only give it the share asked for, as Vertex does.
        deployed_id = existing.deployed_model_id
        if existing.traffic_percentage != request.traffic_percentage:
            endpoints.set_traffic_split(
                request.endpoint_display_name,
                reassign(endpoint.traffic_split, deployed_id, int(request.traffic_percentage)),
            )
    # Deployed models are listed in deployment order; the newest keep_last_n stay, as on
    # Vertex, and older ones go once they serve no traffic.
    endpoint = endpoints.get(request.endpoint_display_name)
    older = endpoint.deployed_models[: -request.keep_last_n]
    for stale in [m for m in older if m.traffic_percentage == 0]:
        endpoints.undeploy(request.endpoint_display_name, stale.deployed_model_id)
    endpoint = endpoints.get(request.endpoint_display_name)
    return DeploymentOutcome(
        endpoint_uri=f"local://endpoints/{endpoint.endpoint_id}",
        endpoint_resource_name=f"endpoints/{endpoint.display_name}",
        deployed_model_id=deployed_id,
        traffic=dict(endpoint.traffic_split),
    )

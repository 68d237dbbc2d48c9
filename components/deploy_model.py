"""deploy_model: deploy a model version to an endpoint with a traffic share."""

from typing import NamedTuple

from google_cloud_pipeline_components.types.artifact_types import VertexEndpoint, VertexModel
from kfp.dsl import Input, Output, OutputPath

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(RUN_PLACEHOLDERS)
def deploy_model(
    backend: str,
    vertex_model: Input[VertexModel],
    endpoint: Output[VertexEndpoint],
    gcp_resources: OutputPath(str),
    endpoint_display_name: str = "",
    traffic_percentage: int = 100,
    keep_last_n: int = 2,
    machine_type: str = "n1-standard-4",
    min_replica_count: int = 1,
    max_replica_count: int = 1,
    sample_instances: list = [],  # noqa: B006 - KFP reads defaults from the signature
    service_account: str = ...,
    project: str = ...,
    location: str = ...,
) -> NamedTuple(
    "Outputs", [("deployed_model_id", str), ("traffic", dict), ("previous_traffic", dict)]
):
    """Deploys the version and gives it ``traffic_percentage`` of the endpoint's traffic.

    The endpoint is created on first use. Models already deployed keep the rest of the
    traffic in proportion, so the previous version stays deployed for rollback; zero-traffic
    versions beyond the newest ``keep_last_n`` are undeployed. Locally the model's server is
    started and must answer its health route and ``sample_instances`` before any traffic
    moves; if it does not, traffic stays as it was. On Vertex the version is deployed with no
    traffic (Vertex checks its health route first), then given its share, and must answer the
    ``sample_instances`` through the endpoint; if it does not, the previous split is restored
    and the version undeployed. The deploy operation is written to ``gcp_resources`` (the
    console links it, as for GCPC's ModelDeployOp), and a restarted task waits for it instead
    of deploying twice.

    Args:
        backend: ``"vertex"`` or ``"local"``.
        vertex_model: The version to deploy (from ``register_model``).
        endpoint: Output: GCPC's ``google.VertexEndpoint`` artifact.
        gcp_resources: Output: the deploy operation (Vertex), in GCPC's format.
        endpoint_display_name: The endpoint's display name (empty: the model's display
            name, as ``register_model`` recorded it).
        traffic_percentage: Share of traffic for the new version (0-100).
        keep_last_n: The newest deployed versions that are never undeployed (at least 2:
            the new one and a rollback target); older ones go once they have no traffic.
        machine_type: Serving machine type (Vertex).
        min_replica_count: Minimum serving replicas (Vertex).
        max_replica_count: Maximum serving replicas (Vertex).
        sample_instances: Instances the new version must answer (empty: those
            ``register_model`` recorded with the version).
        service_account: Service account the deployed model runs as; by default the
            pipeline's own (GCPC's pipeline service account placeholder, which Vertex resolves).
        project: Google Cloud project.
        location: Google Cloud region.

    Returns:
        deployed_model_id: The id of the new deployment.
        traffic: The endpoint's traffic split after the call.
        previous_traffic: The split before this deployment: what a rollback restores
            (empty on the endpoint's first deployment).
    """
    from vertex_retrain.steps.deploy import DeploymentRequest, deploy

    deployed = deploy(
        DeploymentRequest(
            backend=backend,
            model_resource_name=vertex_model.metadata.get("resourceName", ""),
            model_version_id=str(vertex_model.metadata.get("versionId", "")),
            endpoint_display_name=endpoint_display_name
            or str(vertex_model.metadata.get("displayName", "")),
            traffic_percentage=traffic_percentage,
            keep_last_n=keep_last_n,
            machine_type=machine_type,
            min_replica_count=min_replica_count,
            max_replica_count=max_replica_count,
            sample_instances=list(sample_instances)
            or list(vertex_model.metadata.get("sampleInstances", [])),
            service_account=service_account,
            project=project,
            location=location,
            gcp_resources_path=gcp_resources,
        )
    )
    endpoint.uri = deployed.endpoint_uri
    endpoint.metadata["resourceName"] = deployed.endpoint_resource_name
    return (deployed.deployed_model_id, deployed.traffic, deployed.previous_traffic)

"""deploy_model's logic: deploy a version with a traffic share, keep rollback targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.backends.base import Backend, DeploymentOutcome, DeploySpec
from vertex_retrain.rules.numbers import whole_numbers
from vertex_retrain.rules.retention import check_keep_last_n
from vertex_retrain.rules.traffic import check_percentage
from vertex_retrain.steps.backend import resolve_backend
from vertex_retrain.steps.job_request import resolved_service_account
from vertex_retrain.steps.service_resources import ensure_recorded

__all__ = ["DeploymentOutcome", "DeploymentRequest", "deploy"]


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
    gcp_resources_path: str = ""


def deploy(request: DeploymentRequest, *, backend: Backend | None = None) -> DeploymentOutcome:
    """Deploys the version (idempotently) and prunes old zero-traffic deployments.

    The split arithmetic is ``rules.traffic`` and the pruning ``rules.retention``, on both
    backends. Both check the new version with the sample instances before it serves (locally
    before any traffic moves; on Vertex it is deployed with no traffic, then given its share
    and withdrawn if it does not answer them through the endpoint). On Vertex the deploy
    operation is recorded in ``gcp_resources`` and a re-run waits for it instead of deploying
    again.

    Args:
        request: The version, endpoint and share.
        backend: The backend to deploy on (a test's, with fakes); by default the one
            ``request.backend`` names.

    Raises:
        ValueError: Bad traffic percentage, keep_last_n, backend or model reference; traffic
            is unchanged.
        ServerStartError (local): The new server failed its health or sample check; traffic
            is unchanged and no process is left running.
        SmokeTestError (Vertex): The new version did not answer the sample instances; the
            previous split is restored and the version undeployed.
    """
    # KFP may hand an integer input over as a float (30.0); anything else reaches the shared
    # rules unchanged and is refused there with their message.
    percentage = check_percentage(whole_numbers(request.traffic_percentage))
    keep_last_n = check_keep_last_n(whole_numbers(request.keep_last_n))
    chosen = resolve_backend(
        request.backend, project=request.project, location=request.location, backend=backend
    )
    model = request.model_resource_name
    if "@" not in model and request.model_version_id:
        # An imported google.VertexModel may carry the version in its metadata only.
        model = f"{model}@{request.model_version_id}"
    outcome = chosen.deploy(
        DeploySpec(
            model_resource_name=model,
            endpoint_display_name=request.endpoint_display_name,
            traffic_percentage=percentage,
            keep_last_n=keep_last_n,
            machine_type=request.machine_type,
            min_replica_count=int(request.min_replica_count),
            max_replica_count=int(request.max_replica_count),
            sample_instances=list(request.sample_instances),
            service_account=resolved_service_account(request.service_account) or "",
            gcp_resources_path=request.gcp_resources_path,
        )
    )
    ensure_recorded(request.gcp_resources_path)
    return outcome

"""Vertex AI endpoints: deploy a model version with a traffic share, prune, roll back.

The traffic split before a deployment is written to the endpoint's labels *before* the
deployment starts (`vr_prev_<deployed model id>` = percent, and `vr_prev_for` naming the model
version being deployed). So `rollback_endpoint` needs nothing but the endpoint, and a re-run of
an interrupted deployment still knows the split to roll back to.

A new version is deployed with 0% of the traffic; its `DeployModel` operation is recorded in the
task's `gcp_resources` (the console links it) and in the endpoint's `vr_deploy_op` label. A
re-run of the task (after a crash, or after the wait for the operation timed out) waits for that
operation instead of deploying the version a second time. Once deployed, the version gets its
share and must answer the sample instances through the endpoint (`smoke_test`); if it does not,
the previous split is restored and the version undeployed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vertex_retrain.backends.vertex._protos import (
    api_endpoint,
    location_parent,
    parse_rest_json,
    resource_uri,
)
from vertex_retrain.backends.vertex.endpoint_state import (
    DEPLOY_OP,
    PREV,
    PREV_FOR,
    positive,
    previous_from_labels,
    set_labels,
    set_traffic,
    version_key,
)
from vertex_retrain.backends.vertex.rollout import Rollout, deploy_at_zero, withdraw
from vertex_retrain.backends.vertex.sample_prediction import (
    SmokeTestError,
    default_prediction_client,
    smoke_test,
)
from vertex_retrain.rules.retention import check_keep_last_n, deployments_to_prune
from vertex_retrain.rules.traffic import (
    allocate,
    check_percentage,
    largest_share,
    reassign,
)

__all__ = [
    "Deployment",
    "SmokeTestError",
    "deploy_model_version",
    "find_endpoint",
    "rollback_endpoint",
]

_VERSIONED_MODEL = re.compile(r"^(projects/[^/]+/locations/[^/]+/models/([^/@]+))@(\d+)$")
_DEFAULT_RESOURCES: dict[str, Any] = {
    "machineSpec": {"machineType": "n1-standard-2"},
    "minReplicaCount": 1,
    "maxReplicaCount": 1,
}


@dataclass(frozen=True)
class Deployment:
    """The endpoint after `deploy_model_version` or `rollback_endpoint`.

    Attributes:
        endpoint_name: `projects/{p}/locations/{l}/endpoints/{id}`.
        location: The Vertex AI region.
        deployed_model_id: The deployed model serving the requested version.
        traffic_split: Deployed model id to percent, as the endpoint now has it.
        previous_traffic_split: The split before this deployment (what rollback restores).
        undeployed_model_ids: Zero-traffic deployed models removed by pruning.
        created_endpoint: True when the endpoint was created by this call.
        deployed: False when the version was already deployed (a re-run).
        smoke_tested: The version answered the sample instances through the endpoint.
    """

    endpoint_name: str
    location: str
    deployed_model_id: str
    traffic_split: dict[str, int]
    previous_traffic_split: dict[str, int]
    undeployed_model_ids: tuple[str, ...] = ()
    created_endpoint: bool = False
    deployed: bool = False
    smoke_tested: bool = False

    @property
    def uri(self) -> str:
        """The `google.VertexEndpoint` artifact URI."""
        return resource_uri(self.location, self.endpoint_name)

    def artifact_metadata(self) -> dict[str, str]:
        """Metadata of the `google.VertexEndpoint` artifact: `{"resourceName": ...}`."""
        return {"resourceName": self.endpoint_name}


def default_endpoint_client(location: str) -> Any:
    """The real `aiplatform_v1.EndpointServiceClient` for the region."""
    from google.cloud import aiplatform_v1

    return aiplatform_v1.EndpointServiceClient(
        client_options={"api_endpoint": api_endpoint(location)}
    )


def find_endpoint(client: Any, parent: str, display_name: str) -> Any | None:
    """The endpoint with this display name (None when there is none).

    Raises:
        ValueError: Several endpoints share the name.
    """
    from google.cloud import aiplatform_v1

    quoted = '"' + display_name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    request = aiplatform_v1.ListEndpointsRequest(parent=parent, filter=f"display_name={quoted}")
    found = [e for e in client.list_endpoints(request=request) if e.display_name == display_name]
    if len(found) > 1:
        names = ", ".join(sorted(e.name for e in found))
        raise ValueError(
            f"{len(found)} endpoints are named {display_name!r}: {names}. Deployments must go "
            "to one endpoint; rename or delete the extra endpoints."
        )
    return client.get_endpoint(name=found[0].name) if found else None


def _create_endpoint(client: Any, parent: str, display_name: str, timeout_s: float) -> Any:
    from google.cloud import aiplatform_v1

    operation = client.create_endpoint(
        request=aiplatform_v1.CreateEndpointRequest(
            parent=parent, endpoint=aiplatform_v1.Endpoint(display_name=display_name)
        )
    )
    return operation.result(timeout=timeout_s)


def _prune(
    client: Any, endpoint: Any, protected: set[str], keep_last: int, timeout_s: float
) -> list[str]:
    """Undeploys what the shared keep_last_n rule (`rules.retention`) prunes."""
    from google.cloud import aiplatform_v1

    split = positive(endpoint.traffic_split)
    newest_first = sorted(
        endpoint.deployed_models,
        key=lambda d: (d.create_time.timestamp() if d.create_time else 0.0, d.id),
        reverse=True,
    )
    removed = deployments_to_prune(
        [d.id for d in newest_first], split, keep_last_n=keep_last, protected=protected
    )
    for deployed_id in removed:
        client.undeploy_model(
            request=aiplatform_v1.UndeployModelRequest(
                endpoint=endpoint.name,
                deployed_model_id=deployed_id,
                traffic_split={k: v for k, v in split.items() if k != deployed_id},
            )
        ).result(timeout=timeout_s)
    return removed


def deploy_model_version(
    *,
    project: str,
    location: str,
    endpoint_display_name: str,
    model_resource_name: str,
    traffic_percentage: int = 100,
    keep_last: int = 2,
    dedicated_resources: dict[str, Any] | None = None,
    service_account: str = "",
    timeout_s: float = 1800.0,
    endpoint_client: Any = None,
    sample_instances: Sequence[Any] = (),
    prediction_client: Any = None,
    gcp_resources_path: str = "",
    poll_s: float = 20.0,
) -> Deployment:
    """Deploys a model version to the endpoint with this display name (created if missing).

    The deployed models already there keep the rest of the traffic pro rata, so the previous
    version stays deployed for rollback; the first version on an endpoint must take 100%
    (the split rules of `vertex_retrain.rules.traffic`, shared with the local backend).
    The version is deployed with no traffic first, then given its share; with sample
    instances it must answer them through the endpoint (`smoke_test`), or the previous split
    is restored and it is undeployed. Afterwards the keep_last_n rule
    (`vertex_retrain.rules.retention`) prunes: zero-traffic deployed models older than the
    newest `keep_last` are undeployed, unless the split a rollback restores needs them.
    Deploying a version that is already deployed does not deploy it again; it only adjusts its
    traffic share if that differs, and a re-run whose deployment is still in progress (see the
    module docstring) waits for it.

    Args:
        project: Google Cloud project id.
        location: Vertex AI region.
        endpoint_display_name: The endpoint's display name.
        model_resource_name: `projects/{p}/locations/{l}/models/{id}@{version id}`
            (`RegisteredModel.resource_name`).
        traffic_percentage: Share of traffic for this version, 0..100.
        keep_last: How many of the newest deployed models are never pruned (at least 2: the
            new version and the one to roll back to).
        dedicated_resources: `DedicatedResources` in REST JSON form; one n1-standard-2 replica
            when omitted.
        service_account: Service account the serving container runs as.
        timeout_s: How long to wait for each long-running operation.
        endpoint_client: An `aiplatform_v1.EndpointServiceClient` (or a fake).
        sample_instances: Instances the version must answer before the call succeeds (none:
            only Vertex's health check of the container).
        prediction_client: An `aiplatform_v1.PredictionServiceClient` (or a fake); built when
            sample instances need it.
        gcp_resources_path: The task's `gcp_resources` output: the `DeployModel` operation is
            recorded there (empty: nowhere).
        poll_s: Seconds between polls of a long-running operation.

    Returns:
        The endpoint's state after the deployment.

    Raises:
        ValueError: Bad input (nothing is changed), or several endpoints share the name.
        SmokeTestError: The version did not answer the sample instances; the previous split
            is restored and the version undeployed.
        OperationTimeoutError: The deployment is still running after `timeout_s`; running
            the task again waits for it.
    """
    from google.cloud import aiplatform_v1

    parent = location_parent(project, location)
    match = _VERSIONED_MODEL.match(model_resource_name)
    if not match:
        raise ValueError(
            "model_resource_name must name one version, "
            f"'projects/P/locations/L/models/ID@VERSION', got {model_resource_name!r}."
        )
    model_name, model_id, version_id = match.groups()
    check_keep_last_n(keep_last)
    check_percentage(traffic_percentage)
    resources = parse_rest_json(
        dedicated_resources or _DEFAULT_RESOURCES,
        aiplatform_v1.DedicatedResources,
        "dedicated_resources",
    )
    client = endpoint_client or default_endpoint_client(location)
    endpoint = find_endpoint(client, parent, endpoint_display_name)
    current = positive(endpoint.traffic_split) if endpoint else {}
    existing = [
        d
        for d in (endpoint.deployed_models if endpoint else [])
        if d.model.split("@")[0] == model_name
        and (d.model_version_id or d.model.partition("@")[2]) == version_id
    ]
    # Work out the new split before changing anything, so a refused split changes nothing.
    if existing:
        wanted = positive(reassign(current, existing[0].id, traffic_percentage))
    else:
        # "0" names the model being deployed (DeployModelRequest.traffic_split).
        wanted = positive(allocate(current, "0", traffic_percentage))
    created = endpoint is None
    if endpoint is None:
        endpoint = _create_endpoint(client, parent, endpoint_display_name, timeout_s)

    labels = dict(endpoint.labels)
    key = version_key(model_id, version_id)
    if labels.get(PREV_FOR) == key:
        previous = previous_from_labels(labels)
    else:
        previous = current
        labels = {k: v for k, v in labels.items() if not k.startswith(PREV)}
        labels.pop(DEPLOY_OP, None)
        labels.update({f"{PREV}{k}": str(v) for k, v in previous.items()})
        labels[PREV_FOR] = key
        endpoint = set_labels(client, endpoint, labels)

    if existing:
        deployed_id = existing[0].id
    else:
        deployed_id = deploy_at_zero(
            Rollout(
                client=client,
                location=location,
                endpoint=endpoint,
                labels=labels,
                key=key,
                deployed_model=aiplatform_v1.DeployedModel(
                    model=model_resource_name,
                    display_name=f"{model_id}-v{version_id}",
                    dedicated_resources=resources,
                    service_account=service_account,
                ),
                current=current,
                gcp_resources_path=gcp_resources_path,
                timeout_s=timeout_s,
                poll_s=poll_s,
            )
        )
    final = {(deployed_id if k == "0" else k): v for k, v in wanted.items()}
    before = positive(client.get_endpoint(name=endpoint.name).traffic_split)
    if final != before:
        set_traffic(client, endpoint.name, final)
    share = final.get(deployed_id, 0)
    smoke_tested = False
    if sample_instances and share and not before.get(deployed_id, 0):
        # The version takes traffic for the first time: it must answer the samples.
        try:
            checked = smoke_test(
                prediction_client or default_prediction_client(location),
                endpoint.name,
                deployed_id,
                list(sample_instances),
                share,
            )
        except SmokeTestError:
            withdraw(client, endpoint.name, deployed_id, current, timeout_s)
            raise
        smoke_tested = checked.answered

    endpoint = client.get_endpoint(name=endpoint.name)
    removed = _prune(client, endpoint, {deployed_id, *previous}, keep_last, timeout_s)
    if removed:
        endpoint = client.get_endpoint(name=endpoint.name)
    return Deployment(
        endpoint_name=endpoint.name,
        location=location,
        deployed_model_id=deployed_id,
        traffic_split=positive(endpoint.traffic_split),
        previous_traffic_split=previous,
        undeployed_model_ids=tuple(removed),
        created_endpoint=created,
        deployed=not existing,
        smoke_tested=smoke_tested,
    )


def rollback_endpoint(
    *,
    project: str,
    location: str,
    endpoint_display_name: str,
    timeout_s: float = 1800.0,
    endpoint_client: Any = None,
) -> Deployment:
    """Restores the traffic split recorded before the last deployment.

    Running it twice gives the same split. Nothing is undeployed.

    Raises:
        ValueError: No deployment recorded a previous split (first deployment, or the labels
            were removed), or a deployed model of that split is no longer deployed.
    """
    parent = location_parent(project, location)
    client = endpoint_client or default_endpoint_client(location)
    endpoint = find_endpoint(client, parent, endpoint_display_name)
    if endpoint is None:
        raise ValueError(f"no endpoint named {endpoint_display_name!r} in {parent}.")
    previous = previous_from_labels(dict(endpoint.labels))
    if not previous:
        raise ValueError(
            f"endpoint {endpoint.name} has no recorded previous traffic split (labels "
            f"{PREV}*): nothing to roll back to. Was anything deployed before the last "
            "deployment?"
        )
    deployed_ids = {d.id for d in endpoint.deployed_models}
    missing = sorted(set(previous) - deployed_ids)
    if missing:
        raise ValueError(
            f"cannot roll back {endpoint.name}: deployed model(s) {', '.join(missing)} of the "
            "previous split are no longer deployed; redeploy that version instead."
        )
    current = positive(endpoint.traffic_split)
    if current != previous:
        set_traffic(client, endpoint.name, previous)
        endpoint = client.get_endpoint(name=endpoint.name)
    restored = positive(endpoint.traffic_split)
    return Deployment(
        endpoint_name=endpoint.name,
        location=location,
        deployed_model_id=largest_share(restored),
        traffic_split=restored,
        previous_traffic_split=current,
    )

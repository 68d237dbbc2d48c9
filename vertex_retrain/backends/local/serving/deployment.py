"""Deploy and roll back on local endpoints, as the Vertex backend does on Vertex endpoints.

Deploying a version that is deployed already only gives it the share asked for; the split
arithmetic is `vertex_retrain.rules.traffic` and the pruning is `vertex_retrain.rules.retention`,
the same rules the Vertex backend follows. The split a rollback restores is the one in force
before the endpoint's latest deployment, read from the endpoint's traffic history.
"""

from __future__ import annotations

from vertex_retrain.backends.base import DeploymentOutcome, DeploySpec
from vertex_retrain.backends.local.model_registry.registry_records import parse_resource_name
from vertex_retrain.backends.local.serving.endpoints import DEPLOY_ACTION, Endpoint, LocalEndpoints
from vertex_retrain.rules.retention import check_keep_last_n, deployments_to_prune
from vertex_retrain.rules.traffic import (
    TrafficSplitError,
    check_percentage,
    largest_share,
    reassign,
    serving_shares,
)


def _outcome(endpoint: Endpoint, deployed_id: str, previous: dict[str, int]) -> DeploymentOutcome:
    return DeploymentOutcome(
        endpoint_uri=f"local://endpoints/{endpoint.endpoint_id}",
        endpoint_resource_name=f"endpoints/{endpoint.display_name}",
        deployed_model_id=deployed_id,
        traffic=serving_shares(endpoint.traffic_split),
        previous_traffic=previous,
    )


def split_before_latest_deployment(
    endpoints: LocalEndpoints, endpoint_display_name: str
) -> tuple[str, dict[str, int]] | None:
    """The latest deployment's model id and the serving split before it, or None.

    Re-runs of one deployment (its consecutive rows) count as that deployment, so the split
    before it is the one from before its first attempt, as the Vertex backend keeps it in the
    endpoint's labels. Rolled-back changes and rollbacks are not deployments.
    """
    live = [c for c in endpoints.traffic_history(endpoint_display_name) if not c.rolled_back]
    for index in range(len(live) - 1, -1, -1):
        action = live[index].action
        if action.startswith(DEPLOY_ACTION):
            while index and live[index - 1].action == action:
                index -= 1
            before = serving_shares(live[index - 1].split) if index else {}
            return action.removeprefix(DEPLOY_ACTION), before
    return None


def deploy_locally(endpoints: LocalEndpoints, spec: DeploySpec) -> DeploymentOutcome:
    """Deploys (once), gives the version its share, then prunes by the shared keep_last_n rule.

    Raises:
        ValueError: Bad percentage, keep_last_n or resource name; nothing changed.
        ServerStartError: The new server failed its health or sample check; traffic is
            unchanged and no process is left running.
    """
    percentage = check_percentage(spec.traffic_percentage)
    keep_last_n = check_keep_last_n(spec.keep_last_n)
    display_name, version = parse_resource_name(spec.model_resource_name)
    name = spec.endpoint_display_name
    endpoint = endpoints.get_or_create(name)
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
            name,
            display_name,
            version,
            traffic_percentage=percentage,
            sample_instances=spec.sample_instances or None,
        )
        deployed_id = deployed.deployed_model_id
    else:
        # A re-run after a crash: the version is deployed already; don't start a second one,
        # only give it the share asked for, as Vertex does.
        deployed_id = existing.deployed_model_id
        if existing.traffic_percentage != percentage:
            endpoints.set_traffic_split(
                name,
                reassign(endpoint.traffic_split, deployed_id, percentage),
                action=f"{DEPLOY_ACTION}{deployed_id}",
            )
    latest = split_before_latest_deployment(endpoints, name)
    previous = latest[1] if latest else {}
    endpoint = endpoints.get(name)
    newest_first = [m.deployed_model_id for m in reversed(endpoint.deployed_models)]
    for stale in deployments_to_prune(
        newest_first,
        endpoint.traffic_split,
        keep_last_n=keep_last_n,
        protected={deployed_id, *previous},
    ):
        endpoints.undeploy(name, stale)
    return _outcome(endpoints.get(name), deployed_id, previous)


def rollback_locally(endpoints: LocalEndpoints, endpoint_display_name: str) -> DeploymentOutcome:
    """Restores the serving split from before the endpoint's latest deployment.

    Running it again gives the same split; nothing is undeployed.

    Raises:
        TrafficSplitError: No deployment had a split before it, or a model of that split is
            no longer deployed (deploy that version again instead).
    """
    endpoint = endpoints.get(endpoint_display_name)
    latest = split_before_latest_deployment(endpoints, endpoint_display_name)
    if latest is None or not latest[1]:
        raise TrafficSplitError(
            f"endpoint {endpoint_display_name!r} has no traffic split from before its latest "
            "deployment: nothing to roll back to. Was anything deployed before it?"
        )
    target = latest[1]
    missing = sorted(set(target) - set(endpoint.traffic_split))
    if missing:
        raise TrafficSplitError(
            f"cannot roll back endpoint {endpoint_display_name!r}: deployed model(s) "
            f"{', '.join(missing)} of the previous split are no longer deployed; redeploy "
            "that version instead."
        )
    current = serving_shares(endpoint.traffic_split)
    if current != target:
        endpoint = endpoints.set_traffic_split(endpoint_display_name, target, action="rollback")
    restored = serving_shares(endpoint.traffic_split)
    return _outcome(endpoint, largest_share(restored), current)

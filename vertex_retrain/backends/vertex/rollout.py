"""Deploying one version: with no traffic first, resumable, withdrawn if it fails its check.

See :mod:`vertex_retrain.backends.vertex.endpoints` for the whole deployment; this module holds
the part that talks to the `DeployModel` operation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from vertex_retrain.backends.vertex.endpoint_state import (
    DEPLOY_OP,
    PREV_FOR,
    set_labels,
    set_traffic,
)
from vertex_retrain.backends.vertex.operations import (
    OperationFailedError,
    record_operation,
    recorded_operation,
    wait_for_operation,
)

__all__ = ["Rollout", "deploy_at_zero", "withdraw"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rollout:
    """What `deploy_at_zero` needs to deploy one version (or to resume its deployment)."""

    client: Any
    location: str
    endpoint: Any
    labels: dict[str, str]
    key: str
    deployed_model: Any
    current: dict[str, int]
    gcp_resources_path: str
    timeout_s: float
    poll_s: float


def deploy_at_zero(rollout: Rollout) -> str:
    """Deploys the version with no traffic, or waits for the deployment an earlier attempt
    started; returns the deployed model's id."""
    from google.api_core import exceptions as api_exceptions
    from google.cloud import aiplatform_v1

    client, endpoint = rollout.client, rollout.endpoint
    earlier = recorded_operation(rollout.gcp_resources_path, rollout.location, endpoint.name)
    if earlier is None and rollout.labels.get(PREV_FOR) == rollout.key:
        op_id = rollout.labels.get(DEPLOY_OP, "")
        earlier = f"{endpoint.name}/operations/{op_id}" if op_id else None
    if earlier is not None:
        _LOG.info("Resuming %s, started by an earlier attempt of this deployment", earlier)
        try:
            return _deployed_model_id(rollout, earlier)
        except (OperationFailedError, api_exceptions.NotFound) as failed:
            _LOG.warning("%s: %s; deploying again", earlier, failed)
    operation = client.deploy_model(
        request=aiplatform_v1.DeployModelRequest(
            endpoint=endpoint.name,
            deployed_model=rollout.deployed_model,
            # "0" is the model being deployed; an empty split leaves the endpoint's as it is.
            traffic_split={**rollout.current, "0": 0} if rollout.current else {},
        )
    )
    name = str(operation.operation.name)
    record_operation(rollout.gcp_resources_path, rollout.location, name)
    set_labels(client, endpoint, {**rollout.labels, DEPLOY_OP: name.rsplit("/", 1)[-1]})
    return _deployed_model_id(rollout, name)


def _deployed_model_id(rollout: Rollout, operation_name: str) -> str:
    """Waits for a `DeployModel` operation; returns the id of the model it deployed."""
    from google.cloud import aiplatform_v1

    response = wait_for_operation(
        rollout.client,
        operation_name,
        aiplatform_v1.DeployModelResponse,
        timeout_s=rollout.timeout_s,
        poll_s=rollout.poll_s,
    )
    return str(response.deployed_model.id)


def withdraw(
    client: Any, endpoint_name: str, deployed_id: str, split: dict[str, int], timeout_s: float
) -> None:
    """Restores `split` and undeploys the version that failed its sample check."""
    from google.cloud import aiplatform_v1

    set_traffic(client, endpoint_name, split)
    client.undeploy_model(
        request=aiplatform_v1.UndeployModelRequest(
            endpoint=endpoint_name, deployed_model_id=deployed_id, traffic_split=split
        )
    ).result(timeout=timeout_s)

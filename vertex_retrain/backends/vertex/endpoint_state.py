"""An endpoint's recorded state: the split a rollback restores, the deployment in flight.

Kept in the endpoint's labels, so they survive the task that wrote them: `vr_prev_<deployed
model id>` = percent and `vr_prev_for` (the version being deployed) give the split before the
latest deployment; `vr_deploy_op` the id of its `DeployModel` operation.
"""

from __future__ import annotations

from typing import Any

from vertex_retrain.rules.traffic import serving_shares

PREV = "vr_prev_"
PREV_FOR = "vr_prev_for"
DEPLOY_OP = "vr_deploy_op"


def positive(split: Any) -> dict[str, int]:
    """The deployed models that receive traffic, with their percent."""
    return serving_shares(dict(split))


def version_key(model_id: str, version_id: str) -> str:
    """The label value naming one model version."""
    return f"m{model_id}-{version_id}"


def previous_from_labels(labels: dict[str, str]) -> dict[str, int]:
    """The split recorded before the latest deployment."""
    return {k[len(PREV) :]: int(v) for k, v in labels.items() if k.startswith(PREV) and v.isdigit()}


def set_labels(client: Any, endpoint: Any, labels: dict[str, str]) -> Any:
    """Replaces the endpoint's labels; returns the updated endpoint."""
    from google.cloud import aiplatform_v1
    from google.protobuf import field_mask_pb2

    return client.update_endpoint(
        request=aiplatform_v1.UpdateEndpointRequest(
            endpoint=aiplatform_v1.Endpoint(name=endpoint.name, labels=labels),
            update_mask=field_mask_pb2.FieldMask(paths=["labels"]),
        )
    )


def set_traffic(client: Any, endpoint_name: str, split: dict[str, int]) -> Any:
    """Replaces the endpoint's traffic split; returns the updated endpoint."""
    from google.cloud import aiplatform_v1
    from google.protobuf import field_mask_pb2

    return client.update_endpoint(
        request=aiplatform_v1.UpdateEndpointRequest(
            endpoint=aiplatform_v1.Endpoint(name=endpoint_name, traffic_split=split),
            update_mask=field_mask_pb2.FieldMask(paths=["traffic_split"]),
        )
    )

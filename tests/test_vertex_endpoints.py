"""Endpoint deploy, prune and rollback against an in-memory EndpointServiceClient."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.vertex_serving import FakeEndpointServiceClient
from vertex_retrain.backends.vertex.endpoints import deploy_model_version, rollback_endpoint

MODEL = "projects/proj/locations/europe-west4/models/500"
WHERE: dict[str, Any] = {
    "project": "proj",
    "location": "europe-west4",
    "endpoint_display_name": "drinks",
}


def _deploy(client: FakeEndpointServiceClient, version: int, percent: int, **kw: Any) -> Any:
    return deploy_model_version(
        **WHERE,
        model_resource_name=f"{MODEL}@{version}",
        traffic_percentage=percent,
        endpoint_client=client,
        **kw,
    )


def test_endpoints_first_deploy_creates_endpoint_and_takes_all_traffic() -> None:
    client = FakeEndpointServiceClient()
    result = _deploy(client, 1, 100)
    assert result.created_endpoint and result.deployed
    name = "projects/proj/locations/europe-west4/endpoints/700"
    assert result.endpoint_name == name
    assert result.uri == f"https://europe-west4-aiplatform.googleapis.com/v1/{name}"
    assert result.artifact_metadata() == {"resourceName": name}
    assert result.traffic_split == {result.deployed_model_id: 100}
    deployed = client.endpoints[name].deployed_models[0]
    assert deployed.dedicated_resources.machine_spec.machine_type == "n1-standard-2"


def test_endpoints_first_deploy_below_100_percent_is_refused_before_any_change() -> None:
    client = FakeEndpointServiceClient()
    with pytest.raises(ValueError, match="100%"):
        _deploy(client, 1, 20)
    assert client.endpoints == {}


def test_endpoints_canary_keeps_previous_version_with_the_rest_of_traffic() -> None:
    client = FakeEndpointServiceClient()
    first = _deploy(client, 1, 100)
    second = _deploy(client, 2, 10)
    assert second.traffic_split == {first.deployed_model_id: 90, second.deployed_model_id: 10}
    assert second.previous_traffic_split == {first.deployed_model_id: 100}
    assert len(client.endpoints[second.endpoint_name].deployed_models) == 2


def test_endpoints_deploying_the_same_version_twice_does_not_duplicate() -> None:
    client = FakeEndpointServiceClient()
    first = _deploy(client, 1, 100)
    second = _deploy(client, 2, 10)
    again = _deploy(client, 2, 10)
    assert not again.deployed
    assert again.deployed_model_id == second.deployed_model_id
    assert again.traffic_split == second.traffic_split
    assert again.previous_traffic_split == {first.deployed_model_id: 100}
    assert client.calls.count("deploy_model") == 2


def test_endpoints_redeploy_with_new_share_rescales_the_others() -> None:
    client = FakeEndpointServiceClient()
    first = _deploy(client, 1, 100)
    second = _deploy(client, 2, 10)
    promoted = _deploy(client, 2, 100)
    assert promoted.traffic_split == {second.deployed_model_id: 100}
    # The split to roll back to is still the one before version 2 first arrived.
    assert promoted.previous_traffic_split == {first.deployed_model_id: 100}


def test_endpoints_zero_traffic_versions_beyond_keep_last_are_undeployed() -> None:
    client = FakeEndpointServiceClient()
    ids = [_deploy(client, v, 100, keep_last=3).deployed_model_id for v in (1, 2, 3)]
    assert len(client.endpoints[next(iter(client.endpoints))].deployed_models) == 3
    last = _deploy(client, 4, 100, keep_last=2)
    assert set(last.undeployed_model_ids) == {ids[0], ids[1]}
    remaining = {d.id for d in client.endpoints[last.endpoint_name].deployed_models}
    assert remaining == {ids[2], last.deployed_model_id}


def test_endpoints_models_with_traffic_are_never_pruned() -> None:
    client = FakeEndpointServiceClient()
    first = _deploy(client, 1, 100)
    _deploy(client, 2, 50)
    third = _deploy(client, 3, 50, keep_last=2)
    assert third.undeployed_model_ids == ()
    assert third.traffic_split[first.deployed_model_id] == 25


def test_endpoints_rollback_restores_previous_split_and_is_idempotent() -> None:
    client = FakeEndpointServiceClient()
    first = _deploy(client, 1, 100)
    _deploy(client, 2, 100)
    deployed_calls = len(client.calls)
    rolled = rollback_endpoint(**WHERE, endpoint_client=client)
    assert rolled.traffic_split == {first.deployed_model_id: 100}
    again = rollback_endpoint(**WHERE, endpoint_client=client)
    assert again.traffic_split == {first.deployed_model_id: 100}
    rollback_calls = client.calls[deployed_calls:]
    assert [c for c in rollback_calls if c == "update_endpoint:traffic_split"] == [
        "update_endpoint:traffic_split"
    ]


def test_endpoints_rollback_without_history_is_refused() -> None:
    client = FakeEndpointServiceClient()
    with pytest.raises(ValueError, match="no endpoint named"):
        rollback_endpoint(**WHERE, endpoint_client=client)
    _deploy(client, 1, 100)
    with pytest.raises(ValueError, match="nothing to roll back to"):
        rollback_endpoint(**WHERE, endpoint_client=client)


def test_endpoints_bad_input_is_refused() -> None:
    client = FakeEndpointServiceClient()
    with pytest.raises(ValueError, match="name one version"):
        deploy_model_version(**WHERE, model_resource_name=MODEL, endpoint_client=client)
    with pytest.raises(ValueError, match="keep_last"):
        _deploy(client, 1, 100, keep_last=1)
    with pytest.raises(ValueError, match="0 to 100"):
        _deploy(client, 1, 101)
    with pytest.raises(ValueError, match="DedicatedResources"):
        _deploy(client, 1, 100, dedicated_resources={"machineType": "n1-standard-2"})
    assert client.calls == []

"""Register and deploy on Vertex: operations in gcp_resources, resumed, and the sample check.

Against the in-memory service clients of tests/fakes (operations finish after a set number of
polls); these prove the calls at the client boundary, not Vertex's behaviour.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.vertex_serving import (
    FakeEndpointServiceClient,
    FakeModelServiceClient,
    FakePredictionServiceClient,
)
from vertex_retrain.backends.vertex.endpoints import SmokeTestError, deploy_model_version
from vertex_retrain.backends.vertex.model_registry import register_model_version
from vertex_retrain.backends.vertex.operations import (
    OperationTimeoutError,
    record_operation,
    recorded_operation,
)
from vertex_retrain.backends.vertex.sample_prediction import requests_needed

LOCATION = "europe-west4"
MODEL = "projects/proj/locations/europe-west4/models/500"
SAMPLES = [{"member_id": 1, "store_id": 1, "timestamp": "2026-07-01T15:00:00"}]
CONTAINER = {"imageUri": "europe-west4-docker.pkg.dev/proj/serving/model:1"}


def _register(client: FakeModelServiceClient, resources: Path, **kw: Any) -> Any:
    return register_model_version(
        project="proj",
        location=LOCATION,
        display_name="guess-your-order",
        artifact_uri="gs://bucket/runs/1/model",
        serving_container=CONTAINER,
        request_key="run-1/register",
        model_client=client,
        gcp_resources_path=str(resources),
        poll_s=0,
        **kw,
    )


def _deploy(
    client: FakeEndpointServiceClient,
    version: int,
    percent: int,
    resources: Path | None = None,
    **kw: Any,
) -> Any:
    return deploy_model_version(
        project="proj",
        location=LOCATION,
        endpoint_display_name="drinks",
        model_resource_name=f"{MODEL}@{version}",
        traffic_percentage=percent,
        endpoint_client=client,
        gcp_resources_path=str(resources) if resources else "",
        poll_s=0,
        **kw,
    )


def _resources(path: Path) -> list[dict[str, str]]:
    resources: list[dict[str, str]] = json.loads(path.read_text())["resources"]
    return resources


def test_register_writes_its_upload_operation_to_gcp_resources_as_gcpc_does(
    tmp_path: Path,
) -> None:
    client = FakeModelServiceClient()
    resources = tmp_path / "gcp_resources"
    _register(client, resources)
    (resource,) = _resources(resources)
    assert resource["resourceType"] == "VertexLro"
    assert resource["resourceUri"].startswith(
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/"
        "europe-west4/operations/"
    )


def test_register_timed_out_then_rerun_waits_for_the_same_upload(tmp_path: Path) -> None:
    client = FakeModelServiceClient()
    client.ops.pending_polls = 5  # the upload takes longer than the first attempt waits
    resources = tmp_path / "gcp_resources"
    with pytest.raises(OperationTimeoutError, match="running the task again waits"):
        _register(client, resources, upload_timeout_s=0)
    assert client.versions == {}  # nothing uploaded yet: the operation still runs
    version = _register(client, resources)  # the task's re-run
    assert client.calls.count("upload_model") == 1
    assert version.version_id == "1"
    assert sum(len(v) for v in client.versions.values()) == 1


def test_deploy_writes_its_operation_and_a_timed_out_rerun_does_not_deploy_twice(
    tmp_path: Path,
) -> None:
    client = FakeEndpointServiceClient()
    _deploy(client, 1, 100)
    client.ops.pending_polls = 3  # a 30-minute deployment, cut short by the task's wait
    resources = tmp_path / "gcp_resources"
    with pytest.raises(OperationTimeoutError):
        _deploy(client, 2, 100, resources, timeout_s=0)
    (resource,) = _resources(resources)
    assert resource["resourceType"] == "VertexLro"
    assert "/endpoints/700/operations/" in resource["resourceUri"]
    second = _deploy(client, 2, 100, resources)
    assert client.calls.count("deploy_model") == 2  # version 1, then version 2 once
    endpoint = client.endpoints[second.endpoint_name]
    assert [d.model_version_id for d in endpoint.deployed_models] == ["1", "2"]
    assert second.traffic_split == {second.deployed_model_id: 100}


def test_deploy_rerun_without_gcp_resources_finds_the_operation_in_the_endpoint_labels(
    tmp_path: Path,
) -> None:
    """A retried task starts with fresh outputs: the endpoint's label still names the deploy."""
    client = FakeEndpointServiceClient()
    _deploy(client, 1, 100)
    client.ops.pending_polls = 2
    with pytest.raises(OperationTimeoutError):
        _deploy(client, 2, 50, tmp_path / "first" / "gcp_resources", timeout_s=0)
    again = _deploy(client, 2, 50, tmp_path / "second" / "gcp_resources")
    assert client.calls.count("deploy_model") == 2
    assert sorted(again.traffic_split.values()) == [50, 50]


def test_deploy_goes_out_at_zero_traffic_before_its_share_is_set() -> None:
    client = FakeEndpointServiceClient()
    first = _deploy(client, 1, 100)
    split_during_deploy: list[dict[str, int]] = []
    original = client.deploy_model

    def watching(request: Any) -> Any:
        split_during_deploy.append(dict(request.traffic_split))
        return original(request)

    client.deploy_model = watching  # type: ignore[method-assign]
    second = _deploy(client, 2, 30)
    assert split_during_deploy == [{first.deployed_model_id: 100, "0": 0}]
    assert second.traffic_split == {first.deployed_model_id: 70, second.deployed_model_id: 30}


def test_deploy_smoke_test_passes_through_the_endpoint_for_a_healthy_version() -> None:
    client = FakeEndpointServiceClient()
    predictions = FakePredictionServiceClient(client)
    _deploy(client, 1, 100, sample_instances=SAMPLES, prediction_client=predictions)
    second = _deploy(client, 2, 20, sample_instances=SAMPLES, prediction_client=predictions)
    assert second.smoke_tested
    assert predictions.requests[-1][1] == second.deployed_model_id
    assert len(predictions.requests) <= 1 + requests_needed(20)


def test_deploy_smoke_test_failure_restores_the_split_and_undeploys_the_version() -> None:
    client = FakeEndpointServiceClient()
    predictions = FakePredictionServiceClient(client)
    first = _deploy(client, 1, 100, sample_instances=SAMPLES, prediction_client=predictions)
    predictions.broken_versions.add(f"{MODEL}@2")
    with pytest.raises(SmokeTestError, match="did not answer the sample instances"):
        _deploy(client, 2, 20, sample_instances=SAMPLES, prediction_client=predictions)
    endpoint = client.endpoints[first.endpoint_name]
    assert dict(endpoint.traffic_split) == {first.deployed_model_id: 100}
    assert [d.model_version_id for d in endpoint.deployed_models] == ["1"]


def test_deploy_smoke_test_failure_of_a_first_version_leaves_an_empty_endpoint() -> None:
    client = FakeEndpointServiceClient()
    predictions = FakePredictionServiceClient(client)
    predictions.broken_versions.add(f"{MODEL}@1")
    with pytest.raises(SmokeTestError):
        _deploy(client, 1, 100, sample_instances=SAMPLES, prediction_client=predictions)
    (endpoint,) = client.endpoints.values()
    assert list(endpoint.deployed_models) == []
    assert dict(endpoint.traffic_split) == {}


def test_recorded_operation_accepts_the_project_number_vertex_names_resources_with(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gcp_resources"
    record_operation(str(path), LOCATION, "projects/123456/locations/europe-west4/operations/7")
    parent = "projects/proj/locations/europe-west4"
    assert recorded_operation(str(path), LOCATION, parent).endswith("/operations/7")
    assert recorded_operation(str(path), LOCATION, f"{parent}/endpoints/9") is None
    assert recorded_operation(str(path), "us-central1", parent) is None
    assert recorded_operation(str(tmp_path / "absent"), LOCATION, parent) is None


def test_requests_needed_reaches_a_share_with_high_probability() -> None:
    assert requests_needed(100) == 1
    assert requests_needed(0) == 0
    assert requests_needed(50) == 10  # 0.5**10 < 0.001
    assert requests_needed(1) == 300  # capped

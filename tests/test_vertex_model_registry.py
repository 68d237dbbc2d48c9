"""Model Registry calls against an in-memory ModelServiceClient (not the live service)."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud import aiplatform_v1

from tests.fakes.vertex_serving import FakeModelServiceClient
from vertex_retrain.backends.vertex.model_registry import (
    find_model_version,
    merge_version_aliases,
    register_model_version,
)

SERVING: dict[str, Any] = {
    "imageUri": "europe-west4-docker.pkg.dev/proj/repo/server@sha256:cd",
    "ports": [{"containerPort": 8080}],
    "predictRoute": "/predict",
    "healthRoute": "/health",
    "env": [{"name": "TOP_K", "value": "5"}],
}


def _register(client: FakeModelServiceClient, key: str, **kwargs: Any) -> Any:
    args: dict[str, Any] = {
        "project": "proj",
        "location": "europe-west4",
        "display_name": "drink-recommender",
        "artifact_uri": f"gs://bucket/{key}/model",
        "serving_container": SERVING,
        "request_key": key,
        "model_client": client,
        **kwargs,
    }
    return register_model_version(**args)


def _champion(client: FakeModelServiceClient, key: str) -> Any:
    """A version registered, then given the champion alias and the default version."""
    return merge_version_aliases(
        _register(client, key), ["champion", "default"], model_client=client
    )


def test_model_registry_first_upload_creates_the_model_as_gcpc_artifact() -> None:
    client = FakeModelServiceClient()
    first = _register(client, "run-1/register")
    assert first.created and first.version_id == "1"
    assert first.version_aliases == ("default",)
    name = "projects/proj/locations/europe-west4/models/500"
    assert first.resource_name == f"{name}@1"
    assert first.uri == f"https://europe-west4-aiplatform.googleapis.com/v1/{name}@1"
    assert first.artifact_metadata() == {"resourceName": f"{name}@1"}
    stored = client.versions[name][0]
    assert stored.container_spec.ports[0].container_port == 8080
    assert stored.artifact_uri == "gs://bucket/run-1/register/model"


def test_model_registry_second_version_takes_no_alias_until_one_is_moved() -> None:
    client = FakeModelServiceClient()
    _champion(client, "run-1/register")
    second = _register(client, "run-2/register")
    assert second.version_id == "2" and second.version_aliases == ()
    candidate = merge_version_aliases(second, ["candidate"], model_client=client)
    assert candidate.version_aliases == ("candidate",)
    assert client.get_model(name=f"{second.model_name}@champion").version_id == "1"
    assert client.get_model(name=f"{second.model_name}@default").version_id == "1"


def test_model_registry_champion_and_default_move_together_in_one_call() -> None:
    client = FakeModelServiceClient()
    _champion(client, "run-1/register")
    client.calls.clear()
    second = _champion(client, "run-2/register")
    assert client.calls.count("merge_version_aliases") == 1
    assert set(second.version_aliases) == {"champion", "default"}
    first = client.get_model(name=f"{second.model_name}@1")
    assert list(first.version_aliases) == []


def test_model_registry_rerun_with_same_request_key_does_not_duplicate() -> None:
    client = FakeModelServiceClient()
    first = _champion(client, "run-3/register")
    again = _champion(client, "run-3/register")
    assert not again.created
    assert again.resource_name == first.resource_name
    assert len(client.versions[first.model_name]) == 1
    assert client.calls.count("upload_model") == 1
    assert client.calls.count("merge_version_aliases") == 1  # the re-run holds them already


def test_model_registry_rerun_after_crash_before_aliases_finishes_the_move() -> None:
    client = FakeModelServiceClient()
    _champion(client, "run-1/register")
    original = client.merge_version_aliases

    def crash(request: Any) -> Any:
        raise KeyboardInterrupt("killed between upload and alias move")

    client.merge_version_aliases = crash  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        _champion(client, "run-2/register")
    client.merge_version_aliases = original  # type: ignore[method-assign]
    again = _champion(client, "run-2/register")
    assert not again.created and again.version_id == "2"
    assert "champion" in again.version_aliases


def test_model_registry_bad_input_changes_nothing() -> None:
    client = FakeModelServiceClient()
    with pytest.raises(ValueError, match="gs://"):
        _register(client, "k", artifact_uri="/tmp/model")
    with pytest.raises(ValueError, match="ModelContainerSpec"):
        _register(client, "k", serving_container={**SERVING, "healthPath": "/h"})
    assert client.calls == []
    version = _register(client, "k")
    client.calls.clear()
    with pytest.raises(ValueError, match="not a valid Vertex version alias"):
        merge_version_aliases(version, ["Champion"], model_client=client)
    assert client.calls == []


def test_model_registry_two_models_with_one_display_name_is_an_error() -> None:
    client = FakeModelServiceClient()
    _register(client, "a")
    client.upload_model(
        request=aiplatform_v1.UploadModelRequest(
            parent="projects/proj/locations/europe-west4",
            model={"display_name": "drink-recommender"},
        )
    )
    with pytest.raises(ValueError, match="2 models are named"):
        _register(client, "b")


def test_model_registry_find_champion_returns_none_until_one_exists() -> None:
    client = FakeModelServiceClient()
    where: dict[str, Any] = {
        "project": "proj",
        "location": "europe-west4",
        "display_name": "drink-recommender",
        "alias": "champion",
        "model_client": client,
    }
    assert find_model_version(**where) is None
    _register(client, "run-1/register")
    assert find_model_version(**where) is None
    _champion(client, "run-2/register")
    champion = find_model_version(**where)
    assert champion is not None
    assert champion["versionId"] == "2"
    assert champion["artifactUri"] == "gs://bucket/run-2/register/model"

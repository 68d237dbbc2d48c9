"""Shared test helpers: register echo-server model versions and clean up their processes."""

from __future__ import annotations

import json
from pathlib import Path

from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry, ModelVersion
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.storage import to_local_path

ECHO_SERVER = Path(__file__).with_name("echo_server.py")
ECHO_IMAGE = "us-docker.pkg.dev/local/echo:test"


def build_echo_image(root: Path | None = None) -> str:
    """Records the echo server's image with the local builder (under `root`, default the
    current local root): the local backend serves only what it can run, a version's serving
    package or an image it built."""
    build_container_image(ECHO_SERVER.parent, image_uri=ECHO_IMAGE, root=root)
    return ECHO_IMAGE


def echo_spec(mode: str = "", *, routes: bool = True) -> dict[str, object]:
    """Serving spec that runs echo_server.py; `mode` sets FIXTURE_MODE (see the server).

    Its image is built (recorded) in the current local root first.
    """
    spec: dict[str, object] = {
        "imageUri": build_echo_image(),
        "command": ["python", str(ECHO_SERVER)],
        "env": [{"name": "FIXTURE_MODE", "value": mode}],
    }
    if routes:
        spec.update(predictRoute="/predict", healthRoute="/health")
    return spec


def register_echo(
    registry: ModelRegistry, name: str, bias: int, *, mode: str = "", model: str = "recs"
) -> ModelVersion:
    """Write model.json for a fake model and register it as a new version of `model`."""
    uri = f"gs://test-bucket/models/{model}/{name}"
    folder = to_local_path(uri)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(json.dumps({"name": name, "bias": bias}))
    return registry.upload_version(
        model,
        artifact_uri=uri,
        container_spec=echo_spec(mode),
        sample_instances=[1, 2],
        is_default_version=False,
    )


def stop_all_servers(endpoints: LocalEndpoints) -> None:
    """Stop the server processes of every endpoint in the database (test teardown)."""
    for endpoint in endpoints.list_endpoints():
        stop_servers(endpoint.display_name, db_path=endpoints.db.path)

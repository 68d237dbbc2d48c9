"""Local servers listen on 127.0.0.1 unless the user asks otherwise.

The listening address is read from /proc/net/tcp, so the test sees what the kernel bound,
not what the code meant to bind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from data.hostile.support import GOOD_INSTANCE, REPO, listening_addresses, write_tiny_artifact

from trainer.serve import start_server
from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.model_server import free_port
from vertex_retrain.backends.local.storage import to_local_path

pytestmark = pytest.mark.slow


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> set[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        addresses = listening_addresses(port)
        if addresses:
            return addresses
        time.sleep(0.05)
    raise AssertionError(f"nothing listened on port {port} (exit code {process.poll()})")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_artifact(tmp_path_factory.mktemp("bind-model"))


def test_prediction_server_cli_binds_loopback_by_default(model_dir: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "TRAINER_SERVE_HOST"}
    env.update(PYTHONPATH=str(REPO), AIP_HTTP_PORT=str(port), AIP_STORAGE_URI=str(model_dir))
    server = subprocess.Popen(
        [sys.executable, "-m", "trainer.serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait_listening(port, server) == {"127.0.0.1"}
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_prediction_server_api_binds_loopback_unless_told(model_dir: Path) -> None:
    with start_server(model_dir) as running:
        assert listening_addresses(int(running.url.rsplit(":", 1)[1])) == {"127.0.0.1"}
    everywhere = "0.0.0.0"  # all interfaces, asked for on purpose
    with start_server(model_dir, host=everywhere) as running:
        assert listening_addresses(int(running.url.rsplit(":", 1)[1])) == {everywhere}


def test_compile_py_serve_defaults_to_loopback() -> None:
    from vertex_retrain.cli import main as cli

    assert cli.build_parser().parse_args(["serve", "ep"]).host == "127.0.0.1"


def test_local_deploy_of_the_serving_image_binds_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    context = tmp_path / "serve-context"
    shutil.copytree(
        REPO / "examples" / "drink_shops" / "trainer",
        context / "trainer",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy2(
        REPO / "examples" / "drink_shops" / "trainer" / "Dockerfile.serve", context / "Dockerfile"
    )
    image = build_container_image(context, image_uri="us-docker.pkg.dev/p/r/serve:v1").uri
    uri = "gs://m/recs/1"
    write_tiny_artifact(to_local_path(uri))
    ModelRegistry().upload_version(
        "recs",
        artifact_uri=uri,
        container_spec={"imageUri": image, "healthRoute": "/health", "predictRoute": "/predict"},
        sample_instances=[GOOD_INSTANCE],
    )
    endpoints = LocalEndpoints()
    endpoints.get_or_create("ep")
    try:
        deployed = endpoints.deploy("ep", "recs", "1")
        assert deployed.port is not None
        assert listening_addresses(deployed.port) == {"127.0.0.1"}
    finally:
        stop_servers("ep")

"""Local serving runs the version's serving command in an environment built from its serving
package (and extras), never with this process's interpreter and packages."""

from __future__ import annotations

import json
import sqlite3
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from data.serving.support import stop_all_servers

from tests.package_files import write_installed, write_wheel
from vertex_retrain.backends.local.backend import LocalBackend
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_db import RegistryInputError
from vertex_retrain.backends.local.model_registry.registry_schema import migrate
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.model_server import ServerStartError
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.steps.register import RegistrationRequest, register

SERVER = """
import importlib.util, json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import tinyhelper  # in the environment only with the package's `serve` extra

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == os.environ["AIP_HEALTH_ROUTE"] else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = json.dumps({"predictions": [
            {"value": x + tinyhelper.BIAS, "prefix": sys.prefix, "tmp": os.environ["TMPDIR"],
             "library": importlib.util.find_spec("vertex_retrain") is not None}
            for x in body["instances"]
        ]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass

port = int(os.environ["AIP_HTTP_PORT"])
ThreadingHTTPServer((os.environ["LOCAL_BIND_HOST"], port), Handler).serve_forever()
"""
PACKAGE = "gs://bkt/packages/tinyserve-1.0-py3-none-any.whl"
SPEC = {
    "imageUri": "us-docker.pkg.dev/p/serving/tinyserve:1",
    "command": ["python", "-m", "tinyserve.serve"],
    "healthRoute": "/health",
    "predictRoute": "/predict",
}


@pytest.fixture
def endpoints(
    registry: ModelRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalEndpoints]:
    write_wheel(
        to_local_path("gs://bkt/packages"),
        "tinyserve",
        "1.0",
        {"tinyserve/__init__.py": "", "tinyserve/serve.py": SERVER},
        requires=['tinyhelper; extra == "serve"'],
        extras=["serve"],
    )
    caller = tmp_path / "caller-site"  # the caller has tinyhelper; this process never
    write_installed(caller, "tinyhelper", "1.0", {"tinyhelper.py": "BIAS = 100\n"})
    monkeypatch.syspath_prepend(str(caller))
    model = to_local_path("gs://bkt/model")
    model.mkdir(parents=True)
    (model / "weights.bin").write_bytes(b"\0")
    manager = LocalEndpoints(registry.db.path)
    yield manager
    stop_all_servers(manager)


def _predict(port: int, instances: list[int]) -> list[dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/predict",
        data=json.dumps({"instances": instances}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        predictions: list[dict] = json.loads(response.read())["predictions"]
        return predictions


@pytest.mark.slow
def test_local_deploy_runs_the_serving_command_in_the_serving_packages_env(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    version = register(
        RegistrationRequest(
            backend="local",
            artifact_uri="gs://bkt/model",
            display_name="tiny",
            serving_image_uri=SPEC["imageUri"],
            serving_command=list(SPEC["command"]),
            serving_package_uri=PACKAGE,
            serving_extras=["serve"],
            sample_instances=[1],
        ),
        backend=LocalBackend(registry.db.path.parent),
    )
    stored = registry.get_version("tiny", version.version_id)
    assert (stored.serving_package_uri, stored.serving_extras) == (PACKAGE, ("serve",))
    endpoints.get_or_create("ep")
    deployed = endpoints.deploy("ep", "tiny", version.version_id)
    (answer,) = _predict(deployed.port or 0, [2])
    root = registry.db.path.parent
    assert answer["value"] == 102  # tinyhelper came with the `serve` extra
    assert Path(answer["prefix"]).is_relative_to(root / "envs")  # the package's own venv
    assert answer["library"] is False  # nothing of this process's packages
    assert Path(answer["tmp"]).is_relative_to(root / "serving")
    endpoints.undeploy("ep", deployed.deployed_model_id)
    assert not Path(answer["tmp"]).exists()  # the server's TMPDIR goes with it


@pytest.mark.slow
def test_local_deploy_without_the_extra_the_server_needs_fails_its_start(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    registry.upload_version(
        "tiny",
        artifact_uri="gs://bkt/model",
        container_spec=SPEC,
        sample_instances=[1],
        serving_package_uri=PACKAGE,
    )
    endpoints.get_or_create("ep")
    with pytest.raises(ServerStartError, match="No module named 'tinyhelper'"):
        endpoints.deploy("ep", "tiny")


def test_local_deploy_refuses_a_version_it_cannot_run_before_anything_changes(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    registry.upload_version(
        "tiny", artifact_uri="gs://bkt/model", container_spec=SPEC, sample_instances=[1]
    )
    endpoints.get_or_create("ep")
    with pytest.raises(RegistryInputError) as refused:
        endpoints.deploy("ep", "tiny")
    assert "register it with serving_package_uri" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert endpoints.get("ep").deployed_models == ()


@pytest.mark.parametrize(
    ("uri", "extras", "fragment"),
    [
        ("gs://b/serve.py", [], "wheel or sdist"),
        ("", ["serve"], "serving_package_uri is empty"),
        (PACKAGE, ["not an extra"], "extra names"),
        (PACKAGE, "serve", "extra names"),
    ],
)
def test_registry_refuses_a_bad_serving_package(
    registry: ModelRegistry, uri: str, extras: object, fragment: str
) -> None:
    with pytest.raises(RegistryInputError, match=fragment):
        registry.upload_version(
            "tiny",
            artifact_uri="gs://bkt/model",
            container_spec=SPEC,
            serving_package_uri=uri,
            serving_extras=extras,  # type: ignore[arg-type]
        )


def test_registry_migrates_versions_from_before_serving_packages(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    migrate(connection, target=3)
    connection.execute("COMMIT")
    connection.close()
    registry = ModelRegistry(path)
    version = registry.upload_version("tiny", artifact_uri="gs://b/m", container_spec=SPEC)
    assert (version.serving_package_uri, version.serving_extras) == ("", ())

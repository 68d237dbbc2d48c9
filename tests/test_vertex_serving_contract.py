"""The serving image answers Vertex with no extra settings; local servers stay on 127.0.0.1.

Vertex starts a prediction container with ``AIP_HTTP_PORT``, ``AIP_HEALTH_ROUTE`` and
``AIP_PREDICT_ROUTE`` set from the model's ``ModelContainerSpec`` (the routes and port
``register_model`` records), probes the health route on that port, and refuses request bodies
over 1.5 MB. The image, the server's defaults and the registered spec must agree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from guarded_asgi.app import VERTEX_MAX_REQUEST_BYTES

from trainer import serve
from vertex_retrain.steps.register import RegistrationRequest, serving_container

ROOT = Path(__file__).resolve().parent.parent


def _dockerfile_env() -> dict[str, str]:
    text = (ROOT / "examples" / "drink_shops" / "trainer" / "Dockerfile.serve").read_text(
        encoding="utf-8"
    )
    block = re.search(r"^ENV (.*?)(?=^\S)", text, re.DOTALL | re.MULTILINE)
    assert block is not None
    return dict(re.findall(r"(\w+)=(\S+)", block.group(1).replace("\\\n", " ")))


def test_registered_container_spec_matches_the_serving_image_and_server_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = serving_container(
        RegistrationRequest(
            backend="vertex",
            artifact_uri="gs://b/m",
            display_name="m",
            serving_image_uri="europe-west4-docker.pkg.dev/p/r/serve:1",
        )
    )
    env = _dockerfile_env()
    assert spec["healthRoute"] == env["AIP_HEALTH_ROUTE"]
    assert spec["predictRoute"] == env["AIP_PREDICT_ROUTE"]
    assert spec["ports"] == [{"containerPort": int(env["AIP_HTTP_PORT"])}]
    assert env["TRAINER_SERVE_HOST"] == "0.0.0.0"  # Vertex probes the container from outside
    for name in ("AIP_HTTP_PORT", "AIP_HEALTH_ROUTE", "AIP_PREDICT_ROUTE", "LOCAL_BIND_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRAINER_SERVE_HOST", env["TRAINER_SERVE_HOST"])
    args = serve._parser().parse_args([])
    assert (args.host, args.port, args.health_route, args.predict_route) == (
        "0.0.0.0", 8080, spec["healthRoute"], spec["predictRoute"]
    )  # fmt: skip
    assert args.max_request_bytes == VERTEX_MAX_REQUEST_BYTES == 1_500_000


def test_vertex_route_variables_win_and_local_runs_bind_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    route = "/v1/endpoints/7/deployedModels/9"  # Vertex's default health route
    monkeypatch.setenv("AIP_HEALTH_ROUTE", route)
    monkeypatch.setenv("AIP_HTTP_PORT", "7080")
    monkeypatch.setenv("TRAINER_SERVE_HOST", "0.0.0.0")
    monkeypatch.setenv("LOCAL_BIND_HOST", "127.0.0.1")  # what the local backend sets
    args = serve._parser().parse_args([])
    assert (args.health_route, args.port, args.host) == (route, 7080, "127.0.0.1")

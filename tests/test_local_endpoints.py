"""Local endpoints with real prediction server processes: deploy, undeploy, rollback, failures."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from data.serving.support import ECHO_SERVER, echo_spec, register_echo, stop_all_servers

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryInputError,
    RegistryNotFoundError,
)
from vertex_retrain.backends.local.model_registry.registry_tables import endpoints_table
from vertex_retrain.backends.local.serving import model_server
from vertex_retrain.backends.local.serving.endpoint_servers import ensure_servers, stop_servers
from vertex_retrain.backends.local.serving.endpoints import Endpoint, LocalEndpoints
from vertex_retrain.backends.local.serving.serving_spec import (
    resolve_serving_launch,
    serving_environment,
)
from vertex_retrain.rules.traffic import TrafficSplitError

pytestmark = pytest.mark.slow


@pytest.fixture
def endpoints(registry: ModelRegistry) -> Iterator[LocalEndpoints]:
    manager = LocalEndpoints(registry.db.path)
    started: list[tuple[int | None, str | None]] = []
    yield manager
    for endpoint in manager.list_endpoints():
        started += [(m.pid, m.pid_start_time) for m in endpoint.deployed_models]
    stop_all_servers(manager)
    assert not any(model_server.is_running(pid, start) for pid, start in started)


def _predict(port: int, route: str, instances: list[int]) -> dict[str, object]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{route}",
        data=json.dumps({"instances": instances}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def _state(endpoints: LocalEndpoints, name: str) -> tuple[Endpoint, list[object]]:
    history = [(c.seq, c.action, c.split, c.rolled_back) for c in endpoints.traffic_history(name)]
    return endpoints.get(name), history


def test_endpoint_get_or_create_is_idempotent(endpoints: LocalEndpoints) -> None:
    first = endpoints.get_or_create("shop-recs")
    assert endpoints.get_or_create("shop-recs") == first
    assert first.deployed_models == () and first.traffic_split == {}
    assert [e.display_name for e in endpoints.list_endpoints()] == ["shop-recs"]
    with pytest.raises(RegistryNotFoundError, match=r"`vertex-retrain endpoints`"):
        endpoints.get("other")


def test_endpoint_deploy_starts_a_checked_server_and_scales_traffic(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    for name, bias in (("a", 0), ("b", 100), ("c", 200)):
        register_echo(registry, name, bias)
    endpoints.get_or_create("ep")
    a = endpoints.deploy("ep", "recs", "1")
    assert a.traffic_percentage == 100 and a.running
    assert _predict(a.port or 0, a.predict_route, [5]) == {
        "predictions": [{"model": "a", "value": 5}]
    }
    b = endpoints.deploy("ep", "recs", "2", traffic_percentage=40)
    assert endpoints.get("ep").traffic_split == {a.deployed_model_id: 60, b.deployed_model_id: 40}
    c = endpoints.deploy("ep", "recs", "3", traffic_percentage=50)
    assert endpoints.get("ep").traffic_split == {
        a.deployed_model_id: 30,
        b.deployed_model_id: 20,
        c.deployed_model_id: 50,
    }
    assert _predict(c.port or 0, c.predict_route, [1]) == {
        "predictions": [{"model": "c", "value": 201}]
    }
    assert Path(c.log_path or "").read_text().startswith(f"== deployed model {c.deployed_model_id}")
    rows = [line.split() for line in endpoints_table(registry.db.path).splitlines()[2:]]
    expected_row = ["ep", c.deployed_model_id, "recs@3", "50%", f"127.0.0.1:{c.port}"]
    assert rows[2] == [*expected_row, "running", "pid", str(c.pid)]


def test_endpoint_undeploy_redistributes_and_stops_the_server(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    register_echo(registry, "a", 0)
    register_echo(registry, "b", 1)
    endpoints.get_or_create("ep")
    a = endpoints.deploy("ep", "recs", "1")
    b = endpoints.deploy("ep", "recs", "2", traffic_percentage=25)
    after = endpoints.undeploy("ep", b.deployed_model_id)
    assert after.traffic_split == {a.deployed_model_id: 100}
    assert not model_server.is_running(b.pid, b.pid_start_time)
    assert endpoints.undeploy("ep", a.deployed_model_id).traffic_split == {}
    with pytest.raises(RegistryNotFoundError, match="no deployed model"):
        endpoints.undeploy("ep", a.deployed_model_id)


def test_endpoint_undeploy_refuses_to_leave_traffic_to_nobody(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    register_echo(registry, "a", 0)
    register_echo(registry, "b", 1)
    endpoints.get_or_create("ep")
    a = endpoints.deploy("ep", "recs", "1")
    b = endpoints.deploy("ep", "recs", "2", traffic_percentage=100)
    before = _state(endpoints, "ep")
    with pytest.raises(TrafficSplitError, match="remaining traffic split at 0%"):
        endpoints.undeploy("ep", b.deployed_model_id)
    assert _state(endpoints, "ep") == before
    assert endpoints.undeploy_all("ep").traffic_split == {}
    assert not a.running and not b.running


def test_endpoint_rollback_restores_previous_splits_step_by_step(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    for name in ("a", "b", "c"):
        register_echo(registry, name, 0)
    endpoints.get_or_create("ep")
    a = endpoints.deploy("ep", "recs", "1").deployed_model_id
    b = endpoints.deploy("ep", "recs", "2", traffic_percentage=20).deployed_model_id
    c = endpoints.deploy("ep", "recs", "3", traffic_percentage=50).deployed_model_id
    assert endpoints.get("ep").traffic_split == {a: 40, b: 10, c: 50}
    assert endpoints.rollback("ep").traffic_split == {a: 80, b: 20, c: 0}
    assert endpoints.rollback("ep").traffic_split == {a: 100, b: 0, c: 0}
    with pytest.raises(TrafficSplitError, match="no earlier traffic split"):
        endpoints.rollback("ep")
    assert [c_.rolled_back for c_ in endpoints.traffic_history("ep")] == [False, True, True]
    # A new change after rollbacks is rolled back to the restored split.
    endpoints.set_traffic_split("ep", {b: 70, c: 30})
    assert endpoints.rollback("ep").traffic_split == {a: 100, b: 0, c: 0}


def test_endpoint_rollback_refuses_a_split_needing_an_undeployed_model(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    register_echo(registry, "a", 0)
    register_echo(registry, "b", 0)
    endpoints.get_or_create("ep")
    a = endpoints.deploy("ep", "recs", "1").deployed_model_id
    b = endpoints.deploy("ep", "recs", "2", traffic_percentage=50).deployed_model_id
    endpoints.undeploy("ep", a)
    before = _state(endpoints, "ep")
    with pytest.raises(TrafficSplitError, match=rf"deployed model\(s\) \['{a}'\] no longer"):
        endpoints.rollback("ep")
    assert _state(endpoints, "ep") == before
    assert before[0].traffic_split == {b: 100}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("unhealthy", r"not healthy after 1\.5 s.*HTTP 503"),
        ("bad-prediction", r"answered 2 sample instance\(s\) with .*outputs"),
        ("crash", r"exited with code \d+ before its health route answered"),
    ],
)
def test_endpoint_failed_deploy_changes_nothing_and_leaves_no_process(
    registry: ModelRegistry, endpoints: LocalEndpoints, mode: str, expected: str
) -> None:
    register_echo(registry, "good", 0)
    register_echo(registry, "bad", 0, mode=mode)
    endpoints.get_or_create("ep")
    endpoints.deploy("ep", "recs", "1")
    before = _state(endpoints, "ep")
    with pytest.raises(model_server.ServerStartError, match=expected) as caught:
        endpoints.deploy("ep", "recs", "2", traffic_percentage=50, health_timeout_s=1.5)
    message = str(caught.value)
    assert f"mode={mode!r}" in message  # the server's own log line is in the error
    assert caught.value.pid is not None
    assert not model_server.is_running(caught.value.pid, None)
    assert _state(endpoints, "ep") == before
    assert before[0].deployed_models[0].running


def test_endpoint_deploy_validates_before_starting_anything(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    register_echo(registry, "a", 0)
    registry.upload_version(
        "no-samples", artifact_uri="gs://test-bucket/x", container_spec=echo_spec()
    )
    endpoints.get_or_create("ep")
    with pytest.raises(TrafficSplitError, match="first one must take 100%"):
        endpoints.deploy("ep", "recs", "1", traffic_percentage=30)
    with pytest.raises(RegistryInputError, match="no sample instances"):
        endpoints.deploy("ep", "no-samples")
    with pytest.raises(RegistryNotFoundError, match="no version with alias 'champion'"):
        endpoints.deploy("ep", "recs", "champion")
    assert endpoints.traffic_history("ep") == []
    assert not list((registry.db.path.parent / "serving").glob("*/*.log"))


def test_endpoint_ensure_servers_restarts_a_dead_server(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    register_echo(registry, "a", 7)
    endpoints.get_or_create("ep")
    deployed = endpoints.deploy("ep", "recs", "1")
    os.kill(deployed.pid or 0, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while deployed.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not deployed.running
    restarted = ensure_servers("ep").deployed_models[0]
    assert restarted.pid != deployed.pid and restarted.running
    assert restarted.traffic_percentage == 100
    assert _predict(restarted.port or 0, "/predict", [1]) == {
        "predictions": [{"model": "a", "value": 8}]
    }
    assert ensure_servers("ep").deployed_models[0].pid == restarted.pid  # healthy: kept
    assert stop_servers("ep") == 1
    stopped = endpoints.get("ep").deployed_models[0]
    assert stopped.pid is None and stopped.traffic_percentage == 100


def test_serving_environment_follows_the_vertex_contract(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    spec = {
        "imageUri": "img",
        "command": ["python3", "-m", "serve"],
        "args": ["--port=$(AIP_HTTP_PORT)", "--dir=$(MODEL_ROOT)", "$$(AIP_HTTP_PORT)"],
        "env": [
            {"name": "MODEL_ROOT", "value": "$(AIP_STORAGE_URI)/export"},
            {"name": "LATER", "value": "$(UNSET_NAME)"},
        ],
    }
    env = serving_environment(
        spec,
        port=8123,
        storage_dir=str(tmp_path),
        endpoint_id="4",
        deployed_model_id="9",
        model_display_name="recs",
        version_id="2",
    )
    assert env["AIP_HTTP_PORT"] == "8123"
    assert env["AIP_HEALTH_ROUTE"] == "/v1/endpoints/4/deployedModels/9"
    assert env["AIP_PREDICT_ROUTE"] == "/v1/endpoints/4/deployedModels/9:predict"
    assert env["AIP_STORAGE_URI"] == str(tmp_path)
    assert env["MODEL_ROOT"] == f"{tmp_path}/export"
    assert env["LATER"] == "$(UNSET_NAME)"  # unknown references stay as written


@pytest.mark.parametrize("command", [[], ["python", "-m", "serve"]])
def test_serving_launch_refuses_a_version_with_neither_package_nor_local_image(
    registry: ModelRegistry, command: list[str]
) -> None:
    spec = {"imageUri": "us-docker.pkg.dev/p/r/img:1", "command": command, "args": ["x"]}
    with pytest.raises(RegistryInputError) as refused:
        resolve_serving_launch(spec)
    message = str(refused.value)
    assert "serving_package_uri" in message and "not built by the local builder" in message
    assert "\n" not in message


def test_serving_launch_of_an_earlier_build_that_cannot_run_says_how_to_get_out(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    from vertex_retrain.backends.local.environments.builder import build_container_image

    context = tmp_path / "context"
    context.mkdir()
    (context / "serve.py").write_text("print('a')\n")
    (context / "Dockerfile").write_text(
        'FROM python:3.11-slim\nENTRYPOINT ["python", "serve.py"]\n'
    )
    earlier = build_container_image(context, image_uri="us-docker.pkg.dev/p/r/img:1").uri
    (context / "serve.py").write_text("print('b')\n")
    build_container_image(context, image_uri="us-docker.pkg.dev/p/r/img:1")
    with pytest.raises(RegistryInputError) as refused:
        resolve_serving_launch({"imageUri": earlier})
    message = str(refused.value)
    assert "run again with --no-cache" in message and "not built by" not in message
    assert "\n" not in message


def test_endpoint_deploys_an_image_built_by_the_local_builder(
    registry: ModelRegistry, endpoints: LocalEndpoints, tmp_path: Path
) -> None:
    from vertex_retrain.backends.local.environments.builder import build_container_image

    context = tmp_path / "context"
    context.mkdir()
    (context / "serve.py").write_text(ECHO_SERVER.read_text())
    (context / "Dockerfile").write_text(
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY serve.py /app/serve.py\n"
        'ENTRYPOINT ["python", "/app/serve.py"]\n'
    )
    image = build_container_image(context, image_uri="us-docker.pkg.dev/shop/serve/echo:1").uri
    artifact = register_echo(registry, "built", 40).artifact_uri
    registry.upload_version(
        "from-image",
        artifact_uri=artifact,
        container_spec={"imageUri": image, "predictRoute": "/p", "healthRoute": "/h"},
        sample_instances=[2],
    )
    endpoints.get_or_create("ep")
    deployed = endpoints.deploy("ep", "from-image")
    assert _predict(deployed.port or 0, "/p", [2]) == {
        "predictions": [{"model": "built", "value": 42}]
    }
    assert "RUN steps of its Dockerfile" in Path(deployed.log_path or "").read_text()


def test_endpoint_default_routes_reach_the_server(
    registry: ModelRegistry, endpoints: LocalEndpoints
) -> None:
    registry.upload_version(
        "recs",
        artifact_uri=register_echo(registry, "a", 0).artifact_uri,
        container_spec=echo_spec(routes=False),
        sample_instances=[3],
    )
    endpoints.get_or_create("ep")
    deployed = endpoints.deploy("ep", "recs")
    route = f"/v1/endpoints/1/deployedModels/{deployed.deployed_model_id}:predict"
    assert deployed.predict_route == route
    assert _predict(deployed.port or 0, deployed.predict_route, [3])["predictions"] == [
        {"model": "a", "value": 3}
    ]


def test_wait_until_healthy_names_the_code_of_a_server_that_exits_between_two_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.backends.local.serving import model_server

    codes = iter([None, 2])  # running at the first look, gone (its code kept) at the second
    monkeypatch.setattr(model_server, "exit_code", lambda pid: next(codes, 2))
    monkeypatch.setattr(model_server, "is_running", lambda pid, start: False)
    monkeypatch.setattr(model_server, "stop_server", lambda *args, **kwargs: None)
    log = tmp_path / "server.log"
    log.write_text("refused: missing key 'sha256'\n", encoding="utf-8")
    server = model_server.ServerProcess(1, None, 1, log, "/health", "/predict")
    with pytest.raises(model_server.ServerStartError) as caught:
        model_server.wait_until_healthy(server, timeout_s=5)
    first = str(caught.value).splitlines()[0]
    assert "exited with code 2 before its health route answered" in first
    assert "missing key 'sha256'" in first  # the server's own last line, first
    assert first.endswith("it was stopped. Last lines of " + str(log) + ":")


def test_exit_code_of_a_server_survives_the_liveness_probe_that_reaped_it() -> None:
    import subprocess
    import sys
    import time

    from vertex_retrain.backends.local.serving import server_process

    child = subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"])
    server_process.track(child)
    deadline = time.monotonic() + 30
    while server_process.process_start_time(child.pid) is not None:  # reaps it once it exits
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert server_process.exit_code(child.pid) == 2  # not lost with the reaped Popen
    assert not server_process.is_running(child.pid, None)

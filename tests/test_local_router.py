"""The endpoint router on loopback: traffic split, Vertex routes, live updates, clear errors."""

from __future__ import annotations

import http.client
import json
import math
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from data.serving.support import register_echo, stop_all_servers

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.router import (
    DEPLOYED_MODEL_HEADER,
    RouterHandle,
    start_router,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def endpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalEndpoints]:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    registry = ModelRegistry()
    for name, bias in (("a", 0), ("b", 100), ("c", 200)):
        register_echo(registry, name, bias)
    manager = LocalEndpoints()
    manager.get_or_create("shop recs")
    yield manager
    stop_all_servers(manager)


def _post(
    connection: http.client.HTTPConnection, path: str, body: bytes
) -> tuple[int, dict[str, object], str | None]:
    connection.request("POST", path, body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    return response.status, answer, response.getheader(DEPLOYED_MODEL_HEADER)


def _instances(*values: int) -> bytes:
    return json.dumps({"instances": list(values)}).encode()


def _client(router: RouterHandle) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", router.port, timeout=30)


def test_router_splits_1000_requests_by_traffic_share(endpoints: LocalEndpoints) -> None:
    a = endpoints.deploy("shop recs", "recs", "1").deployed_model_id
    b = endpoints.deploy("shop recs", "recs", "2", traffic_percentage=30).deployed_model_id
    c = endpoints.deploy("shop recs", "recs", "3", traffic_percentage=20).deployed_model_id
    split = endpoints.get("shop recs").traffic_split
    assert split == {a: 56, b: 24, c: 20}
    served: Counter[str] = Counter()
    names = {a: ("a", 0), b: ("b", 100), c: ("c", 200)}
    requests = 1000
    with start_router("shop recs", seed=1234) as router:
        client = _client(router)
        for index in range(requests):
            status, answer, header = _post(client, "/predict", _instances(index))
            assert status == 200 and header is not None
            # The header names the model that really answered (each adds its own bias).
            name, bias = names[header]
            assert answer == {"predictions": [{"model": name, "value": index + bias}]}
            served[header] += 1
        client.close()
    for model, share in split.items():
        p = share / 100
        expected, sigma = requests * p, math.sqrt(requests * p * (1 - p))
        assert abs(served[model] - expected) <= 4 * sigma, (model, served, split)


def test_router_vertex_route_adds_deployed_model_fields(endpoints: LocalEndpoints) -> None:
    deployed = endpoints.deploy("shop recs", "recs", "2")
    with start_router("shop recs") as router:
        client = _client(router)
        for path in (
            "/v1/endpoints/shop%20recs:predict",
            "/v1/endpoints/1:predict",
            "/v1/projects/p/locations/asia-east1/endpoints/shop%20recs:predict",
        ):
            status, answer, header = _post(client, path, _instances(1, 2))
            assert status == 200 and header == deployed.deployed_model_id
            assert answer == {
                "predictions": [{"model": "b", "value": 101}, {"model": "b", "value": 102}],
                "deployedModelId": deployed.deployed_model_id,
                "model": "models/recs",
                "modelDisplayName": "recs",
                "modelVersionId": "2",
            }
        status, answer, _ = _post(client, "/v1/endpoints/shop%20recs:rawPredict", _instances(1))
        assert answer == {"predictions": [{"model": "b", "value": 101}]}
        client.request("GET", "/health")
        assert json.loads(client.getresponse().read()) == {
            "endpoint": "shop recs",
            "trafficSplit": {deployed.deployed_model_id: 100},
        }
        client.close()


def _connections_to(port: int) -> int:
    """Established TCP connections whose remote end is 127.0.0.1:`port` (/proc/net/tcp)."""
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(
        1
        for line in lines
        if line.split()[3] == "01" and int(line.split()[2].split(":")[1], 16) == port
    )


def test_router_forwards_over_one_kept_alive_connection(endpoints: LocalEndpoints) -> None:
    deployed = endpoints.deploy("shop recs", "recs", "1")
    assert deployed.port is not None
    with start_router("shop recs") as router:
        for _ in range(3):  # a new client connection each time, one upstream all along
            client = _client(router)
            for index in range(10):
                assert _post(client, "/predict", _instances(index))[0] == 200
            client.close()
        assert _connections_to(deployed.port) == 1


def test_router_applies_deploy_and_rollback_without_restart(endpoints: LocalEndpoints) -> None:
    a = endpoints.deploy("shop recs", "recs", "1").deployed_model_id
    with start_router("shop recs", seed=7) as router:
        client = _client(router)
        assert {_post(client, "/predict", _instances(0))[2] for _ in range(20)} == {a}
        c = endpoints.deploy("shop recs", "recs", "3", traffic_percentage=100).deployed_model_id
        assert {_post(client, "/predict", _instances(0))[2] for _ in range(20)} == {c}
        endpoints.rollback("shop recs")
        assert {_post(client, "/predict", _instances(0))[2] for _ in range(20)} == {a}
        assert router.traffic_split() == {a: 100, c: 0}
        client.close()


def test_router_answers_bad_requests_with_clear_json_errors(endpoints: LocalEndpoints) -> None:
    endpoints.deploy("shop recs", "recs", "1")
    with start_router("shop recs", max_request_bytes=1000) as router:
        cases = [
            ("/predict", b"{not json", 400, "not valid JSON"),
            ("/predict", b'{"instance": [1]}', 400, '{"instances": [...]}'),
            ("/predict", b'{"instances": 3}', 400, "(a list)"),
            ("/nowhere", _instances(1), 404, "no route '/nowhere'"),
            ("/v1/endpoints/other:predict", _instances(1), 404, "serves endpoint 'shop recs'"),
            ("/predict", _instances(*range(600)), 413, "the limit is 1000 bytes"),
            ("/predict", b"x" * 5000, 413, "request body is 5000 bytes"),
            ("/health", _instances(1), 405, "use GET"),
        ]
        for path, body, status, message in cases:
            client = _client(router)
            got, answer, _ = _post(client, path, body)
            error = answer["error"]
            assert isinstance(error, dict)
            assert (got, error["code"]) == (status, status), (path, answer)
            assert message in str(error["message"]), (path, answer)
            client.close()
        client = _client(router)
        client.putrequest("POST", "/predict")
        client.endheaders()
        response = client.getresponse()
        assert response.status == 411 and b"Content-Length" in response.read()
        client.close()
        # After all that, it still serves.
        client = _client(router)
        assert _post(client, "/predict", _instances(1))[0] == 200
        client.close()


def test_router_reports_a_dead_model_server_as_502(endpoints: LocalEndpoints) -> None:
    deployed = endpoints.deploy("shop recs", "recs", "1")
    with start_router("shop recs") as router:
        client = _client(router)
        assert _post(client, "/predict", _instances(1))[0] == 200
        os.kill(deployed.pid or 0, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while deployed.running and time.monotonic() < deadline:
            time.sleep(0.05)
        status, answer, _ = _post(client, "/predict", _instances(1))
        assert status == 502
        assert f"deployed model {deployed.deployed_model_id}" in str(answer["error"])
        assert str(deployed.log_path) in str(answer["error"])
        client.close()
    # A new router restarts the dead server before serving.
    with start_router("shop recs") as router:
        client = _client(router)
        assert _post(client, "/predict", _instances(1))[0] == 200
        client.close()


def test_router_on_an_empty_endpoint_answers_503(endpoints: LocalEndpoints) -> None:
    with start_router("shop recs") as router:
        client = _client(router)
        status, answer, _ = _post(client, "/predict", _instances(1))
        assert status == 503
        assert "no deployed model receiving traffic" in str(answer["error"])
        client.close()


def test_router_answers_for_a_model_whose_name_is_not_latin_1(endpoints: LocalEndpoints) -> None:
    register_echo(ModelRegistry(), "d", 300, model="おすすめ\r\nSet-Cookie: x")
    endpoints.deploy("shop recs", "おすすめ\r\nSet-Cookie: x", "1")
    with start_router("shop recs") as router:
        client = _client(router)
        client.request("POST", "/predict", _instances(1), {"Content-Type": "application/json"})
        response = client.getresponse()
        assert (response.status, json.loads(response.read())) == (
            200,
            {"predictions": [{"model": "d", "value": 301}]},
        )
        # Percent-encoded (UTF-8): a header carries Latin-1 only, and never a line break.
        name = response.getheader("X-Vertex-AI-Model")
        assert name == "%E3%81%8A%E3%81%99%E3%81%99%E3%82%81%0D%0ASet-Cookie: x"
        assert response.getheader("Set-Cookie") is None
        client.close()

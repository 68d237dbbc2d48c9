"""The daily demand example's prediction server (examples/daily_demand/demand_forecast/serve.py):
its answers to good and bad requests, and what it does with hostile ones (a slow body, a
refused body sent whole before reading, integers too large to parse), and its process."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demand_forecast import serve
from tests.examples import prepared_demand_dataset, trained_demand_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prepared = prepared_demand_dataset(tmp_path_factory.mktemp("demand-serve"))
    return trained_demand_model(prepared, tmp_path_factory.mktemp("fuse"))


def _cli(module: str, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[serve.PredictionServer]:
    running = serve.start_server(
        str(model_dir), config=serve.ServeConfig("/ping", "/forecast", max_request_bytes=4096)
    )
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()


def _request(
    server: serve.PredictionServer,
    method: str,
    path: str,
    body: bytes | None = None,
    **headers: str,
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def _post(server: serve.PredictionServer, payload: Any) -> tuple[int, Any]:
    return _request(server, "POST", "/forecast", json.dumps(payload).encode())


def test_demand_serve_answers_instances_on_its_configured_routes(
    server: serve.PredictionServer,
) -> None:
    assert _request(server, "GET", "/ping") == (200, {"status": "ok"})
    base = server.model.profile.items["I01"].base_price
    day = {"store": "S01", "item": "I01", "day": "2025-01-27"}
    status, answer = _post(
        server, {"instances": [day, {**day, "price": base}, {**day, "on_promo": True}]}
    )
    assert status == 200 and len(answer["predictions"]) == 3
    listed, priced, _ = (p["units"] for p in answer["predictions"])
    assert listed == priced and listed > 0  # price defaults to the item's list price
    rows = serve.parse_instances(json.dumps({"instances": [{**day, "on_promo": True}]}).encode(),
                                 server.model)  # fmt: skip
    assert rows == [("S01", "I01", dt.date(2025, 1, 27), base, True)]


@pytest.mark.parametrize(
    ("payload", "status", "words"),
    [
        (b"{not json", 400, "body is not valid JSON"),
        ({"rows": []}, 400, 'expected {"instances": [...]}'),
        ({"instances": []}, 400, "1 to 1000 per request"),
        ({"instances": [7]}, 400, "instances[0] is 7; expected an object"),
        ({"instances": [{"store": "S9", "item": "I01", "day": "2025-01-27"}]}, 400,
         'instances[0].store is "S9"; expected a store the model knows: S01, S02, S03'),
        ({"instances": [{"store": "S01", "item": "I99", "day": "2025-01-27"}]}, 400,
         "instances[0].item is \"I99\""),
        ({"instances": [{"store": "S01", "item": "I01", "day": "27/01/2025"}]}, 400,
         "instances[0].day is \"27/01/2025\"; expected a date as YYYY-MM-DD"),
        ({"instances": [{"store": "S01", "item": "I01", "day": "2025-01-27", "price": -1}]},
         400, "instances[0].price is -1; expected a price > 0"),
        ({"instances": [{"store": "S01", "item": "I01", "day": "2025-01-27", "on_promo": 1}]},
         400, "instances[0].on_promo is 1; expected true or false"),
        ({"instances": [{"store": "S01", "item": "I01", "day": "2025-01-27", "promo": True}]},
         400, "instances[0].promo is true; expected only the fields store, item, day"),
        ({"instances": [{"store": "S01"}] * 300}, 413, "at most 4096 bytes"),
    ],
)  # fmt: skip
def test_demand_serve_refuses_bad_requests_naming_what_is_wrong(
    server: serve.PredictionServer, payload: Any, status: int, words: str
) -> None:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    answered, answer = _request(server, "POST", "/forecast", body)
    assert answered == status and words in answer["error"], answer


def test_demand_serve_refuses_wrong_routes_methods_and_unsized_bodies(
    server: serve.PredictionServer,
) -> None:
    assert _request(server, "GET", "/predict")[0] == 404  # the configured route is /forecast
    assert _request(server, "GET", "/forecast") == (405, {"error": "use POST for '/forecast'"})
    assert _request(server, "POST", "/ping", b"{}")[0] == 405
    status, answer = _request(server, "POST", "/forecast", None, **{"Transfer-Encoding": "chunked"})
    assert status == 411 and "Content-Length" in answer["error"]


def test_demand_serve_flags_default_to_the_vertex_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {
        "AIP_STORAGE_URI": "gs://b/m",
        "AIP_HTTP_PORT": "9123",
        "AIP_HEALTH_ROUTE": "/h",
        "AIP_PREDICT_ROUTE": "/p",
        "DEMAND_SERVE_HOST": "0.0.0.0",
        "DEMAND_MAX_REQUEST_BYTES": "99",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LOCAL_BIND_HOST", raising=False)
    args = serve.build_parser().parse_args([])
    assert (args.model_dir, args.port, args.health_route, args.predict_route) == (
        "gs://b/m",
        9123,
        "/h",
        "/p",
    )
    assert (args.host, args.max_request_bytes) == ("0.0.0.0", 99)
    monkeypatch.setenv("LOCAL_BIND_HOST", "127.0.0.1")  # the local backend's wins
    assert serve.build_parser().parse_args([]).host == "127.0.0.1"


def test_demand_serve_process_serves_until_sigterm_then_exits_0(
    model_dir: Path, tmp_path: Path
) -> None:
    env = {"AIP_STORAGE_URI": str(model_dir), "AIP_HTTP_PORT": "0", "LOCAL_BIND_HOST": "127.0.0.1"}
    log = tmp_path / "serve.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "demand_forecast.serve"],
            env={**os.environ, **env},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "serving" not in log.read_text() and process.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert "on 127.0.0.1:" in log.read_text()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    missing = _cli("demand_forecast.serve", env={"AIP_STORAGE_URI": str(tmp_path / "none")})
    assert missing.returncode == 2 and "cannot load the model" in missing.stderr


DAY = {"store": "S01", "item": "I01", "day": "2025-01-27"}


@pytest.fixture(scope="module")
def impatient(model_dir: Path) -> Iterator[serve.PredictionServer]:
    """A server with the default size limit that waits at most 0.301 s for a 1000-byte body."""
    config = serve.ServeConfig(body_grace_s=0.3, min_body_bytes_per_s=10**6)
    running = serve.start_server(str(model_dir), config=config)
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"instances": [{"price": 1%s}]}' % (b"0" * 4300), "Exceeds the limit (4300 digits)"),
        (json.dumps({"instances": [{**DAY, "price": 10**400}]}).encode(), "instances[0].price"),
    ],
    ids=["4301 digits", "beyond a float"],
)
def test_demand_serve_answers_integers_too_large_with_400(
    impatient: serve.PredictionServer, body: bytes, words: str
) -> None:
    status, answer = _request(impatient, "POST", "/predict", body)
    assert status == 400 and words in answer["error"], answer


def test_demand_serve_refuses_a_content_length_too_long_to_be_a_number(
    server: serve.PredictionServer,
) -> None:
    # Python's int() refuses more than 4,300 digits: a 400, not a dropped connection.
    for length in ("9" * 5000, "9" * 19, "\N{SUPERSCRIPT TWO}".encode().decode("latin-1")):
        status, answer = _request(server, "POST", "/forecast", b"{}", **{"Content-Length": length})
        assert status == 400 and "is not a number" in answer["error"], length


def test_demand_serve_lets_a_closing_client_read_its_413(server: serve.PredictionServer) -> None:
    # urllib sends `Connection: close` and the whole body before it reads the answer.
    url = f"http://127.0.0.1:{server.server_address[1]}/forecast"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(url, data=b" " * 20_000_000), timeout=60)
    assert refused.value.code == 413
    assert "at most 4096 bytes" in json.loads(refused.value.read())["error"]


def test_demand_serve_cuts_off_a_slow_body_and_answers_others_meanwhile(
    impatient: serve.PredictionServer,
) -> None:
    port = impatient.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=20) as slow:
        slow.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        # Another client is answered while the slow one holds its own thread.
        assert (
            _request(impatient, "POST", "/predict", json.dumps({"instances": [DAY]}).encode())[0]
            == 200
        )
        response = http.client.HTTPResponse(slow)
        response.begin()
        answer = json.loads(response.read())
    assert response.status == 408
    assert answer["error"] == "the request body did not arrive within 0.301 s"

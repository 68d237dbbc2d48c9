"""Hostile prediction requests against the trainer's server and the endpoint router.

Oversized, deeply nested, malformed and wrongly typed requests each get a clear JSON error
with a 4xx status, in the one error shape `{"error": {"code", "status", "message"}}`;
afterwards (and while stalled clients hold connections open) a good
request is still answered within `ANSWER_WITHIN_S`. The router runs in front of the real
trainer server, deployed on the local backend.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from data.hostile.support import (
    GOOD_BODY,
    GOOD_INSTANCE,
    error_message,
    finish_stalled,
    listening_addresses,
    post,
    router_over_trainer_server,
    stalled_connections,
    write_tiny_artifact,
)
from guarded_asgi.app import Limits

from trainer.serve import RunningServer, ServeConfig, start_server
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.router import RouterHandle

pytestmark = pytest.mark.slow

DEEP = b"[" * 100_000 + b"]" * 100_000
HUGE_INTEGER = b'{"instances": [{"member_id": 1%s, "store_id": 1}]}' % (b"0" * 4300)


def _body(**changes: Any) -> bytes:
    return json.dumps({"instances": [{**GOOD_INSTANCE, **changes}]}).encode()


def _without(field: str) -> bytes:
    instance = {k: v for k, v in GOOD_INSTANCE.items() if k != field}
    return json.dumps({"instances": [instance]}).encode()


# (body, expected status, fragment of the error message). Ordinary malformed instances
# (unknown store, k=0, unknown field, not JSON) are in test_trainer_serving.py.
SERVER_CASES: list[tuple[bytes, int, str]] = [
    (DEEP, 400, "nested too deeply"),
    (b'{"instances": ' + DEEP + b"}", 400, "nested too deeply"),
    (b"\xff\xfe\x00garbage", 400, "not valid JSON"),
    (b"", 400, "not valid JSON"),
    (b'"instances"', 400, '{"instances": [...]}'),
    (b'{"instances": {"member_id": 11}}', 400, '{"instances": [...]}'),
    (json.dumps({"instances": [GOOD_INSTANCE] * 1001}).encode(), 400, "at most 1000"),
    (b'{"instances": [[11, 1]]}', 400, "expected an object with member_id"),
    (_body(member_id="11"), 400, "'member_id' must be an integer, got '11'"),
    (_body(member_id=True), 400, "'member_id' must be an integer"),
    (_body(member_id=11.5), 400, "'member_id' must be an integer"),
    (_body(member_id=None), 400, "'member_id' must be an integer"),
    (_body(member_id=2**70), 400, "'member_id' must fit in 64 bits"),
    (_body(store_id=-(2**64)), 400, "'store_id' must fit in 64 bits"),
    (_without("store_id"), 400, "'store_id' must be an integer, got None"),
    (_body(timestamp=20260701), 400, "'timestamp' must be an ISO 8601 string"),
    (_body(timestamp="next tuesday"), 400, "is not ISO 8601"),
    (_body(timestamp="x" * 50_000), 400, "is not ISO 8601"),
    (_body(k=10**9), 400, "'k' must be between 1 and 12"),
    (_body(k="3"), 400, "'k' must be an integer"),
    (b'{"instances": [{"member_id": NaN, "store_id": 1, "timestamp": "2026-07-01"}]}', 400, "nan"),
    # Python refuses to parse an integer of more than 4,300 digits: a 400, never a 500.
    (HUGE_INTEGER, 400, "not valid JSON: Exceeds the limit (4300 digits)"),
]


# Stalled clients finish their bodies whenever the test gets to it: their deadline is long.
PATIENT = Limits(body_grace_s=120.0, body_timeout_s=120.0)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    model_dir = write_tiny_artifact(tmp_path_factory.mktemp("hostile-model"))
    with start_server(model_dir, config=ServeConfig(limits=PATIENT)) as running:
        yield running


def _port(running: RunningServer) -> int:
    return int(running.url.rsplit(":", 1)[1])


def test_prediction_server_answers_hostile_bodies_with_clear_400s(server: RunningServer) -> None:
    port = _port(server)
    for body, status, fragment in SERVER_CASES:
        got, answer = post(port, "/predict", body)
        assert (got, fragment in error_message(answer)) == (status, True), (body[:80], answer)
    got, answer = post(port, "/predict", GOOD_BODY)
    assert got == 200 and len(answer["predictions"][0]["drinks"]) == 3


# Malformed lengths are refused by the HTTP parser (400, the one error shape); the 20-digit
# cap also stops a 5,000-digit length before Python's int() limit (4,300 digits) is reached.
BAD_LENGTHS = [
    ("-5", 400, "Content-Length (1 to 20 digits)"),
    ("\N{SUPERSCRIPT TWO}", 400, "Content-Length (1 to 20 digits)"),
    ("12abc", 400, "Content-Length (1 to 20 digits)"),
    ("9" * 5000, 400, "Content-Length (1 to 20 digits)"),
    (None, 411, "a Content-Length header with the body size is required"),
]


@pytest.mark.parametrize(
    ("content_length", "status", "fragment"),
    [*BAD_LENGTHS, (str(10**12), 413, "the limit is 1500000 bytes")],
)
def test_prediction_server_refuses_bad_content_length_before_reading(
    server: RunningServer, content_length: str | None, status: int, fragment: str
) -> None:
    port = _port(server)
    got, answer = post(port, "/predict", b"", content_length=content_length)
    assert got == status and fragment in error_message(answer)
    assert post(port, "/predict", GOOD_BODY)[0] == 200


def test_prediction_server_keeps_answering_while_clients_stall(server: RunningServer) -> None:
    port = _port(server)
    stalled = stalled_connections(port, "/predict", 20)
    try:
        assert post(port, "/predict", GOOD_BODY)[0] == 200
        # The stalled clients are answered too once their bodies arrive (not JSON: 400).
        assert {finish_stalled(sock) for sock in stalled} == {400}
    finally:
        for sock in stalled:
            sock.close()


# ---- the router, in front of the real trainer server deployed on the local backend ----


@pytest.fixture(scope="module")
def router_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-router")


@pytest.fixture(scope="module")
def router(router_root: Path) -> Iterator[RouterHandle]:
    with router_over_trainer_server(
        router_root, max_request_bytes=300_000, limits=PATIENT
    ) as handle:
        yield handle


ROUTER_CASES: list[tuple[bytes, int, str]] = [
    (DEEP, 400, "nested too deeply"),
    (b'{"instances": ' + DEEP + b"}", 400, "nested too deeply"),
    (b"\xff\xfe\x00garbage", 400, "not valid JSON"),
    (b"[1, 2]", 400, '{"instances": [...]}'),
    (b'{"instances": "all"}', 400, '{"instances": [...]}'),
    (b"x" * 400_000, 413, "request body is 400000 bytes; the limit is 300000 bytes"),
    (HUGE_INTEGER, 400, "not valid JSON: Exceeds the limit (4300 digits)"),
    # Past the router, the trainer server refuses wrong types; the router passes it on.
    (_body(member_id="11"), 400, "'member_id' must be an integer"),
    (_body(timestamp=None), 400, "'timestamp' must be an ISO 8601 string"),
]


def test_router_answers_hostile_bodies_with_clear_errors(router: RouterHandle) -> None:
    for path in ("/predict", "/v1/endpoints/shop recs:predict".replace(" ", "%20")):
        for body, status, fragment in ROUTER_CASES:
            got, answer = post(router.port, path, body)
            assert (got, fragment in error_message(answer)) == (status, True), (path, body[:80])
    got, answer = post(router.port, "/predict", GOOD_BODY)
    assert got == 200 and len(answer["predictions"][0]["drinks"]) == 3


@pytest.mark.parametrize(
    ("path", "content_length", "status", "fragment"),
    [
        *(("/predict", length, status, fragment) for length, status, fragment in BAD_LENGTHS),
        ("/predict", str(10**12), 413, "the limit is 300000 bytes"),
        ("/v1/endpoints/../../etc/passwd:predict", "auto", 404, "no route"),
        ("/v1/endpoints/other:predict", "auto", 404, "serves endpoint 'shop recs'"),
    ],
)
def test_router_refuses_bad_headers_and_paths(
    router: RouterHandle, path: str, content_length: str | None, status: int, fragment: str
) -> None:
    got, answer = post(router.port, path, GOOD_BODY, content_length=content_length)
    assert got == status and fragment in error_message(answer)
    assert post(router.port, "/predict", GOOD_BODY)[0] == 200


def test_router_keeps_answering_while_clients_stall(router: RouterHandle) -> None:
    stalled = stalled_connections(router.port, "/predict", 20)
    try:
        assert post(router.port, "/predict", GOOD_BODY)[0] == 200
        # The stalled clients are answered too once their bodies arrive (not JSON: 400).
        assert {finish_stalled(sock) for sock in stalled} == {400}
    finally:
        for sock in stalled:
            sock.close()


def test_router_and_the_server_it_deployed_listen_on_loopback_only(
    router: RouterHandle, router_root: Path
) -> None:
    endpoints = LocalEndpoints(router_root / "registry.db")
    (deployed,) = endpoints.get("shop recs").deployed_models
    assert deployed.port is not None
    assert listening_addresses(router.port) == {"127.0.0.1"}
    assert listening_addresses(deployed.port) == {"127.0.0.1"}


def test_router_survives_a_client_that_disconnects_mid_body(router: RouterHandle) -> None:
    for sock in stalled_connections(router.port, "/predict", 10):
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    assert post(router.port, "/predict", GOOD_BODY)[0] == 200

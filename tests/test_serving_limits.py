"""The serving stack's limits on both servers: the trainer's prediction server, and the
endpoint router in front of a trainer server deployed on the local backend.

Slow clients are disconnected, bursts past the concurrency cap get 503 while the server stays
healthy, a 100 MB body gets a readable 413, every error has one shape, and SIGTERM lets a
request in flight finish. Socket timeouts here are liveness bounds, never speed claims.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from data.hostile.support import (
    ENDPOINT,
    GOOD_BODY,
    GOOD_INSTANCE,
    REPO,
    error_message,
    expect_continue,
    finish_continued,
    post,
    raw_answer,
    raw_exchange,
    router_over_trainer_server,
    write_tiny_artifact,
)
from guarded_asgi.app import STATUS_NAMES, Limits

from trainer.predictor import Predictor
from trainer.serve import PredictionService, RunningServer, ServeConfig, start_server
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.model_server import free_port
from vertex_retrain.backends.local.serving.router import start_router

pytestmark = pytest.mark.slow

CAP = 2
LIMITS = Limits(
    head_timeout_s=0.5,
    max_concurrent_requests=CAP,
    max_arriving_bodies=2,
    body_grace_s=60.0,
    body_timeout_s=60.0,
)
LARGE_BODY = json.dumps({"instances": [GOOD_INSTANCE] * 1000}).encode()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_artifact(tmp_path_factory.mktemp("limits-model"))


@pytest.fixture(scope="module")
def ports(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("limits-router")
    with (
        start_server(model_dir, config=ServeConfig(limits=LIMITS)) as server,
        router_over_trainer_server(root, limits=LIMITS) as router,
    ):
        yield {"server": server.port, "router": router.port, "router_root": root}


@pytest.fixture(params=["server", "router"])
def port(request: pytest.FixtureRequest, ports: dict[str, Any]) -> int:
    return int(ports[request.param])


def _trickle_until_closed(port: int, max_bytes: int = 600) -> int | None:
    """Send a request head one byte at a time; return how many went before the server
    closed the connection (None if it never did)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        for sent in range(max_bytes):
            try:
                sock.sendall(b"a")
                readable, _, _ = select.select([sock], [], [], 0.05)
                if readable and sock.recv(1) == b"":
                    return sent
            except (BrokenPipeError, ConnectionResetError):
                return sent
    return None


def test_servers_disconnect_clients_that_stall_or_trickle_their_headers(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as stalled:
        stalled.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Le")
        # Meanwhile a good request is answered...
        assert post(port, "/predict", GOOD_BODY)[0] == 200
        # ...and the stalled client is disconnected without an answer.
        assert stalled.recv(1) == b""
    # Data does not reset the deadline: a head sent a byte at a time is cut off too, long
    # before the 16 KiB header limit would stop it.
    assert _trickle_until_closed(port) is not None


def test_servers_answer_a_client_that_half_closes_after_its_request(port: int) -> None:
    head = b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(GOOD_BODY)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + GOOD_BODY)
        sock.shutdown(socket.SHUT_WR)  # nothing more to send; the answer must still come
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 200 and json.loads(response.read())["predictions"]
        response.close()


def _accept_queue(port: int) -> int:
    """Connections waiting in the accept queue of the socket listening on `port` (Linux)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:  # 0A: LISTEN
            return int(fields[4].split(":")[1], 16)  # rx_queue: the accept backlog
    raise AssertionError(f"nothing listens on port {port}")


@contextlib.contextmanager
def _one_request_held(kind: str, model_dir: Path, router_root: Path) -> Iterator[int]:
    """A server of `kind` whose one request slot (cap 1) is taken by a whole request that
    cannot finish until the block ends: the model is gated (the prediction server) or the
    model server behind is stopped (the router). Yields the server's port."""
    limits = Limits(max_concurrent_requests=1)
    release = threading.Event()
    with contextlib.ExitStack() as stack:
        if kind == "server":
            predictor = Predictor(model_dir)
            entered, predict = threading.Event(), predictor.predict

            def gated(instances: list[Any]) -> list[dict[str, Any]]:
                entered.set()
                release.wait(60)
                return predict(instances)

            predictor.predict = gated  # type: ignore[method-assign]
            service = PredictionService(predictor, ServeConfig(limits=limits))
            port = stack.enter_context(RunningServer(service, "127.0.0.1", 0)).port
            is_held = entered.is_set
        else:
            db = router_root / "registry.db"
            (deployed,) = LocalEndpoints(db).get(ENDPOINT).deployed_models
            assert deployed.pid is not None and deployed.port is not None
            router = stack.enter_context(start_router(ENDPOINT, db_path=db, limits=limits))
            port, model_port, group = router.port, deployed.port, deployed.pid
            os.killpg(group, signal.SIGSTOP)  # the keeper's group: keeper and server
            stack.callback(os.killpg, group, signal.SIGCONT)
            stack.callback(release.set)  # the stopped server must go on first

            def is_held() -> bool:  # the router's forward waits for the stopped server
                return _accept_queue(model_port) > 0

        pool = stack.enter_context(ThreadPoolExecutor(max_workers=1))
        held = pool.submit(post, port, "/predict", LARGE_BODY, timeout_s=60)
        for _ in range(600):
            if is_held() or held.done():
                break
            time.sleep(0.05)
        assert is_held(), held.result()
        yield port
        release.set()
        if kind == "router":
            os.killpg(group, signal.SIGCONT)
        status, answer = held.result()
        assert status == 200 and len(answer["predictions"]) == 1000


@pytest.mark.parametrize("kind", ["server", "router"])
def test_servers_answer_a_burst_past_the_cap_with_503_and_stay_healthy(
    kind: str, model_dir: Path, ports: dict[str, Any]
) -> None:
    with _one_request_held(kind, model_dir, ports["router_root"]) as port:
        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(lambda _: post(port, "/predict", LARGE_BODY), range(6)))
        assert {status for status, _ in answers} == {503}
        assert all("in flight" in error_message(answer) for _, answer in answers)
        health = raw_exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", method="GET")
        assert health is not None and health[0] == 200


def test_servers_keep_slow_bodies_from_taking_the_request_slots(port: int) -> None:
    # More slow senders than the cap and the bodies the server waits for together: the
    # extra ones are refused at once, the others hold no request slot, and a request that
    # arrives whole is answered (on the prediction server and the router alike).
    head = b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"
    senders = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(5)]
    try:
        for sock in senders:
            sock.sendall(head)
        refused = []
        while len(refused) < 5 - LIMITS.max_arriving_bodies:
            readable, _, _ = select.select(senders, [], [], 30)
            assert readable, "no slow sender was refused"
            for sock in readable:
                senders.remove(sock)
                refused.append(raw_answer(sock))
                sock.close()
        assert {status for status, _ in refused} == {503}
        assert "bodies are still arriving" in error_message(refused[0][1])
        for _ in range(LIMITS.max_concurrent_requests + 1):
            assert post(port, "/predict", GOOD_BODY)[0] == 200
    finally:
        for sock in senders:
            sock.close()


def test_servers_let_a_closing_client_read_its_413(port: int) -> None:
    # urllib sends `Connection: close` and the whole body before reading the answer.
    request = urllib.request.Request(f"http://127.0.0.1:{port}/predict", data=b" " * 20_000_000)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    assert refused.value.code == 413
    assert "the limit is 1500000 bytes" in error_message(json.loads(refused.value.read()))


def test_servers_answer_a_100_mb_body_with_a_readable_413(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        # http.client sends the whole body before it reads: without the server discarding
        # it, this would end in a broken pipe instead of the answer.
        connection.request("POST", "/predict", b" " * 100_000_000)
        response = connection.getresponse()
        assert response.status == 413
        assert "the limit is 1500000 bytes" in error_message(json.loads(response.read()))
        # The connection is still good.
        connection.request("POST", "/predict", GOOD_BODY)
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["predictions"]
    finally:
        connection.close()


PROVOCATIONS = {
    "unknown route": b"POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    "wrong method": b"PUT /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    "no length": b"POST /predict HTTP/1.1\r\nHost: x\r\n\r\n",
    "too large": b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n",
    "not JSON": b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n{x]",
    "not HTTP": b"\x16\x03\x01 hello\r\n\r\n",
    "5000-digit length": b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: "
    + b"9" * 5000
    + b"\r\n\r\n",
}


def _errors(port: int) -> dict[str, tuple[int, str]]:
    found = {}
    for name, data in PROVOCATIONS.items():
        answer = raw_exchange(port, data)
        assert answer is not None, name
        status, body = answer
        assert error_message(body), name
        assert body["error"]["code"] == status, (name, body)
        assert body["error"]["status"] == STATUS_NAMES[status], (name, body)
        found[name] = (status, body["error"]["status"])
    return found


def test_both_servers_answer_errors_in_one_shape(ports: dict[str, Any]) -> None:
    server, router = _errors(ports["server"]), _errors(ports["router"])
    assert server == router
    assert {status for status, _ in server.values()} == {400, 404, 405, 411, 413}


HUGE_HEADER = b"X-Big: " + b"a" * 20_000


@pytest.mark.parametrize("ending", [b"\r\n\r\n", b""], ids=["complete", "unfinished"])
def test_servers_refuse_a_request_head_over_the_limit(port: int, ending: bytes) -> None:
    # The parser keeps an unfinished header to itself: the size is bounded all the same.
    head = b"POST /predict HTTP/1.1\r\nHost: x\r\n" + HUGE_HEADER + ending
    answer = raw_exchange(port, head)
    assert answer is not None and answer[0] == 400
    assert f"at most {LIMITS.max_header_bytes} bytes" in error_message(answer[1])


def test_servers_answer_head_requests_on_a_kept_alive_connection(port: int) -> None:
    # A HEAD answer has no body: its head must still go out on its own.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for method in ("HEAD", "HEAD", "GET"):
            connection.request(method, "/health")
            response = connection.getresponse()
            body = response.read()
            assert response.status in {200, 405} and (body == b"") is (method == "HEAD")
    finally:
        connection.close()


def test_servers_refuse_an_empty_request_head(port: int) -> None:
    answer = raw_exchange(port, b"\r\n\r\n\r\n")
    assert answer is not None and answer[0] == 400 and error_message(answer[1])


class _Stream(io.BytesIO):
    """Everything a server sent, read as consecutive answers (reading one does not close it)."""

    def close(self) -> None:
        pass

    def makefile(self, mode: str) -> _Stream:
        return self


def test_servers_answer_a_request_before_the_garbage_pipelined_after_it(port: int) -> None:
    head = b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(GOOD_BODY)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + GOOD_BODY + b"\x16\x03\x01 not http\r\n\r\n")
        received = b"".join(iter(lambda: sock.recv(65536), b""))  # until the server closes
    stream, answers = _Stream(received), []
    for _ in range(2):
        response = http.client.HTTPResponse(stream)  # type: ignore[arg-type]
        response.begin()
        answers.append((response.status, json.loads(response.read())))
    assert answers[0][0] == 200 and answers[0][1]["predictions"]
    assert answers[1][0] == 400 and error_message(answers[1][1])


def test_prediction_server_refuses_connections_past_the_cap(model_dir: Path) -> None:
    limits = Limits(max_connections=3)
    with start_server(model_dir, config=ServeConfig(limits=limits)) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        try:
            status, answer = post(server.port, "/predict", GOOD_BODY)
            assert status == 503 and "too many open connections" in error_message(answer)
        finally:
            for sock in idle:
                sock.close()
        # Closing the idle connections frees the room (the server notices asynchronously).
        for _ in range(100):
            if post(server.port, "/predict", GOOD_BODY)[0] == 200:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the server kept refusing after the connections closed")


def test_router_cli_finishes_a_request_in_flight_on_sigterm(tmp_path: Path) -> None:
    with router_over_trainer_server(tmp_path / "root"):
        port = free_port()
        command = [sys.executable, "-m", "vertex_retrain.cli.main", "serve", ENDPOINT]
        router = subprocess.Popen(
            [*command, "--port", str(port)],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            for _ in range(600):
                assert router.poll() is None, router.communicate()[0]
                try:
                    if post(port, "/predict", GOOD_BODY)[0] == 200:
                        break
                except (ConnectionRefusedError, ConnectionResetError):
                    time.sleep(0.1)
            in_flight = expect_continue(port, "/predict", len(GOOD_BODY))
            router.send_signal(signal.SIGTERM)
            status, answer = finish_continued(in_flight, GOOD_BODY)
            assert status == 200 and answer["predictions"]
        finally:
            router.send_signal(signal.SIGTERM)
            output = router.communicate(timeout=60)[0]
        assert router.returncode == 0, output


def test_server_config_runs_on_uvloop() -> None:
    import uvloop
    from guarded_asgi.server import server_config

    factory = server_config(lambda scope, receive, send: None, Limits()).get_loop_factory()
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()

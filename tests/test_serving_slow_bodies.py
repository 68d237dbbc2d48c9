"""Slow request bodies on `guarded_asgi`, the server both prediction servers share; a tiny
app stands in for either.

A request reaches the application only once its body has arrived: a client that sends its
body slowly holds a connection and a buffer, never an application slot; the bodies still
arriving are capped across the server (beyond, 503) and each has its own deadline (408).
Malformed chunked framing is answered at once, and an answer that closes the connection
waits for the body it refused, so the client reads it. Socket timeouts here are liveness
bounds, never speed claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import select
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from guarded_asgi.app import (
    Answer,
    GuardedApp,
    Limits,
    Request,
    json_response,
    read_body,
)
from guarded_asgi.server import BackgroundServer

pytestmark = pytest.mark.slow

SLOW_HEAD = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
LIVENESS_S = 20.0


class _App:
    """Echoes the body's size; `/hold` waits until `release` is set (counting who waits)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.release = threading.Event()
        self.holding = threading.Semaphore(0)

    async def handle(self, request: Request) -> Answer:
        body = await read_body(request, self.limits)
        if request.path == "/hold":
            self.holding.release()
            await asyncio.to_thread(self.release.wait, LIVENESS_S)
        return json_response(200, json.dumps({"bytes": len(body)}).encode())


@contextlib.contextmanager
def _serve(limits: Limits) -> Iterator[tuple[int, _App]]:
    app = _App(limits)
    server = BackgroundServer(GuardedApp(app.handle, limits), limits, "127.0.0.1", 0, "test")
    try:
        yield server.port, app
    finally:
        app.release.set()
        server.stop()


def _slow_sender(port: int, head: bytes = SLOW_HEAD) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=LIVENESS_S)
    sock.sendall(head + b"{")
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict[str, Any], str | None]:
    """The status, JSON and `Connection` header of the next answer on `sock`."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, json.loads(response.read()), response.getheader("Connection")


def _whole(port: int, path: str = "/echo", body: bytes = b"{}") -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=LIVENESS_S)
    try:
        connection.request("POST", path, body)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_runner_keeps_slow_bodies_out_of_the_application_s_slots() -> None:
    # One application slot, room for two bodies still arriving: six slow senders take the
    # two places and four are refused; a request that arrives whole still gets the slot.
    limits = Limits(
        max_concurrent_requests=1, max_arriving_bodies=2, body_grace_s=60.0, body_timeout_s=60.0
    )
    with _serve(limits) as (port, _app):
        senders = [_slow_sender(port) for _ in range(6)]
        try:
            refused = []
            while len(refused) < 4:
                readable, _, _ = select.select(senders, [], [], LIVENESS_S)
                assert readable, "no slow sender was refused"
                for sock in readable:
                    senders.remove(sock)
                    refused.append(_answer(sock))
                    sock.close()
            assert {(status, close) for status, _, close in refused} == {(503, "close")}
            assert "2 request bodies are still arriving" in refused[0][1]["error"]["message"]
            assert _whole(port) == 200
            # The two in place are answered once their bodies end.
            for sock in senders:
                sock.sendall(b" " * 998 + b"}")
                assert _answer(sock)[:2] == (200, {"bytes": 1000})
        finally:
            for sock in senders:
                sock.close()


def test_runner_cuts_off_a_body_past_its_deadline_and_answers_whole_requests() -> None:
    limits = Limits(max_concurrent_requests=1, body_grace_s=0.2, min_body_bytes_per_s=10**6)
    with _serve(limits) as (port, _app):
        with _slow_sender(port) as slow:
            status, body, close = _answer(slow)
            assert slow.recv(1) == b""  # closed at once: nothing more is read from it
        assert (status, close) == (408, "close")
        assert body["error"]["message"] == "the request body did not arrive within 0.201 s"
        assert _whole(port) == 200


def test_runner_holds_an_application_slot_only_for_whole_requests() -> None:
    # The cap still applies to requests the application answers: a whole request that waits
    # in the handler holds the one slot, and the next whole request gets 503.
    limits = Limits(max_concurrent_requests=1)
    with _serve(limits) as (port, app):
        waiting = threading.Thread(target=_whole, args=(port, "/hold"))
        waiting.start()
        try:
            assert app.holding.acquire(timeout=LIVENESS_S)
            assert _whole(port) == 503
        finally:
            app.release.set()
            waiting.join()
        assert _whole(port) == 200


def test_runner_answers_malformed_chunked_framing_at_once() -> None:
    # Not after the body deadline: nothing waits for a body whose framing is already broken.
    limits = Limits(body_grace_s=60.0, body_timeout_s=60.0)
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    with _serve(limits) as (port, _app):
        with socket.create_connection(("127.0.0.1", port), timeout=LIVENESS_S) as sock:
            sock.sendall(head + b"zz\r\n")
            status, body, close = _answer(sock)
            assert sock.recv(1) == b""
        assert (status, close) == (400, "close") and "chunked framing" in body["error"]["message"]


@pytest.mark.parametrize("size", [1000, 1001], ids=["at the limit", "over it"])
def test_runner_bounds_a_chunked_body_it_buffers(size: int) -> None:
    limits = Limits(max_body_bytes=1000)
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (size, b"x" * size)
    with _serve(limits) as (port, _app):
        with socket.create_connection(("127.0.0.1", port), timeout=LIVENESS_S) as sock:
            sock.sendall(head + chunked)
            status, body, _ = _answer(sock)
        assert status == (200 if size == 1000 else 413), body


def test_runner_sends_100_continue_for_a_body_it_waits_for() -> None:
    head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    with (
        _serve(Limits()) as (port, _app),
        socket.create_connection(("127.0.0.1", port), timeout=LIVENESS_S) as sock,
    ):
        sock.sendall(head)
        assert sock.recv(25) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"{}")
        assert _answer(sock)[:2] == (200, {"bytes": 2})


TOO_LARGE = b" " * 20_000_000  # more than the kernel buffers while the server reads nothing


def test_runner_lets_a_closing_client_read_its_413() -> None:
    # urllib always sends `Connection: close` and writes the whole body before reading: the
    # server waits for the body's end before closing, or the client finds a broken pipe.
    limits = Limits(max_body_bytes=1000)
    with _serve(limits) as (port, _app):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/echo", data=TOO_LARGE)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=LIVENESS_S)
        assert refused.value.code == 413
        assert "the limit is 1000 bytes" in json.loads(refused.value.read())["error"]["message"]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=LIVENESS_S)
        try:
            connection.request("POST", "/echo", TOO_LARGE, {"Connection": "close"})
            response = connection.getresponse()
            assert response.status == 413 and response.getheader("Connection") == "close"
            assert "the limit is 1000 bytes" in response.read().decode()
        finally:
            connection.close()

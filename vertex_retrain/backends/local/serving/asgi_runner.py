"""Running a guarded ASGI application on uvicorn: timeouts, connection cap, graceful stop.

This module exists twice, byte for byte: `trainer/asgi_runner.py` (the serving image holds only
the trainer) and
`vertex_retrain/backends/local/serving/asgi_runner.py` (the library never
imports the trainer). `tests/test_serving_limits.py` fails when the two copies differ.

uvicorn speaks HTTP/1.1 through httptools (llhttp, in C), which refuses a Content-Length that
is not a number below 2**64, but bounds neither the request head nor the time it may take: a
client could hold a connection forever by sending its headers a byte at a time, or send
megabytes of one header. The protocol below bounds the head (`Limits.max_header_bytes`) and
adds a deadline for it, closes connections past `Limits.max_connections` after a 503, bounds
how much of a refused body is discarded, answers a client that half-closes after its request,
and answers malformed requests in the one error shape.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, ClassVar

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .asgi_guard import Limits, error_body, json_response

# llhttp checks Content-Length's digits; h11, uvicorn's other parser, allowed at most 20.
_MAX_LENGTH_DIGITS = 20


class _HeadTooLargeError(Exception):
    """The request head is longer than `Limits.max_header_bytes` (or a length too long)."""


async def _overloaded(scope: Scope, receive: Receive, send: Send) -> None:
    message = "the server has too many open connections; retry shortly"
    headers = {"Connection": "close", "Retry-After": "1"}
    await json_response(503, error_body(503, message), headers).send(send)


class _OneWrite:
    """The transport as a response sees it: the head is held until the first body message,
    so head and body go out in one write (one segment, one wake-up of the client instead of
    two). Every answer of these servers sends its body right after its head."""

    __slots__ = ("_head", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._head = b""

    def write(self, data: bytes) -> None:
        if self._head:
            data, self._head = self._head + data, b""
        elif data.startswith(b"HTTP/1.1 ") and not data.startswith(b"HTTP/1.1 1"):
            self._head = data  # not 100 Continue: the client waits for that one
            return
        self._transport.write(data)

    def flush(self) -> None:
        """Sends a held head (an answer to HEAD has no body message that would)."""
        if self._head:
            self.write(b"")

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()


class _GuardedProtocol(HttpToolsProtocol):
    limits: ClassVar[Limits] = Limits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = False  # a request head is arriving (llhttp has begun a message)
        self._in_body = False  # the current request's body is still arriving
        self._head_chunks = 0  # bytes of the chunks that ended inside the head arriving
        self._head_parsed = 0  # bytes of its request target and complete headers
        self._messages = 0  # requests whose body has ended on this connection
        self._drained = 0
        self._half_closed = False
        self._refused = False  # bytes that are not HTTP came while a request was answered
        self._blank = 0  # empty-line bytes between requests

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._writer = _OneWrite(transport)
        if len(self.connections) > self.limits.max_connections:
            self.app = _overloaded
        self._arm(self.limits.head_timeout_s)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _idle(self) -> bool:
        """No request is being answered: waiting for a head, or discarding a refused body."""
        return self.cycle is None or self.cycle.response_complete

    def _expired(self) -> None:
        self._deadline = None
        if self._idle() and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._in_body and self._idle():  # answered early (a 413): discarding the rest
            self._drained += len(data)
            if self._drained > self.limits.drain_max_bytes:
                self.transport.close()
                return
        if not self._in_head and not self._in_body and not data.strip(b"\r\n"):
            # llhttp skips empty lines before a request line, forever: one is allowed (RFC
            # 9112), and an empty head is refused like any other bad request.
            self._blank += len(data)
            if self._blank > 2:
                self.send_400_response("empty request head")
                return
        messages = self._messages
        super().data_received(data)
        # A chunk that ends inside a head, with no request ending before it, is all head: the
        # parser keeps a partial header to itself, so its size is counted here.
        if self._in_head and self._messages == messages and not self.transport.is_closing():
            self._head_chunks += len(data)
            if self._head_chunks > self.limits.max_header_bytes:
                self.send_400_response("request head too large")

    # Parser callbacks (llhttp calls them while feed_data runs).
    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_chunks = self._head_parsed = self._blank = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._head_parsed += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_parsed += len(name) + len(value) + 4  # with ": " and CRLF
        if self._head_parsed > self.limits.max_header_bytes:
            raise _HeadTooLargeError(f"request head over {self.limits.max_header_bytes} bytes")
        if name.lower() == b"content-length" and len(value.strip()) > _MAX_LENGTH_DIGITS:
            raise _HeadTooLargeError("Content-Length has more than 20 digits")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head, self._in_body = False, True
        self._disarm()
        self._drained = 0
        super().on_headers_complete()
        self.cycle.transport = self._writer  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self._in_body = False
        self._messages += 1
        super().on_message_complete()

    # asyncio.Protocol allows a bool (True keeps the transport open); uvicorn narrowed it.
    def eof_received(self) -> bool | None:  # type: ignore[override]
        # A client may half-close once its request is sent: keep the connection open to write
        # the answer (the parser's default closes it at once), then close (on_response_complete).
        self._half_closed = not self._idle() and not self._in_body and not self._in_head
        return self._half_closed or None

    def on_response_complete(self) -> None:
        self._writer.flush()
        if self._refused:
            self.send_400_response("")
            return
        if self._half_closed:
            self.transport.close()
            return
        # Answered before the body ended (a 413): the parser discards the rest, within a deadline.
        self._arm(self.limits.body_timeout_s if self._in_body else self.limits.head_timeout_s)
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        if not self._idle():
            # Bytes after a request that is still being answered are not HTTP: that request
            # is answered first, then the 400 (on_response_complete), as one at a time would.
            self._refused = True
            return
        body = error_body(
            400,
            "the request is not valid HTTP/1.1: check the request line, the headers (at most "
            f"{self.limits.max_header_bytes} bytes in all) and Content-Length (1 to 20 digits)",
        )
        head = (
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
        )
        self.transport.write(head + body)
        self.transport.close()


def server_config(app: ASGIApp, limits: Limits) -> uvicorn.Config:
    """uvicorn settings for a guarded server (no access log, no Server header, no proxies)."""
    protocol = type("GuardedProtocol", (_GuardedProtocol,), {"limits": limits})
    return uvicorn.Config(
        app,
        http=protocol,
        ws="none",
        # uvloop where it is installed (a declared dependency; not on Windows): it takes
        # about a fifth off the router's added latency (docs/benchmarks.md).
        loop="auto",
        lifespan="on",
        interface="asgi3",
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=limits.keep_alive_s,
        timeout_graceful_shutdown=limits.graceful_shutdown_s,
        backlog=limits.backlog,
    )


def bind(host: str, port: int, limits: Limits) -> socket.socket:
    """A listening TCP socket on `host:port` (0 picks a free port).

    Raises:
        OSError: The address is in use or not available on this machine.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets
    # that say they are TCP, and with it on every answer waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(limits.backlog)
    except BaseException:
        sock.close()
        raise
    return sock


class BackgroundServer:
    """A guarded server on a daemon thread of this process.

    Attributes:
        host: The bound address.
        port: The bound port.
    """

    def __init__(self, app: ASGIApp, limits: Limits, host: str, port: int, name: str) -> None:
        """Binds, starts the thread and returns once the server accepts connections.

        Raises:
            OSError: The address cannot be bound.
            RuntimeError: The server stopped during start-up.
        """
        self._socket = bind(host, port, limits)
        self.host = host
        self.port = int(self._socket.getsockname()[1])
        self._server = uvicorn.Server(server_config(app, limits))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name=name, daemon=True
        )
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                self._socket.close()
                raise RuntimeError(f"{name} stopped during start-up; see the log")
            time.sleep(0.01)

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:8080`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        """Stops accepting, lets requests in flight finish, and releases the port."""
        self._server.should_exit = True
        self._thread.join()
        self._socket.close()


def serve_in_foreground(
    app: ASGIApp,
    limits: Limits,
    sock: socket.socket,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve on this thread until SIGTERM or SIGINT; requests in flight finish first.

    Returns normally after a signal, so a process stopped by SIGTERM exits 0. Requests still
    running after `Limits.graceful_shutdown_s` are cancelled. `on_ready` runs once the signals
    are ours, so whoever it tells that the server is up can stop it at once without a race.
    """
    server = uvicorn.Server(server_config(app, limits))

    def stop(signum: int, frame: FrameType | None) -> None:
        # Before uvicorn takes the signals over, a signal would otherwise be lost and the
        # server run on; after, uvicorn re-raises the one that stopped it: the end, no error.
        server.should_exit = True

    main = threading.current_thread() is threading.main_thread()
    handled = (signal.SIGTERM, signal.SIGINT) if main else ()
    previous = {signum: signal.signal(signum, stop) for signum in handled}
    try:
        if on_ready is not None:
            on_ready()
        server.run(sockets=[sock])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sock.close()

"""Running a guarded ASGI application on uvicorn: timeouts, connection cap, graceful stop.

This module exists twice, byte for byte: `trainer/asgi_runner.py` (the serving image holds only
the trainer) and `vertex_retrain/backends/local/asgi_runner.py` (the library never imports the
trainer). `tests/test_serving_limits.py` fails when the two copies differ.

uvicorn's HTTP/1.1 protocol (h11) bounds the request head (`Limits.max_header_bytes`) and
refuses a Content-Length that is not 1-20 digits. It has no deadline for a request head, so a
client could hold a connection forever by sending its headers a byte at a time; the protocol
below adds one, closes connections past `Limits.max_connections` after a 503, bounds how much
of a refused body is discarded, and answers malformed requests in the one error shape.
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

import h11
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from .asgi_guard import Limits, error_body, json_response


async def _overloaded(scope: Scope, receive: Receive, send: Send) -> None:
    message = "the server has too many open connections; retry shortly"
    headers = {"Connection": "close", "Retry-After": "1"}
    await json_response(503, error_body(503, message), headers)(scope, receive, send)


class _GuardedH11Protocol(H11Protocol):
    limits: ClassVar[Limits] = Limits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._drained = 0
        self._half_closed = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
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
        if self._idle() and self.conn.their_state is h11.SEND_BODY:
            self._drained += len(data)
            if self._drained > self.limits.drain_max_bytes:
                self.transport.close()
                return
        super().data_received(data)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a complete request head arrived
            self._disarm()
            self._drained = 0

    # asyncio.Protocol allows a bool (True keeps the transport open); uvicorn narrowed it.
    def eof_received(self) -> bool | None:  # type: ignore[override]
        # A client may half-close once its request is sent: keep the connection open to write
        # the answer (uvicorn would close it at once), then close (see on_response_complete).
        self._half_closed = not self._idle() and self.conn.their_state is h11.DONE
        return self._half_closed or None

    def on_response_complete(self) -> None:
        if self._half_closed:
            self.transport.close()
            return
        # Answered before the body ended (a 413): h11 discards the rest, within a deadline.
        draining = self.conn.their_state is h11.SEND_BODY
        self._arm(self.limits.body_timeout_s if draining else self.limits.head_timeout_s)
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        body = error_body(
            400,
            "the request is not valid HTTP/1.1: check the request line, the headers (at most "
            f"{self.limits.max_header_bytes} bytes in all) and Content-Length (1 to 20 digits)",
        )
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:
            pass  # mid-answer already: closing is all that is left
        self.transport.close()


def server_config(app: ASGIApp, limits: Limits) -> uvicorn.Config:
    """uvicorn settings for a guarded server (no access log, no Server header, no proxies)."""
    protocol = type("GuardedH11Protocol", (_GuardedH11Protocol,), {"limits": limits})
    return uvicorn.Config(
        app,
        http=protocol,
        ws="none",
        loop="asyncio",
        lifespan="on",
        interface="asgi3",
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=limits.keep_alive_s,
        timeout_graceful_shutdown=limits.graceful_shutdown_s,
        h11_max_incomplete_event_size=limits.max_header_bytes,
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

"""Running a guarded ASGI application on uvicorn: timeouts, connection cap, graceful stop.

uvicorn speaks HTTP/1.1 through httptools (llhttp, in C), which refuses a Content-Length that
is not a number below 2**64, but bounds neither the request head nor the time it may take: a
client could hold a connection forever by sending its headers a byte at a time, or send
megabytes of one header. The protocol below bounds the head (`Limits.max_header_bytes`) and
adds a deadline for it, closes connections past `Limits.max_connections` after a 503, bounds
how much of a refused body is discarded, answers a client that half-closes after its request,
and answers malformed requests in the one error shape.

Bodies are buffered here before the application sees the request, so a client that sends its
body slowly holds a connection and a buffer, never one of the application's request slots: a
body that has not arrived within `Limits.body_arrival_window_s` of its head joins the server's
bodies still arriving (at most `Limits.max_arriving_bodies`; beyond, 503) and must end by its
own deadline (408). An answer that closes the connection while the client is still sending
the body it refused waits for that body to end, so the client reads the answer, not a reset.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, ClassVar

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from guarded_asgi.app import Limits, error_answer, error_body, json_response

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

    __slots__ = ("_close", "_head", "_transport")

    def __init__(self, transport: asyncio.Transport, close: Callable[[], None]) -> None:
        self._transport = transport
        self._close = close
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
        self._close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()


class _GuardedProtocol(HttpToolsProtocol):
    limits: ClassVar[Limits] = Limits()
    # The server's connections whose body is still arriving past its window (one set per
    # server: `server_config` makes a subclass for each).
    arriving: ClassVar[set[_GuardedProtocol]] = set()

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
        self._declared = 0  # the request's Content-Length
        self._chunked = False  # its body is sent in chunks (no length declared)
        self._held: tuple[RequestResponseCycle, Any] | None = None  # body arriving, its app
        self._body_allowed = 0.0  # seconds the held body may take, from its head
        self._body_due = 0.0  # loop time by which it must have ended
        self._linger = False  # close once the body being discarded has ended

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._writer = _OneWrite(transport, self._close_after_body)
        if len(self.connections) > self.limits.max_connections:
            self.app = _overloaded
        self._arm(self.limits.head_timeout_s)

    def _arm(self, seconds: float, then: Callable[[], None] | None = None) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(max(0.0, seconds), then or self._expired)

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
        self._in_head, self._linger = True, False
        self._head_chunks = self._head_parsed = self._blank = self._declared = 0
        self._chunked = False
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._head_parsed += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_parsed += len(name) + len(value) + 4  # with ": " and CRLF
        if self._head_parsed > self.limits.max_header_bytes:
            raise _HeadTooLargeError(f"request head over {self.limits.max_header_bytes} bytes")
        lower = name.lower()
        if lower == b"content-length":
            if len(value.strip()) > _MAX_LENGTH_DIGITS:
                raise _HeadTooLargeError("Content-Length has more than 20 digits")
            self._declared = int(value) if value.strip().isdigit() else 0
        elif lower == b"transfer-encoding":
            self._chunked = True
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head, self._in_body = False, True
        self._disarm()
        self._drained = 0
        super().on_headers_complete()
        self.cycle.transport = self._writer  # type: ignore[assignment]

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        """Starts the application, or holds the request until its body has arrived."""
        limits = self.limits
        expected = limits.max_body_bytes if self._chunked else self._declared
        if (
            cycle is not self.cycle
            or not self._in_body
            or expected == 0
            or self._declared > limits.max_body_bytes  # answered at once: 413
            or app is _overloaded
        ):
            super()._start_asgi_task(cycle, app)
            return
        self._held = (cycle, app)
        if cycle.waiting_for_100_continue:  # the client waits for it to send the body
            cycle.waiting_for_100_continue = False
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        allowed = limits.body_grace_s + expected / limits.min_body_bytes_per_s
        self._body_allowed = min(limits.body_timeout_s, allowed)
        self._body_due = self.loop.time() + self._body_allowed
        self._arm(min(limits.body_arrival_window_s, self._body_allowed), self._body_slow)

    def _body_slow(self) -> None:
        """The held body did not arrive within its window: it joins the bodies arriving."""
        self._deadline = None
        if self._held is None:
            return
        if len(self.arriving) >= self.limits.max_arriving_bodies:
            message = (
                f"{self.limits.max_arriving_bodies} request bodies are still arriving, the "
                "most this server waits for at once; send the request whole, or retry shortly"
            )
            self._refuse(503, message, {"Retry-After": "1"})
            return
        self.arriving.add(self)
        self._arm(self._body_due - self.loop.time(), self._body_late)

    def _body_late(self) -> None:
        self._deadline = None
        if self._held is not None:
            message = f"the request body did not arrive within {self._body_allowed:g} s"
            self._refuse(408, message, {}, linger=False)
        elif not self.transport.is_closing():  # a refused body still arriving
            self.transport.close()

    def _refuse(
        self, status: int, message: str, headers: Mapping[str, str], linger: bool = True
    ) -> None:
        """Answers a held request itself, and closes now or once its body has ended."""
        assert self._held is not None
        cycle, self._held = self._held[0], None
        self.arriving.discard(self)
        cycle.response_complete = True  # the parser discards the rest of the body
        self.transport.write(error_answer(status, message, {**headers, "Connection": "close"}))
        if linger and self._in_body:
            self._linger = True
            self._arm(self._body_due - self.loop.time(), self._body_late)
        else:
            self.transport.close()

    def _close_after_body(self) -> None:
        """An answer closes the connection: now, or once the body it refused has ended, so
        that a client sending it all before reading still reads the answer."""
        if self._in_body and not self.transport.is_closing():
            self._linger = True
        else:
            self.transport.close()

    def on_body(self, body: bytes) -> None:
        if self._held is None:
            super().on_body(body)
            return
        cycle = self._held[0]
        cycle.body += body  # buffered here, bounded by max_body_bytes: no flow control
        if len(cycle.body) > self.limits.max_body_bytes:  # chunked: no length to refuse early
            limit = self.limits.max_body_bytes
            self._refuse(413, f"request body has more than {limit} bytes; the limit is {limit}", {})

    def on_message_complete(self) -> None:
        self._in_body = False
        self._messages += 1
        super().on_message_complete()
        if self._held is not None:
            cycle, app = self._held
            self._held = None
            self.arriving.discard(self)
            self._disarm()
            super()._start_asgi_task(cycle, app)
        elif self._linger:
            self.transport.close()

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
        self._held = None
        self.arriving.discard(self)
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        if not self._idle() and self._held is None:
            # Bytes after a request that is still being answered are not HTTP: that request
            # is answered first, then the 400 (on_response_complete), as one at a time would.
            self._refused = True
            return
        # A request held for its body has no answer under way: malformed framing inside the
        # body (a bad chunk) is answered now.
        self._held = None
        self.arriving.discard(self)
        message = (
            "the request is not valid HTTP/1.1: check the request line, the headers (at most "
            f"{self.limits.max_header_bytes} bytes in all), Content-Length (1 to 20 digits) "
            "and the chunked framing"
        )
        self.transport.write(error_answer(400, message, {"Connection": "close"}))
        self.transport.close()


def server_config(app: ASGIApp, limits: Limits) -> uvicorn.Config:
    """uvicorn settings for a guarded server (no access log, no Server header, no proxies)."""
    protocol = type("GuardedProtocol", (_GuardedProtocol,), {"limits": limits, "arriving": set()})
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

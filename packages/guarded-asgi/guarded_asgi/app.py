"""Limits, one error shape and a guarded ASGI application for the HTTP servers.

Both prediction servers use it: the local backend's endpoint router and the reference
trainer's model server (each through this distribution; neither imports the other).

Every error a server sends has one shape, Google's:
`{"error": {"code": 413, "status": "PAYLOAD_TOO_LARGE", "message": "..."}}`.

Handlers speak raw ASGI through `Request` and `Answer` rather than a framework's request and
response objects: on a prediction server those cost as much as the HTTP parsing itself, and the
router's added latency is a target (docs/benchmarks.md).
"""

from __future__ import annotations

import http
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

# Vertex AI's limit on an online prediction request body.
VERTEX_MAX_REQUEST_BYTES = 1_500_000
# Bodies above this are parsed on a worker thread, so one large request does not stall the
# event loop (and every other connection) for the milliseconds json.loads takes.
PARSE_INLINE_BYTES = 64 * 1024
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    408: "DEADLINE_EXCEEDED",
    411: "LENGTH_REQUIRED",
    413: "PAYLOAD_TOO_LARGE",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "BAD_GATEWAY",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(frozen=True)
class Limits:
    """What one server accepts; every bound a client could otherwise stretch.

    Attributes:
        max_body_bytes: Larger request bodies get 413 (Vertex's limit by default).
        max_concurrent_requests: Requests being answered at once (their body complete);
            more get 503 (health checks are exempt, so a busy server is not reported dead).
        max_connections: Open connections; requests on connections beyond it get 503.
        max_header_bytes: Request line plus headers; more is a 400 and a closed connection.
        head_timeout_s: From connect (or from the previous answer) to a complete request head;
            a client that sends its headers slowly, or nothing, is disconnected.
        body_timeout_s: The longest a body may take to arrive (408), and to discard the rest
            of a refused body.
        body_grace_s: With `min_body_bytes_per_s`, a body's own deadline (408 past it):
            `body_grace_s + declared size / min_body_bytes_per_s` from the end of its head
            (or from `100 Continue`), at most `body_timeout_s`.
        min_body_bytes_per_s: The slowest rate a body may arrive at, past its grace.
        body_arrival_window_s: A body that arrives within this long of its head is whole:
            the request goes straight to the application.
        max_arriving_bodies: Bodies still arriving after their window, across the server
            (each buffered up to `max_body_bytes`); more get 503 with `Connection: close`.
            Requests reach the application only once their body is complete, so slow
            senders hold none of its `max_concurrent_requests` slots.
        drain_max_bytes: How much of a refused body is read and discarded, so that a client
            that sends it all before reading still gets the 413; past it the connection closes.
        keep_alive_s: An idle kept-alive connection is closed after this long.
        graceful_shutdown_s: On SIGTERM, how long requests in flight may take to finish.
        backlog: Listen backlog: bursts of connects wait in the kernel instead of retrying SYNs.
    """

    max_body_bytes: int = VERTEX_MAX_REQUEST_BYTES
    max_concurrent_requests: int = 32
    max_connections: int = 512
    max_header_bytes: int = 16 * 1024
    head_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    body_grace_s: float = 5.0
    min_body_bytes_per_s: int = 50_000
    body_arrival_window_s: float = 0.1
    max_arriving_bodies: int = 32
    drain_max_bytes: int = 128 * 1024 * 1024
    keep_alive_s: int = 5
    graceful_shutdown_s: int = 30
    backlog: int = 511


def error_body(status: int, message: str) -> bytes:
    """The JSON body of an error answer."""
    error = {"code": status, "status": STATUS_NAMES.get(status, "UNKNOWN"), "message": message}
    return json.dumps({"error": error}).encode()


def error_answer(status: int, message: str, headers: Mapping[str, str]) -> bytes:
    """A whole error answer as bytes, for the connection layer to write itself."""
    body = error_body(status, message)
    lines = [f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}"]
    lines += ["content-type: application/json", f"content-length: {len(body)}"]
    lines += [f"{name.lower()}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@dataclass(frozen=True)
class Answer:
    """A complete response: status, body bytes as they are, extra headers.

    Attributes:
        status: HTTP status code.
        body: The body, sent with its Content-Length.
        headers: Extra response headers (Content-Type and Content-Length are added).
        content_type: The Content-Type header.
    """

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "application/json"

    async def send(self, send: Send) -> None:
        """Send it as the two ASGI messages of a response."""
        headers = [
            (b"content-type", self.content_type.encode("latin-1")),
            (b"content-length", b"%d" % len(self.body)),
            *(
                (name.encode("latin-1"), value.encode("latin-1"))
                for name, value in self.headers.items()
            ),
        ]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


def json_response(status: int, body: bytes, headers: Mapping[str, str] | None = None) -> Answer:
    """A response carrying JSON bytes as they are."""
    return Answer(status, body, dict(headers or {}))


class Request:
    """One HTTP request as the ASGI server hands it over.

    Attributes:
        scope: The ASGI scope.
        receive: The ASGI receive channel (the body arrives through it).
        method: e.g. "POST".
        path: The decoded path, without the query.
    """

    __slots__ = ("method", "path", "receive", "scope")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        """Wraps the scope; nothing is read yet."""
        self.scope = scope
        self.receive = receive
        self.method: str = scope["method"]
        self.path: str = scope["path"]

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (`name` in lower case), None when absent."""
        for key, value in self.scope["headers"]:
            if key == name:
                return bytes(value)
        return None


class HttpError(Exception):
    """An error answer: raise it anywhere in a handler.

    Attributes:
        status: HTTP status code.
        message: What was wrong and what is expected.
        headers: Extra response headers (e.g. `Retry-After`).
    """

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        """Builds the error."""
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})

    def response(self) -> Answer:
        """The answer in the one error shape."""
        return json_response(self.status, error_body(self.status, self.message), self.headers)


def _too_large(limits: Limits, size: int | None) -> HttpError:
    limit = limits.max_body_bytes
    what = f"has more than {limit}" if size is None else f"is {size}"
    return HttpError(413, f"request body {what} bytes; the limit is {limit} bytes")


async def _receive_all(request: Request, limits: Limits, chunks: list[bytes]) -> None:
    size = 0
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise HttpError(400, "the client closed the connection before the body ended")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise _too_large(limits, None)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return


async def read_body(request: Request, limits: Limits) -> bytes:
    """Read a request body within the limits.

    A body declared too large is refused before it is read; the server then discards what
    the client still sends (up to `drain_max_bytes`), so the client reads the 413 instead of
    a reset. Under `guarded_asgi.server` every other body has arrived whole before the application
    sees the request: its deadlines are the runner's, and this returns at once.

    Raises:
        HttpError: 411 without a length, 413 over `max_body_bytes`, 400 when the client goes
            away.
    """
    declared = request.header(b"content-length")
    if declared is None and request.header(b"transfer-encoding") is None:
        raise HttpError(411, "a Content-Length header with the body size is required")
    # The HTTP parser has already refused a Content-Length that is not 1-20 ASCII digits.
    if declared is not None and int(declared) > limits.max_body_bytes:
        raise _too_large(limits, int(declared))
    chunks: list[bytes] = []
    await _receive_all(request, limits, chunks)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


Handler = Callable[[Request], Awaitable[Answer]]
Hook = Callable[[], Awaitable[None]]


class GuardedApp:
    """An ASGI application around one handler: admission cap, one error shape, no escapes.

    Args:
        handler: Answers one request; raises `HttpError` for errors it names.
        limits: The server's limits (`max_concurrent_requests` is applied here).
        exempt: Requests that skip the admission cap (cheap ones such as health checks).
        on_startup: Run once in the server's event loop before the first request.
        on_shutdown: Run once after the last request.
    """

    def __init__(
        self,
        handler: Handler,
        limits: Limits,
        *,
        exempt: Callable[[Scope], bool] | None = None,
        on_startup: Hook | None = None,
        on_shutdown: Hook | None = None,
    ) -> None:
        self._handler = handler
        self._limits = limits
        self._exempt = exempt or (lambda scope: False)
        self._hooks = {"startup": on_startup, "shutdown": on_shutdown}
        # Only the event loop thread touches it: no lock.
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] == "http":
            answer = await self._answer(Request(scope, receive))
            await answer.send(send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _answer(self, request: Request) -> Answer:
        if self._exempt(request.scope):
            return await self._safely(request)
        if self._in_flight >= self._limits.max_concurrent_requests:
            return HttpError(
                503,
                f"the server is busy: {self._limits.max_concurrent_requests} requests are "
                "in flight, the most it takes at once; retry shortly",
                {"Retry-After": "1"},
            ).response()
        self._in_flight += 1
        try:
            return await self._safely(request)
        finally:
            self._in_flight -= 1

    async def _safely(self, request: Request) -> Answer:
        try:
            return await self._handler(request)
        except HttpError as error:
            return error.response()
        except Exception as error:  # a bug must cost one request, never the server
            log.exception("request %s %s failed", request.method, request.path)
            return HttpError(
                500, f"internal error ({type(error).__name__}); see the server log"
            ).response()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message: dict[str, Any] = dict(await receive())
            phase = str(message["type"]).removeprefix("lifespan.")
            hook = self._hooks.get(phase)
            try:
                if hook is not None:
                    await hook()
            except Exception as error:
                log.exception("server %s failed", phase)
                await send({"type": f"lifespan.{phase}.failed", "message": str(error)})
                return
            await send({"type": f"lifespan.{phase}.complete"})
            if phase == "shutdown":
                return

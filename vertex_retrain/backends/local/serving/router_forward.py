"""Forwarding a prediction request to a deployed model's server over pooled connections.

The router keeps HTTP/1.1 connections to the model servers alive between requests: a small
pool per port, each an asyncio protocol whose answers httptools parses (llhttp, the parser
uvicorn runs the router's own side on). A general client such as httpx costs about 1 ms a
request here, and h11 about 0.1 ms, more than the router may add in all: its overhead is a
target (docs/benchmarks.md). Idle connections expire before the model server's keep-alive
(5 s in `guarded_asgi.app.Limits`); if the server closed a pooled connection anyway, the request is
sent once more on a new one (a prediction has no side effects).
"""

from __future__ import annotations

import asyncio
import time

import httptools
from guarded_asgi.app import HttpError

from vertex_retrain.backends.local.serving.endpoints import DeployedModel

POOL_KEEPALIVE_S = 4.0
CONNECT_TIMEOUT_S = 5.0
# A model server's answer is read into memory; one this large is a bug, not a prediction.
MAX_ANSWER_BYTES = 32 * 1024 * 1024


class _ClosedError(Exception):
    """The server closed the connection before its answer was complete."""


class _Answer:
    """The model server's answer being read: status, content type, body chunks."""

    def __init__(self) -> None:
        self.content_type = "application/json"
        self.chunks: list[bytes] = []
        self.framed = False  # Content-Length or chunked: not read until the server closes
        self.keep_alive = False
        self.complete = False


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection to a model server (one request at a time)."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser: httptools.HttpResponseParser | None = None
        self._answer = _Answer()
        self._headers_done = False
        self._received = 0  # bytes of the answer, head included
        self._done: asyncio.Future[bool] | None = None
        self.lost = False  # closed, or not fit to carry another request
        self.idle_since = time.monotonic()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        if self._parser is None:  # nothing was asked: not HTTP we can follow
            self._finish(_ClosedError("the server sent data it was not asked for"))
            self.close()
            return
        self._received += len(data)
        try:
            if self._received > MAX_ANSWER_BYTES:  # head and body: llhttp bounds neither
                raise HttpError(502, f"the answer has more than {MAX_ANSWER_BYTES} bytes")
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as error:
            self._finish(error.__context__ or error)  # what the callback raised
            self.close()
        except (httptools.HttpParserError, HttpError) as error:
            self._finish(error)
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._parser is not None and self._headers_done and not self._answer.framed:
            self._finish(None)  # an answer without Content-Length or chunks ends here
        else:
            self._finish(_ClosedError("the server closed the connection before answering"))

    # httptools callbacks
    def on_message_begin(self) -> None:
        if self._answer.complete:  # bytes after the answer: the connection is out of step
            raise _ClosedError("the server sent more than one answer to one request")

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-type":
            self._answer.content_type = value.decode("latin-1")
        elif name in {b"content-length", b"transfer-encoding"}:
            self._answer.framed = True

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._answer.chunks.append(body)

    def on_message_complete(self) -> None:
        # Asked now: the parser forgets once the message is over.
        assert self._parser is not None
        if self._parser.get_status_code() < 200:  # an interim answer (103, 100): wait on
            self._answer, self._headers_done = _Answer(), False
            return
        self._answer.keep_alive = self._parser.should_keep_alive()
        self._answer.complete = True
        self._finish(None)

    def _finish(self, error: BaseException | None) -> None:
        if self._done is not None and not self._done.done():
            if error is None:
                self._done.set_result(True)
            else:
                self._done.set_exception(error)

    def close(self) -> None:
        self.lost = True
        if self._transport is not None:
            self._transport.close()

    async def post(
        self, host: str, path: str, body: bytes, timeout_s: float
    ) -> tuple[int, bytes, str, bool]:
        """Send one POST and read the whole answer.

        Returns:
            Status, body, content type, and whether the connection can be reused.

        Raises:
            TimeoutError: No complete answer within `timeout_s`.
        """
        assert self._transport is not None and self._done is None
        if self.lost:
            raise _ClosedError("the server had closed the connection")
        self._parser = httptools.HttpResponseParser(self)
        self._answer = _Answer()
        self._headers_done = False
        self._received = 0
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        head = (
            b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (path.encode(), host.encode(), len(body))
        )
        # One write for a small request: one segment, one wake-up of the server.
        self._transport.write(head + body if len(body) < 65536 else head)
        if len(body) >= 65536:
            self._transport.write(body)
        # A timer, not asyncio.timeout: the same deadline at a fraction of the cost.
        timer = loop.call_later(timeout_s, self._finish, TimeoutError())
        try:
            await self._done
        finally:
            timer.cancel()
            self._done = None
        parser, answer = self._parser, self._answer
        self._parser = None
        reusable = not self.lost and answer.framed and answer.keep_alive
        self.idle_since = time.monotonic()
        return parser.get_status_code(), b"".join(answer.chunks), answer.content_type, reusable


class Forwarder:
    """Pooled connections to the model servers; create and close it inside the event loop."""

    def __init__(self, timeout_s: float) -> None:
        """An empty pool. It opens as many connections as requests are forwarded at once,
        which the router's admission cap bounds (`Limits.max_concurrent_requests`).

        Args:
            timeout_s: How long a model server may take to answer (504 after).
        """
        self._timeout_s = timeout_s
        self._idle: dict[int, list[_Connection]] = {}
        self._open: set[_Connection] = set()

    async def close(self) -> None:
        """Closes every connection, pooled or in use."""
        self._idle.clear()
        for connection in self._open:
            connection.close()
        self._open.clear()
        await asyncio.sleep(0)  # the transports close on the next turn of the loop

    def _take(self, port: int) -> _Connection | None:
        idle = self._idle.get(port, [])
        while idle:
            connection = idle.pop()
            if not connection.lost and time.monotonic() - connection.idle_since < POOL_KEEPALIVE_S:
                return connection
            self._discard(connection)
        return None

    def _discard(self, connection: _Connection | None) -> None:
        if connection is not None:
            connection.close()
            self._open.discard(connection)

    async def post(self, target: DeployedModel, body: bytes) -> tuple[int, bytes, str]:
        """POST `body` to the target's predict route.

        Returns:
            The model server's status, body and content type, unchanged.

        Raises:
            HttpError: 502 when the server cannot be reached or answers something that is
                not HTTP, 504 when it does not answer within the timeout.
        """
        port = target.port
        if port is None:
            raise HttpError(
                502,
                f"deployed model {target.deployed_model_id} has no running server; "
                "restart it with serve",
            )
        for attempt in (1, 2):
            # The retry takes a new connection: another pooled one may be as stale.
            connection = self._take(port) if attempt == 1 else None
            reused = connection is not None
            began = time.monotonic()
            try:
                if connection is None:
                    connection = await self._connect(port)
                left = self._timeout_s - (time.monotonic() - began)
                status, answer, content_type, reusable = await connection.post(
                    f"127.0.0.1:{port}", target.predict_route, body, left
                )
            except (OSError, httptools.HttpParserError, _ClosedError, HttpError) as error:
                self._discard(connection)
                # TimeoutError is an OSError too: only a lost connection is retried.
                lost = not isinstance(error, TimeoutError | HttpError)
                if lost and reused and attempt == 1:
                    continue  # a kept-alive connection the server had closed
                raise _failed(target, error, self._timeout_s) from None
            except BaseException:  # cancelled at shutdown: still release the socket
                self._discard(connection)
                raise
            if reusable:
                self._idle.setdefault(port, []).append(connection)
            else:
                self._discard(connection)
            return status, answer, content_type
        raise AssertionError("unreachable")

    async def _connect(self, port: int) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(min(CONNECT_TIMEOUT_S, self._timeout_s)):
            _, connection = await loop.create_connection(_Connection, "127.0.0.1", port)
        self._open.add(connection)
        return connection


def _failed(target: DeployedModel, error: BaseException, timeout_s: float) -> HttpError:
    if isinstance(error, TimeoutError):
        status, problem = 504, f"did not answer within {timeout_s:g} s"
    elif isinstance(error, HttpError):
        status, problem = error.status, error.message
    else:
        status, problem = 502, f"did not answer: {type(error).__name__}: {error}"
    return HttpError(
        status,
        f"deployed model {target.deployed_model_id} (pid {target.pid}, port {target.port}) "
        f"{problem}; see {target.log_path}",
    )

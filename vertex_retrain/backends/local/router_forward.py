"""Forwarding a prediction request to a deployed model's server over pooled connections.

The router keeps HTTP/1.1 connections to the model servers alive between requests: a small
pool per port, spoken with h11 (the parser uvicorn itself uses) over asyncio streams. A
general client such as httpx costs about 1 ms a request here, more than the model server's
own answer, which matters because the router's overhead is a target (docs/benchmarks.md).
Idle connections expire before the model server's keep-alive (5 s in `asgi_guard.Limits`);
if the server closed a pooled connection anyway, the request is sent once more on a new one
(a prediction has no side effects).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import h11

from vertex_retrain.backends.local.asgi_guard import HttpError
from vertex_retrain.backends.local.endpoints import DeployedModel

POOL_KEEPALIVE_S = 4.0
CONNECT_TIMEOUT_S = 5.0
# A model server's answer is read into memory; one this large is a bug, not a prediction.
MAX_ANSWER_BYTES = 32 * 1024 * 1024
_READ_BYTES = 64 * 1024


class _ClosedError(Exception):
    """The server closed the connection before its answer was complete."""


class _Connection:
    """One HTTP/1.1 connection to a model server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._http = h11.Connection(h11.CLIENT)
        self.idle_since = time.monotonic()

    def close(self) -> None:
        self._writer.close()

    async def wait_closed(self) -> None:
        # A reset from the server while closing still leaves the connection closed.
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()

    async def post(self, host: str, path: str, body: bytes) -> tuple[int, bytes, str, bool]:
        """Send one POST and read the whole answer.

        Returns:
            Status, body, content type, and whether the connection can be reused.
        """
        headers = [
            ("Host", host),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
        ]
        out = self._http.send(h11.Request(method="POST", target=path, headers=headers)) or b""
        out += self._http.send(h11.Data(data=body)) or b""
        out += self._http.send(h11.EndOfMessage()) or b""
        self._writer.write(out)
        await self._writer.drain()
        status, content_type, chunks, size = 0, "application/json", [], 0
        while True:
            event = self._http.next_event()
            if event is h11.NEED_DATA:
                self._http.receive_data(await self._reader.read(_READ_BYTES))
            elif isinstance(event, h11.Response):
                status = event.status_code
                for name, value in event.headers:
                    if name == b"content-type":
                        content_type = value.decode("latin-1")
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > MAX_ANSWER_BYTES:
                    raise HttpError(502, f"the answer has more than {MAX_ANSWER_BYTES} bytes")
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise _ClosedError("the server closed the connection before answering")
        reusable = self._http.our_state is h11.DONE and self._http.their_state is h11.DONE
        if reusable:
            self._http.start_next_cycle()
            self.idle_since = time.monotonic()
        return status, b"".join(chunks), content_type, reusable


class Forwarder:
    """Pooled connections to the model servers; create and close it inside the event loop."""

    def __init__(self, timeout_s: float, max_connections: int) -> None:
        """An empty pool.

        Args:
            timeout_s: How long a model server may take to answer (504 after).
            max_connections: Requests forwarded at once, to all model servers together.
        """
        self._timeout_s = timeout_s
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[int, list[_Connection]] = {}

    async def close(self) -> None:
        """Closes every pooled connection."""
        pooled = [connection for idle in self._idle.values() for connection in idle]
        self._idle.clear()
        for connection in pooled:
            connection.close()
        await asyncio.gather(*(connection.wait_closed() for connection in pooled))

    def _take(self, port: int) -> _Connection | None:
        idle = self._idle.get(port, [])
        while idle:
            connection = idle.pop()
            if time.monotonic() - connection.idle_since < POOL_KEEPALIVE_S:
                return connection
            connection.close()
        return None

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
        async with self._slots:
            for attempt in (1, 2):
                connection = self._take(port)
                reused = connection is not None
                try:
                    async with asyncio.timeout(self._timeout_s):
                        if connection is None:
                            connection = await self._open(port)
                        status, answer, content_type, reusable = await connection.post(
                            f"127.0.0.1:{port}", target.predict_route, body
                        )
                except (OSError, h11.ProtocolError, _ClosedError, HttpError) as error:
                    _close(connection)
                    # TimeoutError is an OSError too: only a lost connection is retried.
                    lost = not isinstance(error, TimeoutError | HttpError)
                    if lost and reused and attempt == 1:
                        continue  # a kept-alive connection the server had closed
                    raise _failed(target, error, self._timeout_s) from None
                except BaseException:  # cancelled at shutdown: still release the socket
                    _close(connection)
                    raise
                if reusable:
                    self._idle.setdefault(port, []).append(connection)
                else:
                    connection.close()
                return status, answer, content_type
        raise AssertionError("unreachable")

    @staticmethod
    async def _open(port: int) -> _Connection:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return _Connection(reader, writer)


def _close(connection: _Connection | None) -> None:
    if connection is not None:
        connection.close()


def _failed(target: DeployedModel, error: Exception, timeout_s: float) -> HttpError:
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

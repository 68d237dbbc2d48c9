"""HTTP router for a local endpoint: splits prediction requests over deployed models.

Routes (POST, JSON body `{"instances": [...]}`):

- `/v1/endpoints/<endpoint>:predict` (also under `/v1/projects/P/locations/L/`): Vertex's
  predict; the answer gains `deployedModelId`, `model`, `modelDisplayName`, `modelVersionId`.
- `/v1/endpoints/<endpoint>:rawPredict` and `/predict`: the server's answer, unchanged.
- GET `/health` (and GET `/v1/endpoints/<endpoint>`): the endpoint's current traffic split.

Each request goes to one deployed model drawn at random with probability equal to its
traffic share (seedable). The response header `X-Vertex-AI-Deployed-Model-Id` names it, as
Vertex's rawPredict does. The split is re-read whenever the database changes, so a deploy,
undeploy or rollback made while serving applies to the next request. Errors come back as JSON
`{"error": {"code", "status", "message"}}`; no request can stop the router.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import threading
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vertex_retrain.backends.local.endpoint_servers import ensure_servers
from vertex_retrain.backends.local.endpoints import DeployedModel
from vertex_retrain.backends.local.registry_db import RegistryDatabase, RegistryNotFoundError
from vertex_retrain.backends.local.traffic_table import NoTrafficError, TrafficTable

# Vertex's limit on an online prediction request.
DEFAULT_MAX_REQUEST_BYTES = 1_500_000
_DRAIN_CAP_BYTES = 64 << 20
DEPLOYED_MODEL_HEADER = "X-Vertex-AI-Deployed-Model-Id"
_VERTEX_ROUTE = re.compile(
    r"^/v1/(?:projects/[^/]+/locations/[^/]+/)?endpoints/(?P<name>[^/:]+)"
    r"(?::(?P<verb>predict|rawPredict))?$"
)
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    411: "LENGTH_REQUIRED",
    413: "PAYLOAD_TOO_LARGE",
    500: "INTERNAL",
    502: "BAD_GATEWAY",
    503: "UNAVAILABLE",
}


class _RouterError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK add ~40 ms to every kept-alive response.
    disable_nagle_algorithm = True
    server: _RouterServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would drown the serve console

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str) -> None:
        payload = {"code": status, "status": _STATUS_NAMES.get(status, "UNKNOWN")}
        self._reply(status, json.dumps({"error": {**payload, "message": message}}).encode())

    def _route(self) -> tuple[str, str | None]:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if path in {"/predict", "/health"}:
            return path, None
        match = _VERTEX_ROUTE.match(path)
        if match is None:
            raise _RouterError(
                404,
                f"no route {path!r}; POST /predict or /v1/endpoints/ENDPOINT:predict, GET /health",
            )
        endpoint = self.server.table.endpoint()
        if match["name"] not in {endpoint.display_name, endpoint.endpoint_id}:
            raise _RouterError(
                404,
                f"this router serves endpoint {endpoint.display_name!r} (id "
                f"{endpoint.endpoint_id}), not {match['name']!r}",
            )
        return path, match["verb"] or "get"

    def _safely(self, method: str) -> None:
        try:
            self._dispatch(method)
        except _RouterError as error:
            self._error(error.status, str(error))
        except RegistryNotFoundError as error:
            self._error(404, str(error))
        except NoTrafficError as error:
            self._error(503, str(error))
        except Exception as error:  # the router must outlive any single request
            self._error(500, f"router error: {type(error).__name__}: {error}")

    def do_GET(self) -> None:
        self._safely("GET")

    def do_POST(self) -> None:
        self._safely("POST")

    def _dispatch(self, method: str) -> None:
        path, verb = self._route()
        if method == "GET":
            if path != "/health" and verb != "get":
                raise _RouterError(405, f"use POST for {path!r}")
            endpoint = self.server.table.endpoint()
            state = {"endpoint": endpoint.display_name, "trafficSplit": endpoint.traffic_split}
            self._reply(200, json.dumps(state).encode())
            return
        if path == "/health" or verb == "get":
            raise _RouterError(405, f"use GET for {path!r}")
        body = self._read_body()
        target = self.server.table.pick()
        status, answer, content_type = self._forward(target, body)
        headers = {
            DEPLOYED_MODEL_HEADER: target.deployed_model_id,
            "X-Vertex-AI-Model": target.model_display_name,
            "X-Vertex-AI-Model-Version-Id": target.model_version_id,
        }
        if verb == "predict" and status == 200:
            answer = self._vertex_answer(target, answer)
            content_type = "application/json"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(answer)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(answer)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise _RouterError(411, "chunked requests are not supported; send Content-Length")
        length_text = self.headers.get("Content-Length")
        # isascii: str.isdigit() accepts "²", which int() then rejects.
        if length_text is None or not (length_text.isascii() and length_text.isdigit()):
            self.close_connection = True
            raise _RouterError(411, f"a numeric Content-Length is required, got {length_text!r}")
        length = int(length_text)
        limit = self.server.max_request_bytes
        if length > limit:
            self._discard(length)
            raise _RouterError(
                413, f"request body is {length} bytes; this endpoint accepts at most {limit}"
            )
        body = self.rfile.read(length)
        try:
            parsed = json.loads(body)
        except ValueError as error:
            raise _RouterError(400, f"request body is not valid JSON: {error}") from None
        except RecursionError:
            raise _RouterError(
                400, 'request body JSON is nested too deeply; send {"instances": [...]}'
            ) from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("instances"), list):
            raise _RouterError(
                400, 'request body must be a JSON object {"instances": [...]} (a list)'
            )
        return body

    def _discard(self, length: int) -> None:
        # Reading the rejected body lets the client see the 413 instead of a reset socket;
        # past the cap, closing is cheaper than reading.
        if length > _DRAIN_CAP_BYTES:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 16))
            if not chunk:
                break
            length -= len(chunk)

    def _forward(self, target: DeployedModel, body: bytes) -> tuple[int, bytes, str]:
        pool: dict[int, http.client.HTTPConnection] = self.server.connections()
        port = target.port
        if port is None:
            raise _RouterError(
                502,
                f"deployed model {target.deployed_model_id} has no running server; "
                "restart it with serve",
            )
        for attempt in (1, 2):
            connection = pool.get(port)
            fresh = connection is None
            if connection is None:
                connection = http.client.HTTPConnection(
                    "127.0.0.1", port, timeout=self.server.backend_timeout_s
                )
                pool[port] = connection
            try:
                connection.request(
                    "POST", target.predict_route, body, {"Content-Type": "application/json"}
                )
                response = connection.getresponse()
                answer = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                del pool[port]
                # A kept-alive connection the server already closed: retry once on a new one.
                if fresh or attempt == 2:
                    raise _RouterError(
                        502,
                        f"deployed model {target.deployed_model_id} (pid {target.pid}, port "
                        f"{port}) did not answer: {type(error).__name__}: {error}; see "
                        f"{target.log_path}",
                    ) from None
                continue
            if response.will_close:
                connection.close()
                del pool[port]
            return response.status, answer, response.getheader("Content-Type", "application/json")
        raise AssertionError("unreachable")

    @staticmethod
    def _vertex_answer(target: DeployedModel, answer: bytes) -> bytes:
        try:
            parsed = json.loads(answer)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or "predictions" not in parsed:
            raise _RouterError(
                502,
                f"deployed model {target.deployed_model_id} answered {answer[:200]!r}, not "
                '{"predictions": [...]}',
            )
        parsed.update(
            deployedModelId=target.deployed_model_id,
            model=f"models/{target.model_display_name}",
            modelDisplayName=target.model_display_name,
            modelVersionId=target.model_version_id,
        )
        return json.dumps(parsed).encode()


class _RouterServer(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 makes a burst of clients wait a second per retry.
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        table: TrafficTable,
        max_request_bytes: int,
        backend_timeout_s: float,
    ) -> None:
        self.table = table
        self.max_request_bytes = max_request_bytes
        self.backend_timeout_s = backend_timeout_s
        self._local = threading.local()
        super().__init__(address, _Handler)

    def connections(self) -> dict[int, http.client.HTTPConnection]:
        # One pool per handler thread: a kept-alive client connection stays on one thread.
        pool: dict[int, http.client.HTTPConnection] | None = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = {}
        return pool


@dataclass
class RouterHandle:
    """A router running on a background thread (see `start_router`)."""

    host: str
    port: int
    _server: _RouterServer
    _thread: threading.Thread

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:8080."""
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        """Stops serving and closes the database connection (model servers keep running)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        self._server.table.close()

    def traffic_split(self) -> dict[str, int]:
        """The endpoint's traffic split as the router sees it now."""
        return self._server.table.endpoint().traffic_split

    def __enter__(self) -> RouterHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_router(
    endpoint_display_name: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    db_path: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    backend_timeout_s: float = 60.0,
    health_timeout_s: float = 60.0,
) -> RouterHandle:
    """Restart stale model servers, then serve the endpoint on a background thread.

    Args:
        endpoint_display_name: An existing endpoint.
        host: Interface to bind (loopback by default).
        port: Port to bind; 0 picks a free one (see `RouterHandle.port`).
        db_path: Registry database; defaults to `$VERTEX_LOCAL_ROOT/registry.db`.
        seed: Seed for the traffic draw, for reproducible splits.
        max_request_bytes: Larger requests get 413.
        backend_timeout_s: How long to wait for a model server's answer.
        health_timeout_s: How long a restarted model server may take to become healthy.

    Returns:
        A handle with the bound port; call `stop()` (or use it as a context manager).

    Raises:
        RegistryNotFoundError: No such endpoint.
        ServerStartError: A stale model server could not be restarted.
    """
    ensure_servers(endpoint_display_name, db_path=db_path, health_timeout_s=health_timeout_s)
    table = TrafficTable(RegistryDatabase(db_path), endpoint_display_name, seed)
    try:
        server = _RouterServer((host, port), table, max_request_bytes, backend_timeout_s)
    except BaseException:
        table.close()
        raise
    thread = threading.Thread(target=server.serve_forever, name="endpoint-router", daemon=True)
    thread.start()
    return RouterHandle(host, int(server.server_address[1]), server, thread)


def serve_endpoint(
    display_name: str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    db_path: str | os.PathLike[str] | None = None,
    seed: int | None = None,
) -> None:
    """Serve an endpoint until Ctrl-C or SIGTERM (the `serve ENDPOINT` command).

    Args:
        display_name: An existing endpoint with deployed models.
        host: Interface to bind (loopback by default).
        port: Port to bind; 0 picks a free one (printed).
        db_path: Registry database; defaults to `$VERTEX_LOCAL_ROOT/registry.db`.
        seed: Seed for the traffic draw.
    """
    handle = start_router(display_name, host=host, port=port, db_path=db_path, seed=seed)
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    split = handle.traffic_split()
    print(
        f"serving endpoint {display_name!r} at {handle.url} (traffic {split}); "
        f"POST {handle.url}/v1/endpoints/{urllib.parse.quote(display_name)}:predict; "
        "Ctrl-C stops the router (model servers keep running)",
        flush=True,
    )
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        handle.stop()

"""HTTP router for a local endpoint: splits prediction requests over deployed models.

Routes (POST, JSON body `{"instances": [...]}`):

- `/v1/endpoints/<endpoint>:predict` (also under `/v1/projects/P/locations/L/`): Vertex's
  predict; the answer gains `deployedModelId`, `model`, `modelDisplayName`, `modelVersionId`.
- `/v1/endpoints/<endpoint>:rawPredict` and `/predict`: the server's answer, unchanged.
- GET `/health` (and GET `/v1/endpoints/<endpoint>`): the endpoint's current traffic split.

Each request goes to one deployed model drawn at random with probability equal to its
traffic share (seedable). The response header `X-Vertex-AI-Deployed-Model-Id` names it, as
Vertex's rawPredict does. The split is re-read whenever the database changes, so a deploy,
undeploy or rollback made while serving applies to the next request. The router runs on
uvicorn with the limits of `guarded_asgi.app.Limits` (timeouts, concurrency, 1.5 MB bodies) and
answers its own errors as `{"error": {"code", "status", "message"}}`; a model server's
answer, errors included, passes through unchanged. No request can stop the router.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import urllib.parse
from dataclasses import dataclass

from guarded_asgi.app import (
    PARSE_INLINE_BYTES,
    VERTEX_MAX_REQUEST_BYTES,
    Answer,
    GuardedApp,
    HttpError,
    Limits,
    Request,
    json_response,
    read_body,
)
from guarded_asgi.server import (
    BackgroundServer,
    bind,
    serve_in_foreground,
)

from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryDatabase,
    RegistryNotFoundError,
)
from vertex_retrain.backends.local.serving.endpoint_servers import ensure_servers
from vertex_retrain.backends.local.serving.endpoints import DeployedModel
from vertex_retrain.backends.local.serving.router_forward import Forwarder
from vertex_retrain.backends.local.serving.traffic_table import NoTrafficError, TrafficTable

DEFAULT_MAX_REQUEST_BYTES = VERTEX_MAX_REQUEST_BYTES
DEPLOYED_MODEL_HEADER = "X-Vertex-AI-Deployed-Model-Id"
_VERTEX_ROUTE = re.compile(
    r"^/v1/(?:projects/[^/]+/locations/[^/]+/)?endpoints/(?P<name>[^/:]+)"
    r"(?::(?P<verb>predict|rawPredict))?$"
)

# Printable ASCII but "%": what a header value carries as it is.
_HEADER_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if c != ord("%"))


def _header_value(text: str) -> str:
    """`text` percent-encoded (UTF-8) where a header could not carry it: a display name may
    hold any character, a header only Latin-1 and no line breaks (uvicorn refuses them)."""
    return urllib.parse.quote(text, safe=_HEADER_SAFE)


def _check_instances(body: bytes) -> None:
    try:
        parsed = json.loads(body)
    except ValueError as error:  # not UTF-8, not JSON, or an integer over 4,300 digits
        # The digits' message ends with advice for the server's code, not for the client.
        raise HttpError(
            400, f"request body is not valid JSON: {str(error).split(';')[0]}"
        ) from None
    except RecursionError:
        raise HttpError(
            400, 'request body JSON is nested too deeply; send {"instances": [...]}'
        ) from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("instances"), list):
        raise HttpError(400, 'request body must be a JSON object {"instances": [...]} (a list)')


def _vertex_answer(target: DeployedModel, answer: bytes) -> bytes:
    try:
        parsed = json.loads(answer)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict) or "predictions" not in parsed:
        raise HttpError(
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


class _RouterService:
    """The router's routes over one endpoint's traffic table."""

    def __init__(self, table: TrafficTable, limits: Limits, backend_timeout_s: float) -> None:
        self.table = table
        self.limits = limits
        self._backend_timeout_s = backend_timeout_s
        self._forwarder: Forwarder | None = None

    def app(self) -> GuardedApp:
        return GuardedApp(
            self._handle,
            self.limits,
            exempt=lambda scope: scope["method"] == "GET",
            on_startup=self._start,
            on_shutdown=self._stop,
        )

    async def _start(self) -> None:
        self._forwarder = Forwarder(self._backend_timeout_s)

    async def _stop(self) -> None:
        if self._forwarder is not None:
            await self._forwarder.close()

    async def _handle(self, request: Request) -> Answer:
        try:
            return await self._dispatch(request)
        except RegistryNotFoundError as error:
            raise HttpError(404, str(error)) from None
        except NoTrafficError as error:
            raise HttpError(503, str(error)) from None

    def _route(self, path: str) -> str | None:
        """The Vertex verb of `path` ("get" for the endpoint itself), None for /predict."""
        if path in {"/predict", "/health"}:
            return None
        match = _VERTEX_ROUTE.match(path)
        if match is None:
            raise HttpError(
                404,
                f"no route {path!r}; POST /predict or /v1/endpoints/ENDPOINT:predict, GET /health",
            )
        endpoint = self.table.endpoint()
        if match["name"] not in {endpoint.display_name, endpoint.endpoint_id}:
            raise HttpError(
                404,
                f"this router serves endpoint {endpoint.display_name!r} (id "
                f"{endpoint.endpoint_id}), not {match['name']!r}",
            )
        return match["verb"] or "get"

    async def _dispatch(self, request: Request) -> Answer:
        path = request.path
        verb = self._route(path)
        reads = path == "/health" or verb == "get"
        if request.method != ("GET" if reads else "POST"):
            method = "GET" if reads else "POST"
            raise HttpError(405, f"use {method} for {path!r}", {"Allow": method})
        if reads:
            endpoint = self.table.endpoint()
            state = {"endpoint": endpoint.display_name, "trafficSplit": endpoint.traffic_split}
            return json_response(200, json.dumps(state).encode())
        body = await read_body(request, self.limits)
        if len(body) > PARSE_INLINE_BYTES:
            await asyncio.to_thread(_check_instances, body)
        else:
            _check_instances(body)
        target = self.table.pick()
        assert self._forwarder is not None, "the router's start-up hook has not run"
        status, answer, content_type = await self._forwarder.post(target, body)
        if verb == "predict" and status == 200:
            answer = _vertex_answer(target, answer)
            content_type = "application/json"
        headers = {
            DEPLOYED_MODEL_HEADER: target.deployed_model_id,
            "X-Vertex-AI-Model": _header_value(target.model_display_name),
            "X-Vertex-AI-Model-Version-Id": target.model_version_id,
        }
        return Answer(status, answer, headers, content_type)


@dataclass
class RouterHandle:
    """A router running on a background thread (see `start_router`)."""

    host: str
    port: int
    _server: BackgroundServer
    _table: TrafficTable

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:8080."""
        return self._server.url

    def stop(self) -> None:
        """Stops serving (requests in flight finish) and closes the database connection.

        The model servers keep running.
        """
        self._server.stop()
        self._table.close()

    def traffic_split(self) -> dict[str, int]:
        """The endpoint's traffic split as the router sees it now."""
        return self._table.endpoint().traffic_split

    def __enter__(self) -> RouterHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _limits(limits: Limits | None, max_request_bytes: int | None) -> Limits:
    chosen = limits or Limits()
    if max_request_bytes is not None:
        chosen = dataclasses.replace(chosen, max_body_bytes=max_request_bytes)
    return chosen


def start_router(
    endpoint_display_name: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    db_path: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    max_request_bytes: int | None = None,
    backend_timeout_s: float = 60.0,
    health_timeout_s: float = 60.0,
    limits: Limits | None = None,
) -> RouterHandle:
    """Restart stale model servers, then serve the endpoint on a background thread.

    Args:
        endpoint_display_name: An existing endpoint.
        host: Interface to bind (loopback by default).
        port: Port to bind; 0 picks a free one (see `RouterHandle.port`).
        db_path: Registry database; defaults to `$VERTEX_LOCAL_ROOT/registry.db`.
        seed: Seed for the traffic draw, for reproducible splits.
        max_request_bytes: Larger requests get 413 (default: `limits`, else 1.5 MB).
        backend_timeout_s: How long to wait for a model server's answer (then 504).
        health_timeout_s: How long a restarted model server may take to become healthy.
        limits: Timeouts, concurrency and size limits (`guarded_asgi.app.Limits()` by default).

    Returns:
        A handle with the bound port; call `stop()` (or use it as a context manager).

    Raises:
        RegistryNotFoundError: No such endpoint.
        ServerStartError: A stale model server could not be restarted.
        OSError: The address cannot be bound.
    """
    ensure_servers(endpoint_display_name, db_path=db_path, health_timeout_s=health_timeout_s)
    chosen = _limits(limits, max_request_bytes)
    table = TrafficTable(RegistryDatabase(db_path), endpoint_display_name, seed)
    try:
        service = _RouterService(table, chosen, backend_timeout_s)
        server = BackgroundServer(service.app(), chosen, host, port, "endpoint-router")
    except BaseException:
        table.close()
        raise
    return RouterHandle(host, server.port, server, table)


def serve_endpoint(
    display_name: str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    db_path: str | os.PathLike[str] | None = None,
    seed: int | None = None,
) -> None:
    """Serve an endpoint until Ctrl-C or SIGTERM (the `serve ENDPOINT` command).

    Requests in flight when the signal comes are answered before the router exits.

    Args:
        display_name: An existing endpoint with deployed models.
        host: Interface to bind (loopback by default).
        port: Port to bind; 0 picks a free one (printed).
        db_path: Registry database; defaults to `$VERTEX_LOCAL_ROOT/registry.db`.
        seed: Seed for the traffic draw.
    """
    # Leased and never released: a `serve` killed by SIGKILL takes its servers with it.
    ensure_servers(display_name, db_path=db_path, lease=True)
    limits = Limits()
    table = TrafficTable(RegistryDatabase(db_path), display_name, seed)
    try:
        with bind(host, port, limits) as sock:
            url = f"http://{host}:{sock.getsockname()[1]}"
            split = ", ".join(
                f"deployed model {deployed}: {percent}%"
                for deployed, percent in table.endpoint().traffic_split.items()
            )
            banner = (
                f"serving endpoint {display_name!r} at {url} (traffic "
                f"{split or 'none'}); POST "
                f"{url}/v1/endpoints/{urllib.parse.quote(display_name)}:predict; "
                "Ctrl-C stops it"
            )
            service = _RouterService(table, limits, backend_timeout_s=60.0)
            # Announced only once Ctrl-C and SIGTERM stop the server cleanly: a signal sent
            # right after the banner must not find Python's default handlers.
            serve_in_foreground(
                service.app(), limits, sock, on_ready=lambda: print(banner, flush=True)
            )
    finally:
        table.close()

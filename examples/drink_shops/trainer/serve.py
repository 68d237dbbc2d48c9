"""Prediction server following the Vertex custom-container contract: `python -m trainer.serve`.

Environment: AIP_HTTP_PORT (default 8080), AIP_HEALTH_ROUTE (default /health),
AIP_PREDICT_ROUTE (default /predict), AIP_STORAGE_URI (the model folder: used in place when
reachable as a path, through /gcs or GCS_FUSE_ROOT, else downloaded once from gs://).
LOCAL_BIND_HOST, then TRAINER_SERVE_HOST, pick the bind address (default 127.0.0.1; the serving
image sets 0.0.0.0, the local backend sets LOCAL_BIND_HOST=127.0.0.1).
TRAINER_MAX_REQUEST_BYTES bounds the body (default 1,500,000, Vertex's limit; 413 beyond) and
TRAINER_MAX_CONCURRENT_REQUESTS the requests in flight (default 32; 503 beyond).
TRAINER_TORCH_THREADS sets torch's threads per predict call (default 1: a call scores a few
instances, and on 2 cores a second thread made a 32-instance call 10x slower, not faster).
It runs on uvicorn; SIGTERM lets requests in flight finish, then exits 0.

Requests that arrive while the model is busy are scored together in one call
(`trainer.serve_batching`), so throughput grows with concurrent clients.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from guarded_asgi.app import (
    PARSE_INLINE_BYTES,
    Answer,
    GuardedApp,
    HttpError,
    Limits,
    Request,
    Scope,
    json_response,
    read_body,
)
from guarded_asgi.server import BackgroundServer, bind, serve_in_foreground

from trainer.model_fetch import local_model_dir
from trainer.predictor import InstanceError, Predictor
from trainer.serve_batching import PredictionBatcher

log = logging.getLogger(__name__)
MAX_INSTANCES = 1000
_HEALTHY = json.dumps({"status": "ok"}).encode()


@dataclass(frozen=True)
class ServeConfig:
    """Routes and limits of one server.

    Attributes:
        health_route: GET answers 200 `{"status": "ok"}` once the model is loaded.
        predict_route: POST `{"instances": [...]}` answers `{"predictions": [...]}`.
        limits: Body size, timeouts, concurrency (see `guarded_asgi.app.Limits`).
        inline_max_instances: Predict calls of up to this many instances run on the event
            loop, larger ones on a worker thread (`trainer.serve_batching`).
    """

    health_route: str = "/health"
    predict_route: str = "/predict"
    limits: Limits = field(default_factory=Limits)
    inline_max_instances: int = 64


def _instances(body: bytes) -> list[Any]:
    """The instances of a request body.

    Raises:
        HttpError: 400 naming what is wrong with the body.
    """
    try:
        request = json.loads(body)
    except ValueError as error:  # not UTF-8, not JSON, or an integer over 4,300 digits
        # The digits' message ends with advice for the server's code, not for the client.
        raise HttpError(400, f"body is not valid JSON: {str(error).split(';')[0]}") from None
    except RecursionError:
        raise HttpError(
            400, 'body JSON is nested too deeply; send {"instances": [...]} of flat objects'
        ) from None
    instances = request.get("instances") if isinstance(request, dict) else None
    if not isinstance(instances, list):
        raise HttpError(400, 'expected {"instances": [...]}, a JSON object with a list')
    if len(instances) > MAX_INSTANCES:
        raise HttpError(400, f"{len(instances)} instances; at most {MAX_INSTANCES} per request")
    return instances


class PredictionService:
    """The routes of one prediction server, around a loaded predictor."""

    def __init__(self, predictor: Predictor, config: ServeConfig) -> None:
        """Binds the predictor; `app()` is the ASGI application."""
        self.predictor = predictor
        self.config = config
        self._batcher: PredictionBatcher | None = None

    def app(self) -> GuardedApp:
        """The guarded ASGI application (health checks skip the concurrency cap)."""
        return GuardedApp(
            self._handle,
            self.config.limits,
            exempt=self._is_health,
            on_startup=self._start,
            on_shutdown=self._stop,
        )

    def _is_health(self, scope: Scope) -> bool:
        return scope["path"] == self.config.health_route

    async def _start(self) -> None:
        self._batcher = PredictionBatcher(
            self.predictor.predict,
            max_instances=MAX_INSTANCES,
            inline_max_instances=self.config.inline_max_instances,
        )

    async def _stop(self) -> None:
        if self._batcher is not None:
            self._batcher.close()

    async def _handle(self, request: Request) -> Answer:
        path, method = request.path, request.method
        routes = {self.config.health_route: "GET", self.config.predict_route: "POST"}
        if path not in routes:
            raise HttpError(
                404,
                f"no route {path!r}; GET {self.config.health_route!r} or "
                f"POST {self.config.predict_route!r}",
            )
        if method != routes[path]:
            raise HttpError(405, f"use {routes[path]} for {path!r}", {"Allow": routes[path]})
        if path == self.config.health_route:
            return json_response(200, _HEALTHY)
        body = await read_body(request, self.config.limits)
        if len(body) > PARSE_INLINE_BYTES:
            instances = await asyncio.to_thread(_instances, body)
        else:
            instances = _instances(body)
        assert self._batcher is not None, "the server's start-up hook has not run"
        try:
            answer = await self._batcher.predict(instances)
        except InstanceError as error:
            raise HttpError(400, str(error)) from None
        return json_response(200, answer)


class RunningServer:
    """A server running on a background thread, for tests and benchmarks.

    Attributes:
        url: base URL such as `http://127.0.0.1:54321`.
        port: the bound port.
        config: its routes and limits.
    """

    def __init__(self, service: PredictionService, host: str, port: int) -> None:
        """Binds and starts serving; raises OSError when the address cannot be bound."""
        self.config = service.config
        self._server = BackgroundServer(
            service.app(), service.config.limits, host, port, "prediction-server"
        )
        self.url = self._server.url
        self.port = self._server.port

    def close(self) -> None:
        """Stop serving (requests in flight finish) and release the port."""
        self._server.stop()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_server(
    model_dir: str | Path, host: str = "127.0.0.1", port: int = 0, config: ServeConfig | None = None
) -> RunningServer:
    """Load the model and serve it in-process on `host:port` (0 = any free port).

    Args:
        model_dir: the artifact folder (local, gs:// or /gcs/).
        host: bind address.
        port: TCP port, 0 for an ephemeral one.
        config: routes and limits.
    """
    predictor = Predictor(local_model_dir(os.fspath(model_dir)))
    return RunningServer(PredictionService(predictor, config or ServeConfig()), host, port)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _parser() -> argparse.ArgumentParser:
    env = os.environ
    limits = Limits()
    parser = argparse.ArgumentParser(prog="python -m trainer.serve", description=__doc__)
    parser.add_argument("--model_dir", default=env.get("AIP_STORAGE_URI"))
    # LOCAL_BIND_HOST (set by the local backend) wins over the image's TRAINER_SERVE_HOST.
    host = env.get("LOCAL_BIND_HOST") or env.get("TRAINER_SERVE_HOST", "127.0.0.1")
    parser.add_argument("--host", default=host)
    parser.add_argument("--port", type=int, default=int(env.get("AIP_HTTP_PORT", "8080")))
    parser.add_argument("--health_route", default=env.get("AIP_HEALTH_ROUTE", "/health"))
    parser.add_argument("--predict_route", default=env.get("AIP_PREDICT_ROUTE", "/predict"))
    parser.add_argument(
        "--max_request_bytes",
        type=int,
        default=int(env.get("TRAINER_MAX_REQUEST_BYTES", limits.max_body_bytes)),
    )
    parser.add_argument(
        "--max_concurrent_requests",
        type=int,
        default=int(env.get("TRAINER_MAX_CONCURRENT_REQUESTS", limits.max_concurrent_requests)),
    )
    parser.add_argument(
        "--torch_threads", type=int, default=int(env.get("TRAINER_TORCH_THREADS", "1"))
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; flags override the AIP_* environment. Exit 2 on a bad model or port."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if not args.model_dir:
        parser.error("no model: set AIP_STORAGE_URI or pass --model_dir")
    limits = Limits(
        max_body_bytes=args.max_request_bytes,
        max_concurrent_requests=args.max_concurrent_requests,
    )
    config = ServeConfig(args.health_route, args.predict_route, limits)
    torch.set_num_threads(max(1, args.torch_threads))
    try:
        predictor = Predictor(local_model_dir(args.model_dir))
    except (OSError, ValueError) as error:
        print(f"error: cannot load the model {args.model_dir}: {_one_line(error)}", file=sys.stderr)
        return 2
    try:
        sock = bind(args.host, args.port, limits)
    except (OSError, OverflowError) as error:
        print(
            f"error: cannot listen on {args.host}:{args.port}: {_one_line(error)}", file=sys.stderr
        )
        return 2
    port = sock.getsockname()[1]

    def announce() -> None:  # once SIGTERM stops the server cleanly
        log.info(
            "serving %s on %s:%d (%s, %s)",
            args.model_dir,
            args.host,
            port,
            config.predict_route,
            config.health_route,
        )

    serve_in_foreground(PredictionService(predictor, config).app(), limits, sock, on_ready=announce)
    return 0


if __name__ == "__main__":
    sys.exit(main())

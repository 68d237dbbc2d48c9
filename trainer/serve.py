"""Prediction server following the Vertex custom-container contract: `python -m trainer.serve`.

Environment: AIP_HTTP_PORT (default 8080), AIP_HEALTH_ROUTE (default /health),
AIP_PREDICT_ROUTE (default /predict), AIP_STORAGE_URI (the model folder: used in place when
reachable as a path, through /gcs or GCS_FUSE_ROOT, else downloaded once from gs://).
LOCAL_BIND_HOST, then TRAINER_SERVE_HOST, pick the bind address (default 127.0.0.1; the serving
image sets 0.0.0.0, the local backend sets LOCAL_BIND_HOST=127.0.0.1).
TRAINER_MAX_REQUEST_BYTES bounds the body (default 1 MiB, 413).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

from trainer.model_fetch import local_model_dir
from trainer.predictor import InstanceError, Predictor

log = logging.getLogger(__name__)
DEFAULT_MAX_BYTES = 1 << 20
MAX_INSTANCES = 1000


@dataclass(frozen=True)
class ServeConfig:
    """Routes and limits of one server."""

    health_route: str = "/health"
    predict_route: str = "/predict"
    max_request_bytes: int = DEFAULT_MAX_BYTES


def make_handler(predictor: Predictor, config: ServeConfig) -> type[BaseHTTPRequestHandler]:
    """Request handler class bound to a predictor."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, keep-alive clients wait for a
        # delayed ACK (~40 ms) before the body arrives.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s - %s", self.address_string(), format % args)

        def _reply(self, status: int, payload: dict[str, Any], close: bool = False) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.split("?")[0] == config.health_route:
                self._reply(200, {"status": "ok"})
            else:
                self._reply(404, {"error": f"no route {self.path!r}; try {config.health_route!r}"})

        def do_POST(self) -> None:
            if self.path.split("?")[0] != config.predict_route:
                self._reply(
                    404,
                    {"error": f"no route {self.path!r}; POST to {config.predict_route!r}"},
                    True,
                )
                return
            length_text = self.headers.get("Content-Length")
            # isascii: str.isdigit() accepts "²", which int() then rejects.
            if length_text is None or not (length_text.isascii() and length_text.isdigit()):
                self._reply(
                    411, {"error": "a Content-Length header with the body size is required"}, True
                )
                return
            length = int(length_text)
            if length > config.max_request_bytes:
                # The body is not read, so the connection cannot be reused.
                self._reply(
                    413,
                    {
                        "error": f"request body is {length} bytes; "
                        f"the limit is {config.max_request_bytes}"
                    },
                    close=True,
                )
                return
            try:
                request = json.loads(self.rfile.read(length))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                self._reply(400, {"error": f"body is not valid JSON: {error}"})
                return
            except RecursionError:
                message = (
                    'body JSON is nested too deeply; send {"instances": [...]} of flat objects'
                )
                self._reply(400, {"error": message})
                return
            instances = request.get("instances") if isinstance(request, dict) else None
            if not isinstance(instances, list):
                self._reply(
                    400, {"error": 'expected {"instances": [...]}, a JSON object with a list'}
                )
                return
            if len(instances) > MAX_INSTANCES:
                self._reply(
                    400,
                    {"error": f"{len(instances)} instances; at most {MAX_INSTANCES} per request"},
                )
                return
            try:
                predictions = predictor.predict(instances)
            except InstanceError as error:
                self._reply(400, {"error": str(error)})
                return
            except Exception:  # a bug must cost one request, not the server
                log.exception("prediction failed")
                self._reply(500, {"error": "internal error while predicting; see the server log"})
                return
            self._reply(200, {"predictions": predictions})

    return Handler


def make_server(
    predictor: Predictor, host: str, port: int, config: ServeConfig
) -> ThreadingHTTPServer:
    """A bound (not yet serving) HTTP server."""
    server = _Server((host, port), make_handler(predictor, config))
    return server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 makes a burst of clients wait a second per retry.
    request_queue_size = 128


class RunningServer:
    """A server running in a background thread, for tests and benchmarks.

    Attributes:
        url: base URL such as `http://127.0.0.1:54321`.
        config: its routes and limits.
    """

    def __init__(self, server: ThreadingHTTPServer, config: ServeConfig) -> None:
        self._server = server
        self.config = config
        host, port = server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

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
    config = config or ServeConfig()
    predictor = Predictor(local_model_dir(os.fspath(model_dir)))
    return RunningServer(make_server(predictor, host, port, config), config)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; flags override the AIP_* environment."""
    env = os.environ
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
        default=int(env.get("TRAINER_MAX_REQUEST_BYTES", DEFAULT_MAX_BYTES)),
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if not args.model_dir:
        parser.error("no model: set AIP_STORAGE_URI or pass --model_dir")
    config = ServeConfig(args.health_route, args.predict_route, args.max_request_bytes)
    try:
        predictor = Predictor(local_model_dir(args.model_dir))
    except (FileNotFoundError, ValueError) as error:
        print(f"error: cannot load the model: {error}", file=sys.stderr)
        return 2
    server = make_server(predictor, args.host, args.port, config)

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    log.info(
        "serving %s on %s:%d (%s, %s)",
        args.model_dir,
        args.host,
        args.port,
        config.predict_route,
        config.health_route,
    )
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

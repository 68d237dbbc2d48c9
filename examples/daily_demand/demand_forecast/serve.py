"""Prediction server on Vertex's custom-container contract: ``python -m demand_forecast.serve``.

Environment (flags override it): ``AIP_STORAGE_URI`` the model folder (``gs://`` on Vertex,
downloaded once; a local or ``/gcs/`` path is read in place), ``AIP_HTTP_PORT`` (default
8080), ``AIP_HEALTH_ROUTE`` (default ``/health``), ``AIP_PREDICT_ROUTE`` (default
``/predict``). ``LOCAL_BIND_HOST``, then ``DEMAND_SERVE_HOST``, pick the bind address (default
127.0.0.1; the serving image sets 0.0.0.0; vertex-retrain's local backend sets
``LOCAL_BIND_HOST=127.0.0.1``). ``DEMAND_MAX_REQUEST_BYTES`` bounds a request body (default
1,500,000, Vertex's limit; 413 beyond).

A body must arrive within 5 s plus its size at 50 kB/s (at most 30 s; 408 past it), and the
rest of a refused body is read and discarded (up to 64 MiB) before the connection closes, so a
client that sends it all before reading gets the answer, not a reset.

``POST <predict route>`` takes ``{"instances": [{"store": "S01", "item": "I01", "day":
"2025-03-03", "price": 2.49, "on_promo": true}, ...]}`` (``price`` defaults to the item's list
price, ``on_promo`` to false) and answers ``{"predictions": [{"units": 11.72}, ...]}``. A bad
request gets a 4xx status and ``{"error": "<one line naming the field, the value and what
works>"}``. ``GET <health route>`` answers 200 once the model is loaded. It is the standard
library's threading HTTP server; SIGTERM stops it and the process exits 0.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn

from demand_forecast.features import feature_matrix
from demand_forecast.model import DemandModel, load_model
from demand_forecast.paths import readable_model_dir

log = logging.getLogger("demand_forecast.serve")
MAX_INSTANCES = 1000
DEFAULT_MAX_REQUEST_BYTES = 1_500_000
FIELDS = ("store", "item", "day", "price", "on_promo")
REQUEST_TIMEOUT_S = 30.0
DISCARD_MAX_BYTES = 64 << 20


class RequestError(ValueError):
    """A request the server refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        """Keeps the status with the one-line message."""
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ServeConfig:
    """Routes and request limits of one server: the body's size, and the time it may take
    (`body_grace_s` plus its size at `min_body_bytes_per_s`, at most `REQUEST_TIMEOUT_S`)."""

    health_route: str = "/health"
    predict_route: str = "/predict"
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    body_grace_s: float = 5.0
    min_body_bytes_per_s: int = 50_000


def _known(names: Sequence[str]) -> str:
    shown = ", ".join(sorted(names)[:10])
    return shown + (f" ... ({len(names)} in all)" if len(names) > 10 else "")


def _bad(where: str, value: Any, expected: str) -> NoReturn:
    shown = json.dumps(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise RequestError(HTTPStatus.BAD_REQUEST, f"{where} is {shown}; expected {expected}")


def parse_instances(body: bytes, model: DemandModel) -> list[tuple[str, str, dt.date, float, bool]]:
    """The rows a request asks about, checked against what the model knows.

    Raises:
        RequestError: 400 naming the first bad field, its value and what is expected.
    """
    try:
        request = json.loads(body)
    except ValueError as error:  # not UTF-8, not JSON, or an integer over 4,300 digits
        # The digits' message ends with advice for the server's code, not for the client.
        message = f"body is not valid JSON: {str(error).split(';')[0]}"
        raise RequestError(HTTPStatus.BAD_REQUEST, message) from None
    except RecursionError:
        raise RequestError(HTTPStatus.BAD_REQUEST, "body JSON is nested too deeply") from None
    instances = request.get("instances") if isinstance(request, dict) else None
    if not isinstance(instances, list):
        _bad("the body", request, '{"instances": [...]}, a JSON object holding a list')
    if not 1 <= len(instances) <= MAX_INSTANCES:
        _bad("instances", f"{len(instances)} instances", f"1 to {MAX_INSTANCES} per request")
    profile = model.profile
    rows = []
    for n, instance in enumerate(instances):
        where = f"instances[{n}]"
        if not isinstance(instance, dict):
            _bad(where, instance, f"an object with {', '.join(FIELDS)}")
        unknown = sorted(set(instance) - set(FIELDS))
        if unknown:
            _bad(
                f"{where}.{unknown[0]}",
                instance[unknown[0]],
                f"only the fields {', '.join(FIELDS)}",
            )
        store, item, day = instance.get("store"), instance.get("item"), instance.get("day")
        if store not in profile.pairs:
            _bad(f"{where}.store", store, f"a store the model knows: {_known(list(profile.pairs))}")
        if item not in profile.items:
            _bad(f"{where}.item", item, f"an item the model knows: {_known(list(profile.items))}")
        try:
            date = dt.date.fromisoformat(day) if isinstance(day, str) and len(day) == 10 else None
        except ValueError:
            date = None
        if date is None:
            _bad(f"{where}.day", day, "a date as YYYY-MM-DD")
        price = instance.get("price", profile.items[item].base_price)
        if isinstance(price, bool) or not isinstance(price, int | float) or not _positive(price):
            _bad(f"{where}.price", price, "a price > 0 (omit it for the item's list price)")
        on_promo = instance.get("on_promo", False)
        if not isinstance(on_promo, bool):
            _bad(f"{where}.on_promo", on_promo, "true or false")
        rows.append((store, item, date, float(price), on_promo))
    return rows


def _positive(number: float) -> bool:
    """A finite number above 0 (an integer too large for a float is not)."""
    try:
        return math.isfinite(number) and number > 0
    except OverflowError:
        return False


def predict(model: DemandModel, rows: list[tuple[str, str, dt.date, float, bool]]) -> list[Any]:
    """The forecast units of each row, as Vertex predictions."""
    store, item, day, price, promo = (list(column) for column in zip(*rows, strict=True))
    features = feature_matrix(model.profile, store, item, day, price, promo, history={})
    return [{"units": round(float(units), 4)} for units in model.predict_matrix(features)]


class PredictionServer(ThreadingHTTPServer):
    """A threading HTTP server holding one loaded model."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: DemandModel, config: ServeConfig) -> None:
        """Binds ``address`` (port 0: any free port) and keeps the model and routes."""
        self.model = model
        self.config = config
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: PredictionServer
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT_S  # a client that stalls mid-request loses its connection

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _answer(
        self, status: HTTPStatus, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status >= 400:
            # The body of a refused request may be unread: the connection cannot be reused.
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        if status >= 400 and status != HTTPStatus.REQUEST_TIMEOUT:
            self._discard_unread()

    def _declared(self) -> int | None:
        """The request's Content-Length, None when it has none or it is not a number."""
        length = self.headers.get("Content-Length")
        return int(length) if length and re.fullmatch("[0-9]{1,18}", length) else None

    def _discard_unread(self) -> None:
        """Reads what the client still sends of a refused body (bounded in size and time),
        so that closing the connection does not reset it before the answer is read."""
        left = min(self._unread, DISCARD_MAX_BYTES)
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        try:
            while left > 0 and (remaining := deadline - time.monotonic()) > 0:
                self.connection.settimeout(remaining)
                chunk = self.rfile.read1(min(left, 1 << 16))
                if not chunk:
                    return
                left -= len(chunk)
        except OSError:
            return

    def _route(self, method: str) -> None:
        config = self.server.config
        self._unread = self._declared() or 0
        path = self.path.split("?", 1)[0]
        routes = {config.health_route: "GET", config.predict_route: "POST"}
        try:
            if path not in routes:
                raise RequestError(
                    HTTPStatus.NOT_FOUND,
                    f"no route {path!r}; GET {config.health_route!r} or POST "
                    f"{config.predict_route!r}",
                )
            if method != routes[path]:
                self._answer(
                    HTTPStatus.METHOD_NOT_ALLOWED,
                    {"error": f"use {routes[path]} for {path!r}"},
                    {"Allow": routes[path]},
                )
                return
            if path == config.health_route:
                self._answer(HTTPStatus.OK, {"status": "ok"})
                return
            rows = parse_instances(self._body(), self.server.model)
            self._answer(HTTPStatus.OK, {"predictions": predict(self.server.model, rows)})
        except RequestError as error:
            self._answer(error.status, {"error": str(error)})

    def _body(self) -> bytes:
        limit = self.server.config.max_request_bytes
        length = self.headers.get("Content-Length")
        if length is None:
            raise RequestError(
                HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length header"
            )
        size = self._declared()
        if size is None:
            raise RequestError(
                HTTPStatus.BAD_REQUEST, f"Content-Length {length[:40]!r} is not a number"
            )
        if size > limit:
            raise RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"body of {size} bytes; at most {limit} bytes (DEMAND_MAX_REQUEST_BYTES)",
            )
        return self._read_in_time(size)

    def _read_in_time(self, size: int) -> bytes:
        """The body, read within its deadline: a slow sender holds its thread that long."""
        config = self.server.config
        allowed = min(REQUEST_TIMEOUT_S, config.body_grace_s + size / config.min_body_bytes_per_s)
        deadline, chunks = time.monotonic() + allowed, []
        try:
            while self._unread > 0:
                self.connection.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = self.rfile.read1(self._unread)
                if not chunk:
                    raise RequestError(HTTPStatus.BAD_REQUEST, "the body ended before its length")
                chunks.append(chunk)
                self._unread -= len(chunk)
        except TimeoutError:
            message = f"the request body did not arrive within {allowed:g} s"
            raise RequestError(HTTPStatus.REQUEST_TIMEOUT, message) from None
        finally:
            self.connection.settimeout(self.timeout)
        return b"".join(chunks)

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")


def start_server(
    model_dir: str, host: str = "127.0.0.1", port: int = 0, config: ServeConfig | None = None
) -> PredictionServer:
    """Loads the model and serves it on a background thread (tests; ``shutdown()`` stops it).

    Returns:
        The running server; ``server_address`` holds the bound port.
    """
    model = load_model(readable_model_dir(model_dir))
    server = PredictionServer((host, port), model, config or ServeConfig())
    threading.Thread(target=server.serve_forever, name="demand-serve", daemon=True).start()
    return server


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """Flags, each defaulting to its environment variable."""
    env = os.environ
    parser = _Parser(prog="python -m demand_forecast.serve", description=__doc__)
    parser.add_argument("--model_dir", default=env.get("AIP_STORAGE_URI", ""))
    host = env.get("LOCAL_BIND_HOST") or env.get("DEMAND_SERVE_HOST") or "127.0.0.1"
    parser.add_argument("--host", default=host)
    parser.add_argument("--port", type=int, default=int(env.get("AIP_HTTP_PORT") or 8080))
    parser.add_argument("--health_route", default=env.get("AIP_HEALTH_ROUTE") or "/health")
    parser.add_argument("--predict_route", default=env.get("AIP_PREDICT_ROUTE") or "/predict")
    parser.add_argument(
        "--max_request_bytes",
        type=int,
        default=int(env.get("DEMAND_MAX_REQUEST_BYTES") or DEFAULT_MAX_REQUEST_BYTES),
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Loads the model and serves until SIGTERM or Ctrl-C.

    Returns:
        0 when stopped, 2 when the model cannot be loaded or the address bound.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.model_dir:
        parser.error("no model: set AIP_STORAGE_URI or pass --model_dir")
    if args.max_request_bytes < 1:
        parser.error(f"--max_request_bytes must be >= 1, got {args.max_request_bytes}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    config = ServeConfig(args.health_route, args.predict_route, args.max_request_bytes)
    try:
        model = load_model(readable_model_dir(args.model_dir))
    except (OSError, ValueError) as error:
        print(f"error: cannot load the model {args.model_dir}: {error}", file=sys.stderr)
        return 2
    try:
        server = PredictionServer((args.host, args.port), model, config)
    except (OSError, OverflowError) as error:
        print(f"error: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: object) -> None:
        # shutdown() waits for serve_forever, which runs on this thread: ask from another.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    log.info(
        "serving %s on %s:%d (POST %s, GET %s)",
        args.model_dir,
        args.host,
        server.server_address[1],
        config.predict_route,
        config.health_route,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

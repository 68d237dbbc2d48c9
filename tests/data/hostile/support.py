"""Helpers for the hostile-input and fuzz tests: a tiny real model artifact, raw HTTP, sockets.

The artifact is the reference trainer's real format (`trainer.export.export_model`) around an
untrained model with 12 drinks and 2 stores, so the real prediction server loads it in
milliseconds and every request goes through the real parsing and inference code.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[3]
MEMBERS = (11, 12, 13)
STORES = (1, 2)
N_DRINKS = 12
GOOD_INSTANCE: dict[str, Any] = {
    "member_id": 11,
    "store_id": 1,
    "timestamp": "2026-07-01T15:00:00",
    "k": 3,
}
GOOD_BODY = json.dumps({"instances": [GOOD_INSTANCE]}).encode()
# Liveness bound for "the server keeps answering": a socket timeout, not a performance claim.
ANSWER_WITHIN_S = 2.0


def write_tiny_artifact(model_dir: Path) -> Path:
    """Export an untrained recommender in the trainer's artifact format to `model_dir`."""
    from trainer.export import export_model
    from trainer.features import Catalogue
    from trainer.history import MemberHistory
    from trainer.model import DrinkRecommender, ModelConfig

    ints = np.arange(N_DRINKS, dtype=np.int64)
    catalogue = Catalogue(
        drink_ids=ints + 1,
        drink_names=[f"drink {i + 1}" for i in range(N_DRINKS)],
        drink_category=ints % 3,
        drink_cold=ints % 2,
        drink_region=np.full(N_DRINKS, -1, dtype=np.int64),
        drink_launch_day=np.zeros(N_DRINKS, dtype=np.int64),
        store_ids=np.asarray(STORES, dtype=np.int64),
        store_region=np.asarray([0, 1], dtype=np.int64),
        drink_season=np.full(N_DRINKS, -1, dtype=np.int64),
    )
    config = ModelConfig(
        n_members=len(MEMBERS),
        n_stores=len(STORES),
        n_drinks=N_DRINKS,
        n_categories=3,
        embedding_dim=4,
        hidden_dim=8,
    )
    export_model(
        model_dir,
        DrinkRecommender(config),
        catalogue,
        np.asarray(MEMBERS, dtype=np.int64),
        np.ones((len(STORES), N_DRINKS)),
        {},
        history=MemberHistory.from_counts(np.eye(len(MEMBERS) + 1, N_DRINKS, k=-1)),
    )
    return model_dir


TRAINER_SERVING_SPEC: dict[str, Any] = {
    "imageUri": "us-docker.pkg.dev/p/r/serve:v1",
    "command": ["python", "-m", "trainer.serve"],
    "healthRoute": "/health",
    "predictRoute": "/predict",
}
"""The container spec of a model version served by this repository's trainer."""
TRAINER_SERVING_EXTRAS = ("serve",)
_TRAINER_WHEEL: list[Path] = []


def trainer_serving_package(root: Path) -> str:
    """The trainer's wheel in the local root `root`, as the serving package of a version.

    The wheel is built once per test process; each root gets a copy.
    """
    import atexit
    import shutil
    import tempfile

    from vertex_retrain.build.wheel import build_wheel, package_source

    if not _TRAINER_WHEEL:
        out = Path(tempfile.mkdtemp(prefix="trainer-wheel-"))
        atexit.register(shutil.rmtree, out, True)  # the test process's own: gone with it
        _TRAINER_WHEEL.append(
            build_wheel(package_source(REPO / "examples/drink_shops/trainer"), out)
        )
    target = root / "gcs" / "models" / "packages" / _TRAINER_WHEEL[0].name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_TRAINER_WHEEL[0], target)
    return f"gs://models/packages/{target.name}"


ENDPOINT = "shop recs"


@contextlib.contextmanager
def router_over_trainer_server(
    root: Path, max_request_bytes: int | None = None, limits: Any = None
) -> Iterator[Any]:
    """Deploy the trainer's prediction server on the local backend and route to it.

    Args:
        root: Local storage root to use (VERTEX_LOCAL_ROOT is set to it meanwhile).
        max_request_bytes: The router's request limit (default: that of `limits`).
        limits: The router's `guarded_asgi.app.Limits` (default: the router's defaults).

    Yields:
        The running router (`vertex_retrain.backends.local.serving.router.RouterHandle`); on exit
        the router and the server process stop.
    """
    from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
    from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
    from vertex_retrain.backends.local.serving.router import start_router
    from vertex_retrain.backends.local.storage import to_local_path

    previous = os.environ.get("VERTEX_LOCAL_ROOT")
    os.environ["VERTEX_LOCAL_ROOT"] = str(root)
    try:
        uri = "gs://models/recs/1"
        write_tiny_artifact(to_local_path(uri))
        ModelRegistry().upload_version(
            "recs",
            artifact_uri=uri,
            container_spec=TRAINER_SERVING_SPEC,
            sample_instances=[GOOD_INSTANCE],
            serving_package_uri=trainer_serving_package(root),
            serving_extras=TRAINER_SERVING_EXTRAS,
        )
        endpoints = LocalEndpoints()
        endpoints.get_or_create(ENDPOINT)
        try:
            endpoints.deploy(ENDPOINT, "recs", "1")
            with start_router(
                ENDPOINT, max_request_bytes=max_request_bytes, limits=limits
            ) as handle:
                yield handle
        finally:
            stop_servers(ENDPOINT)
    finally:
        if previous is None:
            os.environ.pop("VERTEX_LOCAL_ROOT", None)
        else:
            os.environ["VERTEX_LOCAL_ROOT"] = previous


def post(
    port: int,
    path: str,
    body: bytes,
    *,
    content_length: str | None = "auto",
    timeout_s: float = ANSWER_WITHIN_S,
) -> tuple[int, dict[str, Any]]:
    """POST `body` on a fresh connection.

    `content_length` "auto" declares the body's size, None omits the header, and any other
    text is sent as the header's value as is (the body is sent regardless).

    Returns:
        The status and the parsed JSON answer.
    """
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        connection.putrequest("POST", path)
        connection.putheader("Content-Type", "application/json")
        if content_length == "auto":
            connection.putheader("Content-Length", str(len(body)))
        elif content_length is not None:
            connection.putheader("Content-Length", content_length)
        connection.endheaders()
        if body:
            connection.send(body)
        response = connection.getresponse()
        answer = json.loads(response.read())
        assert response.getheader("Content-Type") == "application/json"
        return response.status, answer
    finally:
        connection.close()


def error_message(answer: dict[str, Any]) -> str:
    """The message of an error answer, after checking it has the one error shape."""
    error = answer["error"]
    assert set(answer) == {"error"} and set(error) == {"code", "status", "message"}, answer
    return str(error["message"])


def raw_exchange(
    port: int, data: bytes, *, method: str | None = None, timeout_s: float = 10.0
) -> tuple[int, Any] | None:
    """Send raw bytes on a new connection and read one answer.

    Args:
        port: The server's port on 127.0.0.1.
        data: Everything the client sends.
        method: The request's method, if it has one (a HEAD answer has no body).
        timeout_s: Socket timeout (a liveness bound, not a speed claim).

    Returns:
        The status and the parsed JSON body (None for HEAD), or None when the server closed
        the connection without answering.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        # Refused early (the server closed while we sent): the answer may still be readable.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        try:
            return raw_answer(sock, method=method)
        except (http.client.RemoteDisconnected, ConnectionResetError):
            return None


def raw_answer(sock: socket.socket, *, method: str | None = None) -> tuple[int, Any]:
    """Read one answer from `sock`: its status and parsed JSON body (None for HEAD)."""
    response = http.client.HTTPResponse(sock, method=method)
    try:
        response.begin()
        body = response.read()
        return response.status, None if method == "HEAD" else json.loads(body)
    finally:
        response.close()


def expect_continue(port: int, path: str, length: int) -> socket.socket:
    """Start a POST that waits for `100 Continue` before its body; return once it came.

    The server sends `100 Continue` once it has taken the request and waits for its body
    (the application sees it when the body has arrived). Send `length` bytes on the
    returned socket to finish it (see `finish_continued`).
    """
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\nExpect: 100-continue\r\n\r\n"
    )
    sock.sendall(head.encode())
    reader = sock.makefile("rb")
    status_line = reader.readline()
    assert status_line.startswith(b"HTTP/1.1 100"), status_line
    while reader.readline() not in {b"\r\n", b""}:
        pass
    reader.close()
    return sock


def finish_continued(sock: socket.socket, body: bytes) -> tuple[int, Any]:
    """Send the body of an `expect_continue` request; return its status and JSON answer."""
    sock.sendall(body)
    response = http.client.HTTPResponse(sock)
    try:
        response.begin()
        return response.status, json.loads(response.read())
    finally:
        response.close()
        sock.close()


def stalled_connections(port: int, path: str, count: int) -> list[socket.socket]:
    """Open `count` connections that each promise 1000 body bytes, send 10, and then wait.

    They are opened 20 ms apart, which keeps the burst gentle on a loaded machine.
    """
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".encode()
    opened = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_WITHIN_S)
        sock.sendall(head + b'{"instance')
        opened.append(sock)
        time.sleep(0.02)
    return opened


def finish_stalled(sock: socket.socket) -> int:
    """Send the 990 body bytes a stalled connection still owes; return the answer's status."""
    sock.sendall(b" " * 990)
    status_line = sock.makefile("rb").readline()
    sock.close()
    return int(status_line.split()[1])


def listening_addresses(port: int) -> set[str]:
    """The local IPv4 addresses with a socket in LISTEN state on `port` (from /proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, _remote, state = line.split()[1:4]
        address, port_hex = local.split(":")
        if state == "0A" and int(port_hex, 16) == port:  # 0A: TCP_LISTEN
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found

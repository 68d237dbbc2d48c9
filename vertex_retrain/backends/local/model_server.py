"""Start, check and stop one model's prediction server, following Vertex's serving contract.

The server runs as its own process (own session, so it outlives a short-lived `deploy` call
and can be stopped with its children), logs to a file, and listens on a free loopback port
given as `AIP_HTTP_PORT`. A server counts as started only when its health route answers 200
and a sample prediction comes back well formed; otherwise it is stopped and the error carries
the tail of its log.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local import lifeline
from vertex_retrain.backends.local.serving_spec import (
    expand_references,
    resolve_serving_launch,
    serving_environment,
)
from vertex_retrain.backends.local.storage import gcs_root, to_local_path

LOOPBACK = "127.0.0.1"
_POLL_S = 0.05
# Popen objects of servers this process started, so their exit status is reaped (no zombies).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class ServerStartError(RuntimeError):
    """A prediction server did not start, become healthy or answer a sample prediction."""

    def __init__(self, message: str, *, pid: int | None, log_path: Path) -> None:
        """Builds the error; `message` already includes the log tail."""
        super().__init__(message)
        self.pid = pid
        self.log_path = log_path


@dataclass(frozen=True)
class ServerProcess:
    """A running prediction server.

    Attributes:
        pid: Process id (also its process group id).
        start_time: Kernel start time of the process, so a reused pid is never mistaken
            for the server (None where /proc is unavailable).
        port: Loopback port it listens on.
        log_path: File receiving its stdout and stderr.
        health_route: Path answering GET health checks.
        predict_route: Path taking POST `{"instances": [...]}`.
    """

    pid: int
    start_time: str | None
    port: int
    log_path: Path
    health_route: str
    predict_route: str


def free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _reap_others(pid: int) -> None:
    # A server killed from outside (SIGKILL, OOM) is otherwise never waited for: it stays a
    # zombie, and its Popen warns "still running" when this process exits.
    for other, child in list(_CHILDREN.items()):
        if other != pid and child.poll() is not None:
            _CHILDREN.pop(other, None)


def process_start_time(pid: int) -> str | None:
    """Return the kernel start time of a live (non-zombie) process, or None if it is gone."""
    _reap_others(pid)
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        _CHILDREN.pop(pid, None)
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        # No /proc (not Linux): fall back to a signal-0 probe without pid-reuse protection.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "unknown"
        return "unknown"
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] not in {"Z", "X"}:
        return fields[19]
    if child is not None and child.poll() is not None:
        # It exited between the poll above and the read: reap it now, or it stays a zombie
        # (and a "still running" ResourceWarning) until this process exits.
        _CHILDREN.pop(pid, None)
    return None


def is_running(pid: int | None, start_time: str | None) -> bool:
    """Whether `pid` is alive and is still the process that started at `start_time`."""
    if pid is None:
        return False
    current = process_start_time(pid)
    return current is not None and (start_time is None or current in {start_time, "unknown"})


def log_tail(path: Path, max_lines: int = 30) -> str:
    """Return the last `max_lines` lines of a log file ('' if it does not exist)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    return "\n".join(lines[-max_lines:])


def stop_server(pid: int | None, start_time: str | None, *, grace_s: float = 5.0) -> bool:
    """Stop a server and its children: SIGTERM, then SIGKILL after `grace_s`.

    Returns:
        True if a running process was stopped, False if it was already gone.
    """
    if pid is None:
        return False
    # Checked before the lease ends: a keeper whose lease ends stops its server at once, and
    # a server gone by the time of the check would count as not stopped by this call.
    running = is_running(pid, start_time)
    lifeline.drop_lease(pid)  # a leased server being stopped is never released
    if not running:
        return False
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not is_running(pid, start_time):
                return True
            time.sleep(_POLL_S)
    return True


def start_server(
    container_spec: Mapping[str, Any],
    *,
    artifact_uri: str,
    endpoint_id: str,
    deployed_model_id: str,
    model_display_name: str,
    version_id: str,
    log_path: Path,
    lease: bool = False,
) -> ServerProcess:
    """Start a prediction server process (not yet checked; see `start_checked_server`).

    With `lease` (Linux), the server runs under a keeper that stops it if this process dies
    before `lifeline.release(server.pid)` (a deploy releases it just before committing
    traffic); `server.pid` is then the keeper's, the leader of the server's process group.
    Servers never carry the run marker `VERTEX_RETRAIN_RUN`: they are not part of a run.

    Raises:
        RegistryInputError: No local command can be determined from the spec.
        ServerStartError: The program could not be executed.
    """
    port = free_port()
    storage_dir = str(to_local_path(artifact_uri))
    variables = serving_environment(
        container_spec,
        port=port,
        storage_dir=storage_dir,
        endpoint_id=endpoint_id,
        deployed_model_id=deployed_model_id,
        model_display_name=model_display_name,
        version_id=version_id,
    )
    launch = resolve_serving_launch(container_spec)
    argv = [expand_references(arg, variables) for arg in launch.argv]
    env = {
        **os.environ,
        **launch.env,
        **variables,
        "GCS_FUSE_ROOT": str(gcs_root()),
        # An image built for Vertex listens on every interface; here it stays on loopback
        # (servers that honour LOCAL_BIND_HOST, as trainer.serve does; docs/architecture.md).
        "LOCAL_BIND_HOST": "127.0.0.1",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop(lifeline.RUN_ENV, None)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(f"== deployed model {deployed_model_id}: {argv} port {port}\n".encode())
        for warning in launch.warnings:
            log.write(f"== warning: {warning}\n".encode())
        log.flush()
        keeper = None
        try:
            keeper = (
                lifeline.KeeperLaunch.create(argv, env) if lease and lifeline.supported() else None
            )
            child = subprocess.Popen(
                keeper.argv if keeper else argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=launch.cwd,
                start_new_session=True,
                pass_fds=keeper.pass_fds if keeper else (),
            )
        except OSError as error:
            if keeper is not None:
                keeper.failed()
            raise ServerStartError(
                f"could not execute the serving command {argv}: {error}; fix 'command' in "
                "the model version's serving container spec",
                pid=None,
                log_path=log_path,
            ) from error
    if keeper is not None:
        keeper.started(child.pid)
    _CHILDREN[child.pid] = child
    return ServerProcess(
        pid=child.pid,
        start_time=process_start_time(child.pid),
        port=port,
        log_path=log_path,
        health_route=variables["AIP_HEALTH_ROUTE"],
        predict_route=variables["AIP_PREDICT_ROUTE"],
    )


def _request(
    port: int, method: str, path: str, body: bytes | None, timeout_s: float
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout_s)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def probe(server: ServerProcess, *, timeout_s: float = 2.0) -> tuple[int, bytes]:
    """GET the server's health route once and return (status, body); raises OSError."""
    return _request(server.port, "GET", server.health_route, None, timeout_s)


def _exit_code(pid: int) -> int | None:
    """The exit status of a server this process started, None while it runs (or unknown)."""
    child = _CHILDREN.get(pid)
    return None if child is None else child.poll()


def _with_code(code: int | None) -> str:
    return "" if code is None else f" with code {code}"


def _fail(server: ServerProcess, problem: str) -> ServerStartError:
    code = _exit_code(server.pid)
    stop_server(server.pid, server.start_time)
    tail = log_tail(server.log_path)
    # A server that refuses its model says why on its last line (trainer.serve: one line,
    # exit 2); put that first, ahead of the whole tail.
    reason = tail.splitlines()[-1] if tail and code else ""
    return ServerStartError(
        f"prediction server (pid {server.pid}, port {server.port}) {problem}"
        f"{f': {reason}' if reason else ''}; it was stopped. "
        f"Last lines of {server.log_path}:\n{tail}",
        pid=server.pid,
        log_path=server.log_path,
    )


def wait_until_healthy(server: ServerProcess, *, timeout_s: float = 60.0) -> None:
    """Poll the health route until it answers 200.

    Raises:
        ServerStartError: The process exited or stayed unhealthy for `timeout_s` (it is
            stopped first).
    """
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        code = _exit_code(server.pid)
        if code is not None or not is_running(server.pid, server.start_time):
            raise _fail(server, f"exited{_with_code(code)} before its health route answered")
        try:
            status, body = probe(server)
        except OSError as error:
            last = f"{type(error).__name__}: {error}"
        else:
            if status == 200:
                return
            last = f"HTTP {status} {body[:200]!r}"
        time.sleep(_POLL_S)
    raise _fail(
        server, f"was not healthy after {timeout_s:g} s at GET {server.health_route} ({last})"
    )


def check_prediction(
    server: ServerProcess, instances: Sequence[Any], *, timeout_s: float = 30.0
) -> list[Any]:
    """Send `{"instances": ...}` and require `{"predictions": [...]}` of the same length.

    Returns:
        The predictions.

    Raises:
        ServerStartError: Error status, bad JSON or wrong shape (the server is stopped).
    """
    body = json.dumps({"instances": list(instances)}).encode()
    try:
        status, answer = _request(server.port, "POST", server.predict_route, body, timeout_s)
    except OSError as error:
        raise _fail(server, f"did not answer the sample prediction ({error})") from error
    if status != 200:
        raise _fail(server, f"answered the sample prediction with HTTP {status}: {answer[:300]!r}")
    try:
        parsed = json.loads(answer)
    except ValueError:
        raise _fail(
            server, f"answered the sample prediction with non-JSON {answer[:300]!r}"
        ) from None
    predictions = parsed.get("predictions") if isinstance(parsed, dict) else None
    if not isinstance(predictions, list) or len(predictions) != len(instances):
        raise _fail(
            server,
            f"answered {len(instances)} sample instance(s) with {answer[:300]!r}; expected "
            f'{{"predictions": [...]}} with {len(instances)} item(s)',
        )
    return predictions


def start_checked_server(
    container_spec: Mapping[str, Any],
    *,
    sample_instances: Sequence[Any],
    health_timeout_s: float = 60.0,
    lease: bool = False,
    **identity: Any,
) -> ServerProcess:
    """Start a server, wait for health, and check a sample prediction.

    Args:
        container_spec: Validated serving container spec.
        sample_instances: Instances for the smoke-test prediction (at least one).
        health_timeout_s: How long to wait for the health route.
        lease: Keep the server bound to this process until released (see `start_server`).
        **identity: `artifact_uri`, `endpoint_id`, `deployed_model_id`,
            `model_display_name`, `version_id`, `log_path` (see `start_server`).

    Returns:
        The healthy server.

    Raises:
        ServerStartError: Any check failed; no process is left running.
    """
    server = start_server(container_spec, lease=lease, **identity)
    try:
        wait_until_healthy(server, timeout_s=health_timeout_s)
        check_prediction(server, sample_instances)
    except BaseException:
        # Also on KeyboardInterrupt: never leave a half-checked server behind.
        stop_server(server.pid, server.start_time)
        raise
    return server

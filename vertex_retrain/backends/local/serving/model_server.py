"""Start, check and stop one model's prediction server, following Vertex's serving contract.

The server runs as its own process (own session, so it outlives a short-lived `deploy` call
and can be stopped with its children), logs to a file, and listens on a free loopback port
given as `AIP_HTTP_PORT`. A server counts as started only when its health route answers 200
and a sample prediction comes back well formed; otherwise it is stopped and the error carries
the tail of its log. The process bookkeeping (reaping, start times, stopping) lives in
`server_process`; the command comes from `serving_spec.resolve_serving_launch`, and runs in
the folder of its `TMPDIR` (inside the local root), never in this process's folder, from
which `python -m` would import.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local import lifeline
from vertex_retrain.backends.local.jobs.job_sandbox import CALLER_PYTHON_VARIABLES, TEMP_VARIABLES
from vertex_retrain.backends.local.serving.server_process import (
    LOOPBACK,
    exit_code,
    free_port,
    is_running,
    log_tail,
    process_start_time,
    server_tmpdir,
    stop_server,
    track,
)
from vertex_retrain.backends.local.serving.serving_spec import (
    ServingLaunch,
    expand_references,
    serving_environment,
)
from vertex_retrain.backends.local.storage import gcs_root, to_local_path

__all__ = [
    "ServerProcess",
    "ServerStartError",
    "check_prediction",
    "free_port",
    "is_running",
    "log_tail",
    "probe",
    "process_start_time",
    "start_checked_server",
    "start_server",
    "stop_server",
    "wait_until_healthy",
]
_POLL_S = 0.05


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


def start_server(
    container_spec: Mapping[str, Any],
    *,
    launch: ServingLaunch,
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
    `TMPDIR` is a folder beside the log (`server_tmpdir`), removed when the server is stopped
    with its log path.

    Args:
        container_spec: The version's serving container spec.
        launch: How to run it here (`serving_spec.resolve_serving_launch`).
        artifact_uri: The model folder (`AIP_STORAGE_URI`).
        endpoint_id: `AIP_ENDPOINT_ID`.
        deployed_model_id: `AIP_DEPLOYED_MODEL_ID`.
        model_display_name: `AIP_MODEL_NAME`.
        version_id: `AIP_VERSION_NAME`.
        log_path: Receives the server's output.
        lease: Keep the server bound to this process until released.

    Raises:
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
    argv = [expand_references(arg, variables) for arg in launch.argv]
    tmp = server_tmpdir(log_path)
    shutil.rmtree(tmp, ignore_errors=True)  # a stopped server's leftovers
    tmp.mkdir(parents=True)
    dropped = CALLER_PYTHON_VARIABLES if launch.isolated else ()
    env = {
        **{key: value for key, value in os.environ.items() if key not in dropped},
        **launch.env,
        **dict.fromkeys(TEMP_VARIABLES, str(tmp)),
        **variables,
        "GCS_FUSE_ROOT": str(gcs_root()),
        # An image built for Vertex listens on every interface; here it stays on loopback
        # (servers that honour LOCAL_BIND_HOST, as the examples' servers do; docs/architecture.md).
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
                cwd=launch.cwd or tmp,  # not this process's folder: `-m` imports from it
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
    track(child)
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


def _with_code(code: int | None) -> str:
    return "" if code is None else f" with code {code}"


def _fail(server: ServerProcess, problem: str) -> ServerStartError:
    code = exit_code(server.pid)
    stop_server(server.pid, server.start_time, log_path=server.log_path)
    tail = log_tail(server.log_path)
    # A server that refuses its model says why on its last line (the examples' servers: one
    # line, exit 2); put that first, ahead of the whole tail.
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
        code = exit_code(server.pid)
        if code is not None or not is_running(server.pid, server.start_time):
            # It may have exited between the two looks; the probe that saw it gone kept its code.
            code = exit_code(server.pid) if code is None else code
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
    launch: ServingLaunch,
    sample_instances: Sequence[Any],
    health_timeout_s: float = 60.0,
    lease: bool = False,
    **identity: Any,
) -> ServerProcess:
    """Start a server, wait for health, and check a sample prediction.

    Args:
        container_spec: Validated serving container spec.
        launch: How to run it here (`serving_spec.resolve_serving_launch`).
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
    server = start_server(container_spec, launch=launch, lease=lease, **identity)
    try:
        wait_until_healthy(server, timeout_s=health_timeout_s)
        check_prediction(server, sample_instances)
    except BaseException:
        # Also on KeyboardInterrupt: never leave a half-checked server behind.
        stop_server(server.pid, server.start_time, log_path=server.log_path)
        raise
    return server

"""A model server's process: started by this process, probed, stopped, cleaned up after.

Servers run in sessions of their own (so a stop reaches their children) and outlive the call
that started them. This module keeps the `Popen` of each server this process started, so that
its exit status is reaped (no zombies) and a server that exited is told from a live one, and
identifies a server by its pid and kernel start time, so a reused pid is never signalled.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from vertex_retrain.backends.local import lifeline

LOOPBACK = "127.0.0.1"
_POLL_S = 0.05
# Popen objects of servers this process started, so their exit status is reaped (no zombies).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
# Exit codes of reaped servers: whoever reaps one (a liveness probe, most often) must not hide
# its code from the caller that reports why it stopped.
_EXIT_CODES: dict[int, int] = {}


def track(child: subprocess.Popen[bytes]) -> None:
    """Keeps a started server's `Popen`, so its exit is reaped and its code known."""
    _EXIT_CODES.pop(child.pid, None)  # a reused pid: the old code is another process's
    _CHILDREN[child.pid] = child


def exit_code(pid: int) -> int | None:
    """The exit status of a server this process started, None while it runs (or unknown)."""
    child = _CHILDREN.get(pid)
    return _EXIT_CODES.get(pid) if child is None else child.poll()


def _forget(pid: int) -> None:
    """Drops a reaped child, keeping its exit code for :func:`exit_code`."""
    child = _CHILDREN.pop(pid, None)
    if child is not None and child.returncode is not None:
        _EXIT_CODES[pid] = child.returncode


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
            _forget(other)


def process_start_time(pid: int) -> str | None:
    """Return the kernel start time of a live (non-zombie) process, or None if it is gone."""
    _reap_others(pid)
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        _forget(pid)
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
        _forget(pid)
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


def server_tmpdir(log_path: Path) -> Path:
    """The server's `TMPDIR`: beside its log, inside the local root."""
    return log_path.with_name(f"{log_path.stem}.tmp")


def stop_server(
    pid: int | None,
    start_time: str | None,
    *,
    grace_s: float = 5.0,
    log_path: Path | str | None = None,
) -> bool:
    """Stop a server and its children: SIGTERM, then SIGKILL after `grace_s`.

    Args:
        pid: The server's (or its keeper's) pid.
        start_time: Its kernel start time (a reused pid is left alone).
        grace_s: Time between SIGTERM and SIGKILL.
        log_path: The server's log: its temporary folder beside it is removed once it stops.

    Returns:
        True if a running process was stopped, False if it was already gone.
    """
    try:
        return _stop(pid, start_time, grace_s)
    finally:
        if log_path:
            shutil.rmtree(server_tmpdir(Path(log_path)), ignore_errors=True)


def _stop(pid: int | None, start_time: str | None, grace_s: float) -> bool:
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

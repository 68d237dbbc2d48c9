"""Find processes a test module left running (Linux /proc; elsewhere nothing is found).

A process is the module's when it descends from this pytest process, or when its environment
names a ``VERTEX_LOCAL_ROOT`` under this session's temporary folder: a model server started
by a component subprocess outlives that subprocess and is re-parented away from pytest, but
it still carries the local root of the test that made it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")
SESSION_HELPERS = (
    "from multiprocessing.resource_tracker import main",
    "from multiprocessing.forkserver import main",
)
"""Helpers that multiprocessing starts once and that live as long as pytest itself."""


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, None when it is gone."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def _local_root(pid: int) -> str | None:
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    for item in raw.split(b"\0"):
        if item.startswith(b"VERTEX_LOCAL_ROOT="):
            return item.split(b"=", 1)[1].decode(errors="replace")
    return None


def _command(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]


def live_processes(owner: int, temp_root: Path) -> dict[int, str]:
    """Live (non-zombie) processes that descend from `owner` or carry a local root under
    `temp_root`, with their command lines."""
    if not PROC.is_dir():
        return {}
    parents: dict[int, int] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and int(entry.name) != owner:
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] not in {"Z", "X"}:
                parents[int(entry.name)] = stat[0]
    prefix = str(temp_root.resolve()) + os.sep
    found = {}
    for pid, parent in parents.items():
        ancestor: int | None = parent
        for _ in range(64):  # walk up to `owner`, or off the map of live processes
            if ancestor is None or ancestor == owner:
                break
            ancestor = parents.get(ancestor)
        root = _local_root(pid)
        if ancestor == owner or (root is not None and (root + os.sep).startswith(prefix)):
            command = _command(pid)
            if not any(helper in command for helper in SESSION_HELPERS):
                found[pid] = command
    return found


def leftovers(
    before: dict[int, str], owner: int, temp_root: Path, wait_s: float = 10.0
) -> dict[int, str]:
    """Processes found now but not in `before`, once those exiting have had `wait_s`."""
    deadline = time.monotonic() + wait_s
    while True:
        left = {p: c for p, c in live_processes(owner, temp_root).items() if p not in before}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def kill(pids: dict[int, str]) -> None:
    """SIGKILL each process group (servers lead their own), then the process itself."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)

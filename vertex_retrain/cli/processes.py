"""Leaving nothing running: the processes a command started end when the command ends.

kfp.local runs each task as a child process, and the local executor runs replicas as that
child's children. When ``run --local`` ends (finished, failed, Ctrl-C or SIGTERM) whatever is
left of that tree is stopped here: SIGTERM to every descendant, then SIGKILL to those still
alive after a grace period. Model servers are not in the tree (a deploy step starts them and
exits); :func:`vertex_retrain.backends.local.serving.endpoint_servers.stop_servers` stops those.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

_PROC = Path("/proc")


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc (empty without /proc)."""
    parents: dict[int, int] = {}
    for entry in _PROC.glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # it exited meanwhile
        # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of ``pid`` (default: this process), parents before children."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    queue = list(children.get(root, []))
    while queue:
        current = queue.pop(0)
        found.append(current)
        queue.extend(children.get(current, []))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[:1] != ["Z"]  # a zombie has exited


def stop_descendants(grace_s: float = 10.0, *, spare: frozenset[int] = frozenset()) -> int:
    """Stops every descendant of this process: SIGTERM, then SIGKILL after ``grace_s``.

    The whole tree is collected first, so a child whose parent dies first is not missed.

    Args:
        grace_s: How long the processes may take to exit after SIGTERM.
        spare: Descendants to leave alone: those that were there before the command started
            (a test runner's own servers, when a command runs inside it).

    Returns:
        How many processes were signalled.
    """
    pids = [pid for pid in descendants() if pid not in spare]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        _reap(pids)
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    _reap(pids)
    return len(pids)


def _reap(pids: list[int]) -> None:
    """Collects those of ``pids`` that are exited children of this process (no zombies)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived; raised like Ctrl-C so that every ``finally`` runs."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (main thread only)."""

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        # Ctrl-C reaches the whole foreground group; SIGTERM reached this process alone. Pass
        # it on first: the code that waits for a child as the exception unwinds (e.g.
        # subprocess.Popen's exit, which spares only KeyboardInterrupt itself) would otherwise
        # wait for a child that never heard it.
        for child in descendants():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGTERM)
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread: leave the handler alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

"""Processes that die with the process that started them, even when it is SIGKILLed.

A local run is a tree: `vertex-retrain run --local` (the run) starts each pipeline task as a
child (kfp.local), and a task starts replicas and model servers. A SIGKILL reaches only the
process it is sent to, and replicas run in sessions of their own (so that stopping one stops
its children), so nothing used to stop them when the run or the task was killed: a replica
went on training for a minute, and a model server of an unfinished deploy ran until someone
found it. Three mechanisms close that, each triggered by the kernel when a process dies,
however it dies (Linux's parent-death signal `prctl(PR_SET_PDEATHSIG)`, a pidfd, the end of
a pipe):

- **Replicas** are started through a few lines of Python (`die_with_parent_argv`) that ask
  for SIGKILL on the parent's death, check that the parent is still the one that started
  them, and `exec` the replica's program: same pid, same environment, same arguments. The
  parent is the task's supervisor; its own graceful stop (SIGTERM, grace period, SIGKILL)
  is unchanged.
- **A task** follows the run that started it (`bind_to_run`): SIGTERM on the run's death,
  which the executor turns into a cancelled job (replicas stopped, state written). kfp.local
  starts tasks through a shell, so here a thread waits on a pidfd of the run instead.
- **A model server of a deploy** must outlive the deploy (it serves afterwards) but not a
  deploy killed half-way. It runs under a small keeper (`KeeperLaunch`) that holds a lease
  from the deployer, a pipe, until the deploy calls `release` just before it commits
  traffic: a deployer killed earlier takes the server with it. A server released but not
  committed is left to the pending-deployment record (`pending_deploys`). `serve` starts
  its servers the same way and never releases them: they die with it.

Where these are not available (not Linux) programs start as before, and only the next
run's reconciliation (`reconcile`) finds what is left. The run marks its tree with the
environment variable `VERTEX_RETRAIN_RUN` (`run_scope`), so that reconciliation can tell the
processes of a dead run from those of a live one; model servers never carry it.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

RUN_ENV = "VERTEX_RETRAIN_RUN"
"""`<pid>:<kernel start time>:<local root>` of the run a process belongs to."""
JOB_ENV = "VERTEX_LOCAL_JOB"
"""The job folder (`<root>/jobs/<id>`) of a replica, set on every replica of a local job."""

_PROC = Path("/proc")
_FOLLOW_POLL_S = 0.5

# Run as `python -I -S -c`: no site import, nothing of this library, a few milliseconds.
_DIE_WITH_PARENT = """\
import ctypes, os, signal, sys
parent, argv = int(sys.argv[1]), sys.argv[2:]
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
if os.getppid() != parent:  # the parent died before the request: follow it now
    os.kill(os.getpid(), signal.SIGKILL)
try:
    os.execvp(argv[0], argv)
except OSError as error:
    sys.stderr.write(f"cannot execute {argv[0]!r}: {error}\\n")
    os._exit(127)
"""

_KEEPER = """\
import os, signal, sys, threading
lease, grace = int(sys.argv[1]), float(sys.argv[2])
die_with_parent, argv = sys.argv[3], sys.argv[4:]
child, stopping = 0, []
def signal_child(signum):
    try:  # the lease's end and a SIGTERM both stop: the second finds the server gone
        os.kill(child, signum)
    except ProcessLookupError:
        pass
def stop(*_):
    stopping.append(1)
    if child:
        signal_child(signal.SIGTERM)
        signal.setitimer(signal.ITIMER_REAL, grace)
def kill(*_):
    if child:
        signal_child(signal.SIGKILL)
def follow():
    if os.read(lease, 1) != b"r":  # end of file: the deployer died before releasing
        stop()
    os.close(lease)
signal.signal(signal.SIGALRM, kill)
for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(signum, stop)
threading.Thread(target=follow, daemon=True).start()
if stopping:
    sys.exit(0)
# The server gets SIGKILL if the keeper dies, however it dies.
wrapped = [sys.executable, "-I", "-S", "-c", die_with_parent, str(os.getpid()), *argv]
child = os.posix_spawn(sys.executable, wrapped, os.environ)
if stopping:
    stop()
code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
os._exit(128 - code if code < 0 else code)
"""
_LEASES: dict[int, int] = {}
"""Keeper pid -> the write end of its lease pipe, held by this process until `release`."""


def supported() -> bool:
    """Whether this system has the parent-death signal (Linux)."""
    return sys.platform.startswith("linux")


def _require_executable(argv: list[str], env: Mapping[str, str]) -> None:
    # The wrapper reports a missing program only as exit code 127; find it here instead, so
    # the caller gets the OSError it got when it started the program itself.
    if not argv:
        raise FileNotFoundError("empty command")
    program = argv[0]
    found = (
        os.access(program, os.X_OK)
        if os.sep in program
        else shutil.which(program, path=env.get("PATH", os.defpath))
    )
    if not found:
        raise FileNotFoundError(2, "No such file or directory (or not executable)", program)


def die_with_parent_argv(argv: list[str], env: Mapping[str, str]) -> list[str]:
    """The command that runs `argv` so that it gets SIGKILL when this process dies.

    Args:
        argv: The program and its arguments.
        env: The environment it will get (its PATH finds the program).

    Returns:
        `argv` itself where the signal is not available.

    Raises:
        FileNotFoundError: The program does not exist or is not executable.
    """
    if not supported():
        return argv
    _require_executable(argv, env)
    return [sys.executable, "-I", "-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), *argv]


@dataclass
class KeeperLaunch:
    """How to start a server under a keeper that this process holds on a lease.

    Start `argv` with `pass_fds=pass_fds`, then call `started(pid)` (or `failed()` when the
    start failed). The keeper is the process the caller starts and records: it starts the
    server as its child, in its process group, exits with the server's exit code and passes
    SIGTERM on (SIGKILL after the grace period); the server gets SIGKILL if the keeper dies.
    The lease is a pipe whose only write end this process holds: it reads end-of-file when
    this process dies, however it dies, and then stops the server, unless `release` wrote
    to it first. The byte is in the pipe before `release` returns, so a deployer killed
    right after releasing never takes the server with it.
    """

    argv: list[str]
    pass_fds: tuple[int, ...]
    _write: int

    @classmethod
    def create(
        cls, argv: list[str], env: Mapping[str, str], *, grace_s: float = 5.0
    ) -> KeeperLaunch:
        """Prepares the keeper of `argv`.

        Raises:
            FileNotFoundError: The program does not exist or is not executable.
        """
        _require_executable(argv, env)
        read, write = os.pipe()
        keeper = [sys.executable, "-I", "-S", "-c", _KEEPER, str(read), str(grace_s)]
        return cls([*keeper, _DIE_WITH_PARENT, *argv], (read,), write)

    def started(self, pid: int) -> None:
        """Hands the lease of the keeper `pid` to this process (see `release`)."""
        os.close(self.pass_fds[0])
        _LEASES[pid] = self._write

    def failed(self) -> None:
        """The keeper did not start: closes the pipe."""
        os.close(self.pass_fds[0])
        os.close(self._write)


def release(pid: int) -> None:
    """Lets the server of keeper `pid` outlive this process from now on."""
    write = _LEASES.pop(pid, None)
    if write is not None:
        with contextlib.suppress(OSError):  # a keeper gone already: nothing to release
            os.write(write, b"r")
        os.close(write)


def drop_lease(pid: int) -> None:
    """Ends the lease of keeper `pid` without releasing it: the keeper stops its server."""
    write = _LEASES.pop(pid, None)
    if write is not None:
        os.close(write)


def start_time(pid: int) -> str | None:
    """The kernel start time of a live process (None when gone, a zombie, or no /proc)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 and fields[0] not in {"Z", "X"} else None


def alive(pid: int | None, started: str | None) -> bool:
    """Whether `pid` runs and is the process that started at `started` (not a reused pid)."""
    if pid is None:
        return False
    current = start_time(int(pid))
    return current is not None and (started is None or current == started)


def identity(pid: int | None = None) -> dict[str, object]:
    """`{"pid", "start_time"}` of a process (default: this one), for a record on disk."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start_time": start_time(pid)}


def run_marker(root: Path) -> str:
    """The `VERTEX_RETRAIN_RUN` value of a run of this process under `root`."""
    return f"{os.getpid()}:{start_time(os.getpid()) or ''}:{root.resolve()}"


def parse_run_marker(value: str) -> tuple[int, str | None, str] | None:
    """`(pid, start time, root)` of a `VERTEX_RETRAIN_RUN` value; None when malformed."""
    pid, _, rest = value.partition(":")
    started, _, root = rest.partition(":")
    if not pid.isdigit() or not root:
        return None
    return int(pid), started or None, root


@contextlib.contextmanager
def run_scope(root: Path) -> Iterator[str]:
    """Marks everything this process starts in the block as part of one run under `root`."""
    previous = os.environ.get(RUN_ENV)
    marker = run_marker(root)
    os.environ[RUN_ENV] = marker
    try:
        yield marker
    finally:
        if previous is None:
            os.environ.pop(RUN_ENV, None)
        else:
            os.environ[RUN_ENV] = previous


_WATCHED: set[str] = set()


def _follow(run_pid: int, run_started: str | None) -> None:
    """Waits for the run to exit, then sends this process SIGTERM (a daemon thread)."""
    descriptor = None
    with contextlib.suppress(OSError, AttributeError):
        descriptor = os.pidfd_open(run_pid)  # Linux >= 5.3: readable once the process exits
    try:
        if descriptor is not None and alive(run_pid, run_started):
            select.select([descriptor], [], [])
        else:
            while alive(run_pid, run_started):
                time.sleep(_FOLLOW_POLL_S)
    finally:
        if descriptor is not None:
            os.close(descriptor)
    os.kill(os.getpid(), signal.SIGTERM)


def bind_to_run() -> bool:
    """In a pipeline task: get SIGTERM when the run that started it dies, however it dies.

    kfp.local starts each task through `sh -c`, so the run is the task's grandparent and
    the parent-death signal would follow the shell. A daemon thread waits on a pidfd of the
    run instead (polling where pidfds are missing) and sends SIGTERM to this process when
    the run is gone; the executor turns that into a cancelled job. Calling it again is free.

    Returns:
        True when this process follows a run (`VERTEX_RETRAIN_RUN` names a live run that is
        not this process).
    """
    marker = os.environ.get(RUN_ENV, "")
    parsed = parse_run_marker(marker)
    if parsed is None or parsed[0] == os.getpid() or not supported():
        return False
    if marker in _WATCHED:
        return True
    run_pid, run_started, _ = parsed
    _WATCHED.add(marker)
    threading.Thread(
        target=_follow, args=(run_pid, run_started), name="follow-run", daemon=True
    ).start()
    return True

"""Processes that die with the process that started them, even when it is SIGKILLed.

A local run is a tree: `compile.py run --local` (the run) starts each pipeline task as a
child (kfp.local), and a task starts replicas and model servers. A SIGKILL reaches only the
process it is sent to, and replicas run in sessions of their own (so that stopping one stops
its children), so nothing used to stop them when the run or the task was killed: a replica
went on training for a minute, and a model server of an unfinished deploy ran until someone
found it. Three mechanisms close that, all from Linux's parent-death signal
(`prctl(PR_SET_PDEATHSIG)`, which the kernel delivers when the parent dies, however it dies):

- **Replicas** are started through a few lines of Python (`die_with_parent_argv`) that ask
  for SIGKILL on the parent's death, check that the parent is still the one that started
  them, and `exec` the replica's program: same pid, same environment, same arguments. The
  parent is the task's supervisor; its own graceful stop (SIGTERM, grace period, SIGKILL)
  is unchanged.
- **A task** follows the run that started it (`bind_to_run`): SIGTERM on the run's death,
  which the executor turns into a cancelled job (replicas stopped, state written). kfp.local
  starts tasks through a shell, so here a thread waits on a pidfd of the run instead.
- **A model server of a deploy** must outlive the deploy (it serves afterwards) but not a
  deploy killed half-way. It runs under a small keeper (`keeper_argv`) that holds the
  parent-death signal until the deploy calls `release`, just before it commits traffic: a
  deployer killed earlier takes the server with it. A server released but not committed is
  left to the pending-deployment record (`pending_deploys`).

Where the signal is not available (not Linux) programs start as before, and only the next
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
import ctypes, os, signal, sys
owner, grace = int(sys.argv[1]), float(sys.argv[2])
die_with_parent, argv = sys.argv[3], sys.argv[4:]
prctl = ctypes.CDLL(None, use_errno=True).prctl
child, stopping = 0, []
def release(signum, frame):
    prctl(1, 0, 0, 0, 0)  # released: the server outlives the deployer from now on
def stop(signum, frame):
    stopping.append(signum)
    if child:
        os.kill(child, signal.SIGTERM)
        signal.setitimer(signal.ITIMER_REAL, grace)
def kill(signum, frame):
    if child:
        os.kill(child, signal.SIGKILL)
signal.signal(signal.SIGUSR1, release)
signal.signal(signal.SIGALRM, kill)
for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(signum, stop)
prctl(1, signal.SIGTERM, 0, 0, 0)
if os.getppid() != owner or stopping:
    sys.exit(0)  # the deployer is gone, or the server was stopped: start nothing
# The server itself gets SIGKILL if the keeper dies, however it dies.
wrapped = [sys.executable, "-I", "-S", "-c", die_with_parent, str(os.getpid()), *argv]
child = os.posix_spawn(sys.executable, wrapped, os.environ)
if stopping:
    stop(signal.SIGTERM, None)
code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
os._exit(128 - code if code < 0 else code)
"""


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


def keeper_argv(argv: list[str], env: Mapping[str, str], *, grace_s: float = 5.0) -> list[str]:
    """The command that runs a server under a keeper bound to this process until `release`.

    The keeper is the process the caller starts (and records): it starts the server as its
    child in its own process group, exits with the server's exit code, and passes SIGTERM on
    (SIGKILL after `grace_s`). Before `release` it stops the server when this process dies.

    Returns:
        `argv` itself where the signal is not available.

    Raises:
        FileNotFoundError: The program does not exist or is not executable.
    """
    if not supported():
        return argv
    _require_executable(argv, env)
    keeper = [sys.executable, "-I", "-S", "-c", _KEEPER, str(os.getpid()), str(grace_s)]
    return [*keeper, _DIE_WITH_PARENT, *argv]


def release(pid: int) -> None:
    """Let a server started with `keeper_argv` outlive this process from now on."""
    if supported():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGUSR1)


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

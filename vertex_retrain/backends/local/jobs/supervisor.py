"""Starting, watching and stopping the processes of one job attempt.

Each replica runs in its own session (so its process group holds it and every child it
spawns); stopping a replica signals the whole group: SIGTERM, a grace period, then SIGKILL.
Nothing a replica started survives the attempt. A replica also dies when the process that
started it dies, even by SIGKILL, with no one left to stop it (Linux's parent-death signal,
see `lifeline.die_with_parent_argv`).
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from vertex_retrain.backends.local.lifeline import die_with_parent_argv

POLL_SECONDS = 0.02
LogSink = Callable[[str], None]


class Outcome(enum.Enum):
    """How an attempt ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"


@dataclass(frozen=True)
class LaunchSpec:
    """What to run for one replica."""

    name: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    log_file: Path
    primary: bool = False


@dataclass
class AttemptReport:
    """What happened to the replicas of one attempt."""

    outcome: Outcome
    returncodes: dict[str, int | None] = field(default_factory=dict)
    failed_replica: str | None = None
    wall_seconds: float = 0.0
    stop_seconds: float = 0.0


class _Replica:
    def __init__(self, spec: LaunchSpec, on_log: LogSink | None) -> None:
        self.spec = spec
        spec.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[str] = spec.log_file.open("a", encoding="utf-8", buffering=1)
        self.process = subprocess.Popen(
            die_with_parent_argv(spec.argv, spec.env),
            cwd=spec.cwd,
            env=spec.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._reader = threading.Thread(
            target=self._pump, args=(on_log,), name=f"log-{spec.name}", daemon=True
        )
        self._reader.start()

    def _pump(self, on_log: LogSink | None) -> None:
        assert self.process.stdout is not None
        prefix = f"[{self.spec.name}] "
        for raw in iter(self.process.stdout.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self._log.write(line + "\n")
            if on_log is not None:
                on_log(prefix + line)

    def signal_group(self, signum: int) -> bool:
        """Send `signum` to the replica's process group; False when the group is gone."""
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def close(self) -> None:
        self.process.wait()
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()


def _stop(replicas: list[_Replica], grace_seconds: float) -> None:
    """SIGTERM every group, wait up to the grace period, then SIGKILL what is left."""
    for replica in replicas:
        replica.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline and any(r.process.poll() is None for r in replicas):
        time.sleep(POLL_SECONDS)
    for replica in replicas:
        # The group may outlive its leader (children of the replica): kill it regardless.
        replica.signal_group(signal.SIGKILL)
        replica.process.wait()


def run_attempt(
    launches: list[LaunchSpec],
    *,
    grace_seconds: float,
    deadline: float | None = None,
    preempt_at: float | None = None,
    cancel: threading.Event | None = None,
    on_log: LogSink | None = None,
) -> AttemptReport:
    """Run every replica until the job ends, then make sure none is left running.

    The attempt succeeds when the primary replica exits 0 (Vertex then shuts down the
    others); it fails as soon as any replica exits non-zero.

    Args:
        launches: One LaunchSpec per replica; exactly one has `primary=True`.
        grace_seconds: Time between SIGTERM and SIGKILL when stopping replicas.
        deadline: `time.monotonic()` value at which the attempt times out.
        preempt_at: `time.monotonic()` value at which to simulate a Spot preemption.
        cancel: Set it (e.g. from a signal handler) to cancel the attempt.
        on_log: Receives every log line, prefixed with `[workerpoolN-i]`.

    Returns:
        The attempt's outcome, each replica's return code, and the failing replica if any.
    """
    started = time.monotonic()
    replicas: list[_Replica] = []
    report = AttemptReport(Outcome.FAILED)
    try:
        for launch in launches:
            replicas.append(_Replica(launch, on_log))
        report = _watch(replicas, deadline, preempt_at, cancel)
    finally:
        stopping = time.monotonic()
        _stop(replicas, grace_seconds)
        report.stop_seconds = time.monotonic() - stopping
        for replica in replicas:
            replica.close()
            report.returncodes.setdefault(replica.spec.name, replica.process.returncode)
        report.wall_seconds = time.monotonic() - started
    return report


def _watch(
    replicas: list[_Replica],
    deadline: float | None,
    preempt_at: float | None,
    cancel: threading.Event | None,
) -> AttemptReport:
    primary = next(r for r in replicas if r.spec.primary)
    while True:
        codes = {r.spec.name: r.process.poll() for r in replicas}
        for replica in replicas:
            code = codes[replica.spec.name]
            if code is not None and code != 0:
                return AttemptReport(Outcome.FAILED, codes, failed_replica=replica.spec.name)
        if codes[primary.spec.name] == 0:
            return AttemptReport(Outcome.SUCCEEDED, codes)
        now = time.monotonic()
        if cancel is not None and cancel.is_set():
            return AttemptReport(Outcome.CANCELLED, codes)
        if deadline is not None and now >= deadline:
            return AttemptReport(Outcome.TIMED_OUT, codes)
        if preempt_at is not None and now >= preempt_at:
            return AttemptReport(Outcome.PREEMPTED, codes)
        time.sleep(POLL_SECONDS)


@contextlib.contextmanager
def cancel_on_signals(cancel: threading.Event) -> Iterator[threading.Event]:
    """Turn SIGINT and SIGTERM into `cancel.set()` while the block runs.

    Outside the main thread Python cannot install handlers; the block then relies on the
    caller to set `cancel` itself.
    """
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, lambda *_: cancel.set())
    try:
        yield cancel
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

"""What a killed run leaves behind, found and cleaned up by the next run under the same root.

`lifeline` makes replicas and servers die with their parents, but a process can still be
left: a child a replica started in its own process group, a task that was stopping when the
run was killed, a server released by a deploy killed before its commit. And a job whose
process was killed never writes its end: its `state.json` says JOB_STATE_RUNNING for good.
Before it starts, the next local run (`reconcile_root`) therefore:

1. stops (SIGTERM, a grace period, SIGKILL) every process of this root that belongs to a
   dead run (`VERTEX_RETRAIN_RUN` names a run whose process is gone) or to a job whose
   owning process is gone (`VERTEX_LOCAL_JOB`);
2. ends each job left JOB_STATE_RUNNING by a dead process: JOB_STATE_CANCELLED when its
   run was killed (the user stopped the run), else JOB_STATE_FAILED (its task died); the
   error says which process died and when the state was reconciled;
3. stops the servers of deploys killed before their commit (`pending_deploys`).

A process of a live run, or a job whose process lives, is never touched: two runs of
different models under one root may run at once.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local import lifeline
from vertex_retrain.backends.local.model_registry.registry_db import DB_FILENAME
from vertex_retrain.backends.local.serving.pending_deploys import StoppedServer, reconcile_pending

_PROC = Path("/proc")
_POLL_S = 0.05
RUNNING = "JOB_STATE_RUNNING"


@dataclass
class Reconciliation:
    """What `reconcile_root` did."""

    jobs: dict[str, str] = field(default_factory=dict)
    """Job id -> the state it was given."""
    processes: list[int] = field(default_factory=list)
    """Leftover processes stopped."""
    servers: list[StoppedServer] = field(default_factory=list)
    """Model servers of unfinished deploys stopped."""

    def line(self) -> str:
        """One line saying what was reconciled; empty when nothing was."""
        parts = []
        if self.jobs:
            ends = ", ".join(f"{job} -> {state}" for job, state in sorted(self.jobs.items()))
            parts.append(f"{len(self.jobs)} job(s) left RUNNING by a killed run ended ({ends})")
        if self.processes:
            parts.append(f"{len(self.processes)} leftover process(es) stopped")
        if self.servers:
            pids = ", ".join(str(s.pid) for s in self.servers)
            parts.append(f"model server(s) of unfinished deploys stopped (pid {pids})")
        return "reconciled: " + "; ".join(parts) if parts else ""


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    wanted = (lifeline.RUN_ENV.encode() + b"=", lifeline.JOB_ENV.encode() + b"=")
    found = {}
    for item in raw.split(b"\0"):
        if item.startswith(wanted):
            key, _, value = item.partition(b"=")
            found[key.decode()] = value.decode(errors="replace")
    return found


def _dead_run(marker: str, root: Path) -> bool:
    parsed = lifeline.parse_run_marker(marker)
    if parsed is None or Path(parsed[2]) != root:
        return False
    return not lifeline.alive(parsed[0], parsed[1])


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _orphaned_jobs(root: Path) -> dict[Path, dict[str, Any]]:
    """Jobs recorded RUNNING whose owning process is gone."""
    found = {}
    for path in sorted((root / "jobs").glob("*/state.json")):
        state = _read_state(path)
        if state is None or state.get("state") != RUNNING:
            continue
        owner = state.get("owner")
        owner = owner if isinstance(owner, dict) else {}
        if not lifeline.alive(owner.get("pid"), owner.get("start_time")):
            found[path.parent] = state
    return found


def _leftovers(root: Path, dead_jobs: set[str]) -> list[int]:
    if not _PROC.is_dir():
        return []
    own = {os.getpid(), os.getppid()}
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in own:
            continue
        marks = _environ(int(entry.name))
        run, job = marks.get(lifeline.RUN_ENV), marks.get(lifeline.JOB_ENV)
        if (run and _dead_run(run, root)) or (job and job in dead_jobs):
            found.append(int(entry.name))
    return found


def _stop(pids: list[int], grace_s: float) -> None:
    for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(lifeline.start_time(p) for p in pids):
            for pid in pids:  # ours to reap when the run that reconciles started them
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
            time.sleep(_POLL_S)
        if not any(lifeline.start_time(p) for p in pids):
            return


def _end_state(state: dict[str, Any]) -> tuple[str, str]:
    owner = state.get("owner") or {}
    run = lifeline.parse_run_marker(str(state.get("run") or ""))
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    if run is not None and not lifeline.alive(run[0], run[1]):
        return "JOB_STATE_CANCELLED", (
            f"its pipeline run (pid {run[0]}) was killed while the job ran; the next run "
            f"(pid {os.getpid()}) ended it on {now}"
        )
    return "JOB_STATE_FAILED", (
        f"the process running it (pid {owner.get('pid')}) died without recording an end; "
        f"the next run (pid {os.getpid()}) ended it on {now}"
    )


def reconcile_root(root: Path, *, grace_s: float = 10.0) -> Reconciliation:
    """Stops what killed runs left under `root` and ends their jobs' states.

    Args:
        root: The local storage root.
        grace_s: How long leftover processes get between SIGTERM and SIGKILL.

    Returns:
        What was done (see `Reconciliation.line`).
    """
    root = root.resolve()
    done = Reconciliation()
    orphaned = _orphaned_jobs(root)
    done.processes = _leftovers(root, {str(folder) for folder in orphaned})
    if done.processes:
        _stop(done.processes, grace_s)
        orphaned = _orphaned_jobs(root)  # tasks just stopped may have ended their jobs
    for folder in orphaned:
        fresh = _read_state(folder / "state.json")
        if fresh is None or fresh.get("state") != RUNNING:
            continue  # its task ended it while stopping
        end, error = _end_state(fresh)
        atomic_write_json(folder / "state.json", {**fresh, "state": end, "error": error})
        done.jobs[str(fresh.get("job_id") or folder.name)] = end
    database = root / DB_FILENAME
    if (root / "serving" / "pending").is_dir():
        connection = sqlite3.connect(database) if database.is_file() else None
        try:
            done.servers = reconcile_pending(root, connection)
        except sqlite3.Error:
            pass  # an unreadable registry: leave the records (the registry commands say why)
        finally:
            if connection is not None:
                connection.close()
    return done

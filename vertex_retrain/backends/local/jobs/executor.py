"""The local CustomJob executor: every replica of every pool as a process on this machine.

`run_custom_job` takes the Vertex REST CustomJob payload, sets each replica's environment
as Vertex does, streams logs with a `[workerpoolN-i]` prefix into one file per replica under
`<root>/jobs/<job_id>/logs/`, enforces `scheduling.timeout`, cancels on SIGINT/SIGTERM, and
rehearses Spot preemptions when asked. The job's state is kept in `<root>/jobs/<id>/state.json`,
which names the process running the job while it runs, so that the next local run can tell a
job whose process was killed from a running one (`reconcile`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.jobs import job_payload as jp
from vertex_retrain.backends.local.jobs.cluster_env import cluster_layout, output_dirs, replica_env
from vertex_retrain.backends.local.jobs.exit_advice import advice_for, normalise_exit_code
from vertex_retrain.backends.local.jobs.job_sandbox import JobSandbox
from vertex_retrain.backends.local.jobs.pool_launch import PoolLaunch, resolve_pool
from vertex_retrain.backends.local.jobs.spot import (
    GoodputStats,
    PreemptionSchedule,
    read_progress,
    stockout_message,
)
from vertex_retrain.backends.local.jobs.supervisor import (
    LaunchSpec,
    Outcome,
    cancel_on_signals,
    run_attempt,
)
from vertex_retrain.backends.local.lifeline import JOB_ENV, RUN_ENV, bind_to_run, identity
from vertex_retrain.backends.local.storage import local_root, to_local_path
from vertex_retrain.rules.spot_fallback import MAX_SPOT_RESTARTS

RUNNING = "JOB_STATE_RUNNING"
SUCCEEDED = "JOB_STATE_SUCCEEDED"
FAILED = "JOB_STATE_FAILED"
CANCELLED = "JOB_STATE_CANCELLED"
DEFAULT_GRACE_SECONDS = 5.0
LOG_TAIL_LINES = 40

__all__ = [
    "CANCELLED",
    "FAILED",
    "RUNNING",
    "SUCCEEDED",
    "LocalJobResult",
    "PreemptionSchedule",
    "ReplicaFailure",
    "run_custom_job",
]


@dataclass(frozen=True)
class ReplicaFailure:
    """The replica that failed a job, and what its exit code suggests."""

    replica: str
    exit_code: int
    signal: str | None
    log_tail: str
    advice: str


@dataclass
class LocalJobResult:
    """Final report of a local CustomJob, in Vertex's terms.

    Attributes:
        job_id: Local job id (folder name under `<root>/jobs/`).
        state: JOB_STATE_SUCCEEDED, JOB_STATE_FAILED or JOB_STATE_CANCELLED.
        error: Why the job failed or was cancelled; None on success.
        failure: The failing replica (exit code, log tail, advice), when one failed.
        log_files: Log file of each replica, by name (`workerpool0-0`, ...).
        job_dir: `<root>/jobs/<job_id>`.
        model_dir: `AIP_MODEL_DIR` as a URI (None without a base output directory).
        model_path: `AIP_MODEL_DIR` on this machine.
        wall_seconds: Wall time of the whole job, restarts included.
        restarts: Restarts after Spot preemptions or worker failures.
        goodput: Goodput statistics (always recorded; steps need the progress file).
        warnings: Differences from Vertex worth knowing (framework versions, images).
        reason: The failure's reason code, as Vertex's ``ErrorInfo`` gives one: ``STOCKOUT``
            after Spot preemptions exhausted Vertex's six restarts; "" otherwise.
    """

    job_id: str
    state: str
    error: str | None
    failure: ReplicaFailure | None
    log_files: dict[str, Path]
    job_dir: Path
    model_dir: str | None
    model_path: Path | None
    wall_seconds: float
    restarts: int
    goodput: GoodputStats
    warnings: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def succeeded(self) -> bool:
        """True when the job ended in JOB_STATE_SUCCEEDED."""
        return self.state == SUCCEEDED


def _merge_env(*layers: dict[str, str]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for layer in layers:
        for key, value in layer.items():
            if key == "PYTHONPATH" and merged.get(key):
                value = os.pathsep.join([value, merged[key]])
            merged[key] = value
    return merged


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _checked_spec(
    payload: dict[str, Any], preemption: PreemptionSchedule | None, root: Path
) -> dict:
    spec = jp.job_spec_of(payload)
    problems = jp.local_problems(spec) or jp.core_validation_errors(payload, root)
    strategy = jp.scheduling_of(spec).get("strategy", "STANDARD")
    if preemption is not None and strategy != "SPOT":
        problems.append(
            "a preemption schedule rehearses Spot VMs, but jobSpec.scheduling.strategy is "
            f"{strategy!r}; set it to 'SPOT' or drop the schedule"
        )
    if problems:
        raise jp.JobSpecError("cannot run this CustomJob locally:\n  " + "\n  ".join(problems))
    return spec


def run_custom_job(
    payload: dict[str, Any],
    *,
    job_id: str | None = None,
    root: Path | None = None,
    preemption: PreemptionSchedule | None = None,
    on_log: Callable[[str], None] | None = None,
    extra_env: dict[str, str] | None = None,
    trial_id: str | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    cancel: threading.Event | None = None,
) -> LocalJobResult:
    """Run a Vertex CustomJob payload on this machine and report its final state.

    Args:
        payload: The CustomJob REST dict (camelCase), or its bare `jobSpec`.
        job_id: Folder name under `<root>/jobs/`; generated from displayName when None.
        root: Local storage root; defaults to `local_root()`.
        preemption: Spot rehearsal schedule; needs `scheduling.strategy == "SPOT"`.
        on_log: Receives each prefixed log line; defaults to printing to stdout.
        extra_env: Variables added to every replica's environment (last, so they win).
        trial_id: Tuning trial id (`CLOUD_ML_TRIAL_ID` and the task's "trial").
        grace_seconds: SIGTERM-to-SIGKILL delay when cancelling, timing out or failing.
        cancel: Event that cancels the job when set (SIGINT/SIGTERM also cancel when
            called from the main thread).

    Returns:
        The job's state, failing replica with exit code, log tail and advice, log files,
        model directory, goodput and restarts.

    Raises:
        JobSpecError: The payload is invalid or cannot run locally; nothing was started.
        PoolLaunchError, ImageNotBuiltError, PackageEnvError, StorageError: A pool's
            program cannot be prepared; nothing was started.
    """
    root = (root or local_root()).resolve()
    spec = _checked_spec(payload, preemption, root)
    bind_to_run()  # in a pipeline task: a killed run cancels the job (SIGTERM)
    scheduling = jp.scheduling_of(spec)
    timeout = jp.parse_duration(scheduling.get("timeout"), "jobSpec.scheduling.timeout")
    restart_on_worker_failure = bool(scheduling.get("restartJobOnWorkerRestart", False))
    launches = {
        number: resolve_pool(pool, root)
        for number, pool in enumerate(spec["workerPoolSpecs"])
        if pool
    }
    job_id = job_id or jp.new_job_id(str(payload.get("displayName", "")))
    job_dir = root / "jobs" / job_id
    (job_dir / "work").mkdir(parents=True, exist_ok=True)
    sandbox = JobSandbox.open(root, job_dir)
    warnings = sorted({w for launch in launches.values() for w in launch.warnings})
    warnings += sandbox.warnings
    atomic_write_json(
        job_dir / "state.json",
        {
            "job_id": job_id,
            "state": RUNNING,
            "display_name": payload.get("displayName"),
            "owner": identity(),
            "run": os.environ.get(RUN_ENV),
        },
    )
    sink = on_log or (lambda line: print(line, flush=True))
    for warning in warnings:
        sink(f"[executor] warning: {warning}")
    out_dirs = output_dirs(jp.base_output_uri(spec))
    checkpoint_path = to_local_path(out_dirs["AIP_CHECKPOINT_DIR"], root) if out_dirs else None
    cancel = cancel or threading.Event()
    try:
        with cancel_on_signals(cancel):
            outcome = _run_attempts(
                spec, launches, job_id=job_id, job_dir=job_dir, root=root, sink=sink,
                extra_env={**(extra_env or {}), JOB_ENV: str(job_dir)}, trial_id=trial_id,
                grace_seconds=grace_seconds, sandbox=sandbox,
                cancel=cancel, timeout=timeout, preemption=preemption,
                restart_on_worker_failure=restart_on_worker_failure,
                checkpoint_path=checkpoint_path,
            )  # fmt: skip
    finally:
        sandbox.close()
    escaped = sandbox.violation() if outcome["state"] == SUCCEEDED else None
    if escaped is not None:
        outcome.update(state=FAILED, error=escaped)
    result = LocalJobResult(
        job_id=job_id,
        warnings=warnings,
        model_dir=out_dirs.get("AIP_MODEL_DIR"),
        model_path=to_local_path(out_dirs["AIP_MODEL_DIR"], root) if out_dirs else None,
        job_dir=job_dir,
        **outcome,
    )
    atomic_write_json(job_dir / "state.json", _state_record(result, payload))
    return result


def _run_attempts(
    spec: dict[str, Any],
    launches: dict[int, PoolLaunch],
    *,
    job_id: str,
    job_dir: Path,
    root: Path,
    sink: Callable[[str], None],
    extra_env: dict[str, str],
    trial_id: str | None,
    grace_seconds: float,
    sandbox: JobSandbox,
    cancel: threading.Event,
    timeout: float | None,
    preemption: PreemptionSchedule | None,
    restart_on_worker_failure: bool,
    checkpoint_path: Path | None,
) -> dict[str, Any]:
    started = time.monotonic()
    deadline = started + timeout if timeout is not None else None
    delays = preemption.delays() if preemption else []
    replicas = jp.replicas_of(spec)
    log_files = {r.name: job_dir / "logs" / f"{r.name}.log" for r in replicas}
    goodput = GoodputStats()
    preemptions = 0
    attempt = 0
    while True:
        layout = cluster_layout(replicas)
        specs = []
        for replica in replicas:
            launch = launches[replica.pool]
            vertex_env = replica_env(
                replica, layout, spec, job_id=job_id, root=root, trial_id=trial_id
            )
            specs.append(
                LaunchSpec(
                    name=replica.name,
                    argv=sandbox.argv(launch.argv),
                    cwd=launch.cwd or job_dir / "work",
                    env=_merge_env(
                        launch.inherited(os.environ),
                        vertex_env,
                        sandbox.env(replica.name),
                        launch.env,
                        extra_env,
                    ),
                    log_file=log_files[replica.name],
                    primary=replica.pool == 0,
                )
            )
        if attempt:
            for path in log_files.values():
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(f"--- restart {attempt} ---\n")
        delay = delays[attempt] if attempt < len(delays) else None
        before = read_progress(checkpoint_path)
        report = run_attempt(
            specs,
            grace_seconds=preemption.grace_seconds if preemption else grace_seconds,
            deadline=deadline,
            preempt_at=time.monotonic() + delay if delay is not None else None,
            cancel=cancel,
            on_log=sink,
        )
        goodput.record_attempt(
            report.outcome.value,
            report.wall_seconds,
            before,
            read_progress(checkpoint_path),
            stop_seconds=report.stop_seconds,
        )
        state, error, failure, reason = SUCCEEDED, None, None, ""
        if report.outcome is Outcome.PREEMPTED:
            preemptions += 1
            if preemptions <= MAX_SPOT_RESTARTS:
                sink(f"[executor] Spot preemption {preemptions}: restarting the job")
                attempt += 1
                continue
            state, error, reason = FAILED, stockout_message(preemptions), "STOCKOUT"
        elif report.outcome is Outcome.FAILED and report.failed_replica:
            failure = _failure(report.failed_replica, report.returncodes, log_files)
            primary_failed = report.failed_replica.startswith("workerpool0-")
            if restart_on_worker_failure and not primary_failed and attempt < MAX_SPOT_RESTARTS:
                sink(f"[executor] {failure.replica} failed; restartJobOnWorkerRestart restarts")
                attempt += 1
                continue
            state = FAILED
            error = f"replica {failure.replica} exited with code {failure.exit_code}"
        elif report.outcome is Outcome.TIMED_OUT:
            state, error = FAILED, f"the job exceeded scheduling.timeout ({timeout:g}s)"
        elif report.outcome is Outcome.CANCELLED:
            state, error = CANCELLED, "the job was cancelled"
        goodput.restarts = attempt
        return {
            "state": state,
            "error": error,
            "reason": reason,
            "failure": failure,
            "log_files": log_files,
            "wall_seconds": time.monotonic() - started,
            "restarts": attempt,
            "goodput": goodput,
        }


def _failure(name: str, codes: dict[str, int | None], logs: dict[str, Path]) -> ReplicaFailure:
    exit_code, signal_name = normalise_exit_code(codes[name] or 0)
    tail = _log_tail(logs[name])
    return ReplicaFailure(name, exit_code, signal_name, tail, advice_for(exit_code, tail))


def _state_record(result: LocalJobResult, payload: dict[str, Any]) -> dict[str, Any]:
    failure = result.failure.__dict__ if result.failure else None
    return {
        "job_id": result.job_id,
        "display_name": payload.get("displayName"),
        "state": result.state,
        "error": result.error,
        "failure": failure,
        "log_files": {k: str(v) for k, v in result.log_files.items()},
        "model_dir": result.model_dir,
        "wall_seconds": round(result.wall_seconds, 3),
        "restarts": result.restarts,
        "goodput": result.goodput.as_dict(),
        "warnings": result.warnings,
        "python": sys.executable,
    }

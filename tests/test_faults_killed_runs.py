"""Killed and concurrent local runs on one root: SIGKILL of `compile.py run --local`
mid-training, then of a run's whole process group, then a run started beside a working one.

The runs are real: the drink shops' weekly pipeline (`compile.py run
examples/drink_shops/pipelines.py:weekly --local`) on tiny data, with the trainer held
after a step (`TRAINER_FAULTS={"hold_at_step": N}`) so a kill lands mid-training
whatever the machine's speed. Every process of the runs carries FAULT_TAG, so the test finds
them in /proc. Before the fix, the replica went on for a minute after either kill (nothing
stopped it), its `state.json` said JOB_STATE_RUNNING for good, and a re-run started while
it was still there. Before the run lock, two runs at once both judged their candidate
against the same (absent) champion, and both were promoted and deployed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from data.faults.support import TAG_VARIABLE, wait_until_gone

from tests.examples import DRINK_SHOPS, example_module
from trainer.data import generate
from trainer.faults import faults_env, pause_marker
from trainer.world import WorldConfig
from vertex_retrain.backends.local import lifeline
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.storage import to_local_path

CHAIN = example_module(DRINK_SHOPS, "pipelines")
RUN_WEEKLY = Path(__file__).parent / "data" / "faults" / "run_weekly.py"
LOCK = f"locks/run-{CHAIN.MODEL}.lock"

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
RUN = [sys.executable, "compile.py", "run", f"{DRINK_SHOPS / 'pipelines.py'}:weekly", "--local"]
PARAMS = [
    "--param",
    f"source_uri={DRINK_SHOPS / 'trainer'}",
    "--param",
    'training_args=["--epochs", "1", "--batch_size", "64"]',
]


def _held(step: int) -> str:
    """What a replica's log says once it holds after `step`."""
    return pause_marker(0, "step", step).split(" pid 0")[1]  # " paused in step at step N"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "root"
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(root))
    monkeypatch.setenv(TAG_VARIABLE, f"killed-{tmp_path.name}-{os.getpid()}")
    generate(
        WorldConfig(members=200, stores=10, weeks=8, seed=1),
        str(to_local_path(CHAIN.DATA_URI)),
    )
    yield root
    left = wait_until_gone(os.environ[TAG_VARIABLE], seconds=0)
    for pid in left:  # only after a failed assertion: never leak into other modules
        os.kill(pid, signal.SIGKILL)


def _start_held_run(
    root: Path,
    log: Path,
    step: int = 1,
    before: frozenset[Path] = frozenset(),
    orphan: tuple[int, str | None] | None = None,
) -> tuple[subprocess.Popen[bytes], Path]:
    """Starts the run in its own process group; returns it once a replica holds at `step`.

    Args:
        root: The local root.
        log: Where the run's output goes.
        step: The training step the replica holds after.
        before: Job folders of earlier runs (their replicas' logs may say the same).
        orphan: A killed run's replica (pid, kernel start time), which must be gone by the
            time this run's replica writes its first line.
    """
    env = {**os.environ, **faults_env(hold_at_step=step), "PYTHONPATH": str(REPO)}
    with log.open("wb") as out:
        run = subprocess.Popen(
            [*RUN, *PARAMS], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        for replica_log in root.glob("jobs/*/logs/workerpool0-0.log"):
            job_dir = replica_log.parent.parent
            if job_dir in before:
                continue
            if orphan is not None:
                assert not lifeline.alive(*orphan), "the run trained beside the orphan"
            if _held(step) in replica_log.read_text(errors="replace"):
                return run, job_dir
        time.sleep(0.02)
    run.kill()
    run.wait()
    pytest.fail(f"the run never reached training step {step}:\n{log.read_text()[-3000:]}")


def _state(job_dir: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((job_dir / "state.json").read_text())
    return loaded


def _replica(job_dir: Path) -> tuple[int, str | None]:
    """The held replica's pid (its log says it) and kernel start time."""
    text = (job_dir / "logs" / "workerpool0-0.log").read_text(errors="replace")
    pid = int(text.split(_held(1))[0].rsplit(" pid ", 1)[1])
    return pid, lifeline.start_time(pid)


def test_sigkill_of_a_run_or_its_process_group_is_stopped_then_reconciled_by_the_next_runs(
    root: Path, tmp_path: Path
) -> None:
    """Three runs on one root (a whole pipeline run each: the three share the data).

    1. The run alone is killed mid-training: its task and replica live on, until its task
       cancels the job on the run's death, or the next run stops what was left.
    2. The next run must not train beside that orphan. It is killed with its whole process
       group mid-training (held after step 2: it may resume from the first job's checkpoint
       at step 1): no one is left to cancel its job.
    3. The run after that reconciles exactly that job, and completes.
    """
    tag = os.environ[TAG_VARIABLE]
    run, job_dir = _start_held_run(root, tmp_path / "run.log")
    assert _state(job_dir)["state"] == "JOB_STATE_RUNNING"
    held = _replica(job_dir)
    os.kill(run.pid, signal.SIGKILL)  # the run only: its task and the replica live on
    run.wait()

    # At once, a second run: by the time it trains, the first run's replica must be gone.
    group, group_job = _start_held_run(root, tmp_path / "group.log", 2, frozenset({job_dir}), held)
    os.killpg(group.pid, signal.SIGKILL)  # the run and its task at once: no one cancels
    group.wait()
    # The replica got SIGKILL from the kernel when its task died; the first run's task is
    # gone too (it cancelled its job, or the second run stopped it).
    assert wait_until_gone(tag, seconds=60) == {}
    assert _state(group_job)["state"] == "JOB_STATE_RUNNING"  # nobody could write its end

    # The next run ends that job; while it works it is the model's only run: one started
    # beside it is refused at once (before, both judged their candidates against the same
    # absent champion, and both were promoted and deployed).
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out, err = tmp_path / "rerun.out", tmp_path / "rerun.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        rerun = subprocess.Popen([*RUN, *PARAMS], cwd=REPO, env=env, stdout=stdout, stderr=stderr)
    try:
        lock, deadline = root / LOCK, time.monotonic() + 120
        while not (lock.is_file() and lock.read_text().startswith(f"pid {rerun.pid},")):
            assert rerun.poll() is None and time.monotonic() < deadline, err.read_text()[-3000:]
            time.sleep(0.05)
        beside = subprocess.run(
            [sys.executable, str(RUN_WEEKLY)], env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert rerun.poll() is None, "the run beside it waited for it instead of being refused"
        assert rerun.wait(timeout=300) == 0, out.read_text()[-3000:] + err.read_text()[-3000:]
    finally:
        if rerun.poll() is None:
            rerun.kill()
            rerun.wait()
    lines = [line for line in out.read_text().splitlines() if line.startswith("reconciled:")]
    assert lines == [
        f"reconciled: 1 job(s) left RUNNING by a killed run ended "
        f"({group_job.name} -> JOB_STATE_CANCELLED)"
    ]
    state = _state(group_job)
    assert state["state"] == "JOB_STATE_CANCELLED"
    assert f"pipeline run (pid {group.pid}) was killed" in str(state["error"])
    state = _state(job_dir)
    assert state["state"] == "JOB_STATE_CANCELLED", state
    assert wait_until_gone(tag, seconds=60) == {}

    assert beside.stdout.strip(), beside.stderr[-3000:]
    refused = json.loads(beside.stdout.strip().splitlines()[-1])
    assert refused["succeeded"] is False
    assert f"already working on model '{CHAIN.MODEL}'" in refused["refused"]
    assert f"pid {rerun.pid}" in refused["refused"]
    assert "another VERTEX_LOCAL_ROOT" in refused["refused"]
    # The registry and endpoint hold exactly what the run alone made: its first champion.
    versions = ModelRegistry().list_versions(CHAIN.MODEL)
    assert [sorted(v.aliases) for v in versions] == [["champion", "default"]]
    assert list(LocalEndpoints().get(CHAIN.MODEL).traffic_split.values()) == [100]
    # A pipeline root for each of the three runs; the refused run made none.
    assert len(list((root / "pipeline-root").iterdir())) == 3

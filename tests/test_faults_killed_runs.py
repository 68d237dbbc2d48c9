"""SIGKILL of `compile.py run --local` mid-training, then of its whole process group.

The run is real: the drink shops' weekly pipeline (`compile.py run
examples/drink_shops/pipelines.py:weekly --local`) on tiny data, with the trainer held
after its first step (`TRAINER_FAULTS={"hold_at_step": 1}`) so the kill lands mid-training
whatever the machine's speed. Every process of the run carries FAULT_TAG, so the test finds
them in /proc. Before the fix, the replica went on for a minute after either kill (nothing
stopped it), its `state.json` said JOB_STATE_RUNNING for good, and a re-run started while
it was still there.
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
from vertex_retrain.backends.local.storage import to_local_path

CHAIN = example_module(DRINK_SHOPS, "pipelines")

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
RUN = [sys.executable, "compile.py", "run", f"{DRINK_SHOPS / 'pipelines.py'}:weekly", "--local"]
PARAMS = [
    "--param",
    f"source_uri={DRINK_SHOPS / 'trainer'}",
    "--param",
    'training_args=["--epochs", "1", "--batch_size", "64"]',
]
HELD = pause_marker(0, "step", 1).split(" pid 0")[1]  # " paused in step at step 1"


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


def _start_held_run(root: Path, log: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Starts the run in its own process group; returns it once a replica holds at step 1."""
    env = {**os.environ, **faults_env(hold_at_step=1), "PYTHONPATH": str(REPO)}
    with log.open("wb") as out:
        run = subprocess.Popen(
            [*RUN, *PARAMS], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        for replica_log in root.glob("jobs/*/logs/workerpool0-0.log"):
            if HELD in replica_log.read_text(errors="replace"):
                return run, replica_log.parent.parent
        time.sleep(0.1)
    run.kill()
    run.wait()
    pytest.fail(f"the run never reached training step 1:\n{log.read_text()[-3000:]}")


def _state(job_dir: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((job_dir / "state.json").read_text())
    return loaded


def test_sigkill_of_the_run_cancels_its_job_and_a_rerun_never_overlaps_it(
    root: Path, tmp_path: Path
) -> None:
    run, job_dir = _start_held_run(root, tmp_path / "run.log")
    assert _state(job_dir)["state"] == "JOB_STATE_RUNNING"
    held = _replica_pid(job_dir)
    os.kill(run.pid, signal.SIGKILL)  # the run only: its task and the replica live on
    run.wait()
    # A re-run at once: by the time it trains, the killed run's replica must be gone (its
    # task cancelled the job on the run's death, or the re-run stopped what was left).
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with (tmp_path / "rerun.log").open("wb") as out:
        rerun = subprocess.Popen([*RUN, *PARAMS], cwd=REPO, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 240
        while rerun.poll() is None and time.monotonic() < deadline:
            if [
                p
                for p in root.glob("jobs/*/logs/workerpool0-0.log")
                if p.parent != job_dir / "logs"
            ]:
                assert lifeline.start_time(held) is None, "the re-run trained beside the orphan"
                break
            time.sleep(0.02)
        assert rerun.wait(timeout=240) == 0, (tmp_path / "rerun.log").read_text()[-3000:]
    finally:
        if rerun.poll() is None:
            rerun.kill()
            rerun.wait()
    assert wait_until_gone(os.environ[TAG_VARIABLE], seconds=60) == {}
    state = _state(job_dir)
    assert state["state"] == "JOB_STATE_CANCELLED", state


def _replica_pid(job_dir: Path) -> int:
    text = (job_dir / "logs" / "workerpool0-0.log").read_text(errors="replace")
    return int(text.split(HELD)[0].rsplit(" pid ", 1)[1])


def test_sigkill_of_the_run_s_process_group_is_reconciled_by_the_next_run(
    root: Path, tmp_path: Path
) -> None:
    run, job_dir = _start_held_run(root, tmp_path / "run.log")
    os.killpg(run.pid, signal.SIGKILL)  # the run and its task at once: no one cancels
    run.wait()
    # The replica got SIGKILL from the kernel when its task died.
    assert wait_until_gone(os.environ[TAG_VARIABLE], seconds=60) == {}
    assert _state(job_dir)["state"] == "JOB_STATE_RUNNING"  # nobody could write its end
    rerun = subprocess.run(
        [*RUN, *PARAMS], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    lines = [line for line in rerun.stdout.splitlines() if line.startswith("reconciled:")]
    assert lines == [
        f"reconciled: 1 job(s) left RUNNING by a killed run ended "
        f"({job_dir.name} -> JOB_STATE_CANCELLED)"
    ]
    state = _state(job_dir)
    assert state["state"] == "JOB_STATE_CANCELLED"
    assert f"pipeline run (pid {run.pid}) was killed" in str(state["error"])
    assert wait_until_gone(os.environ[TAG_VARIABLE], seconds=60) == {}

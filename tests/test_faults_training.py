"""Fault injection into training, run for real: SIGTERM and SIGKILL at chosen and seeded points.

The reference trainer runs as real processes on tiny data. Preemptions hit it during a step,
inside a checkpoint write (between the data file and its SHA-256 sidecar) and during
evaluation; a worker of a three-replica DDP job is SIGKILLed. Each interrupted run must leave
a durable, verifiable newest checkpoint, and the resumed run must end with exactly the
weights and metrics of an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from data.faults.support import TAG_VARIABLE, tagged_processes, wait_until_gone

from trainer.checkpoint import CheckpointManager
from trainer.data import generate
from trainer.faults import FAULTS_ENV, faults_env, pause_marker
from trainer.split import make_time_split
from trainer.world import WorldConfig
from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.executor import FAILED, SUCCEEDED, run_custom_job
from vertex_retrain.backends.local.jobs.spot import PreemptionSchedule

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
FAULTS = Path(__file__).parent / "data" / "faults"
SEED = 20240607
FLAGS = ["--epochs", "2", "--batch_size", "64", "--log_every_steps", "1", "--num_threads", "1"]
FLAGS += ["--checkpoint_every_steps", "5", "--device", "cpu", "--seed", "3"]
TOTAL_STEPS = 26  # 2 epochs of the tiny dataset's training period (13 full batches of 64 each)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("faults-root")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VERTEX_LOCAL_ROOT", str(root))
        yield root


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("faults-data")
    generate(WorldConfig(members=200, stores=10, weeks=8, seed=1), str(folder / "data"))
    make_time_split(str(folder / "data"), str(folder / "split"))
    return folder / "split" / "manifest.json"


@pytest.fixture(scope="module")
def image(root: Path) -> str:
    return build_container_image(FAULTS, image_uri="us-docker.pkg.dev/p/r/faults:v1").uri


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any Vertex job variables, plus `extra`."""
    job_vars = ("AIP_", "CLOUD_ML_", "CLUSTER_SPEC", "TF_CONFIG", FAULTS_ENV)
    env = {k: v for k, v in os.environ.items() if not k.startswith(job_vars)}
    for key in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "GCS_FUSE_ROOT"):
        env.pop(key, None)
    env.update(PYTHONPATH=str(REPO), **extra)
    return env


def _start(manifest: Path, out: Path, log: Path, **env: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "trainer.task", "--data", str(manifest)]
    with log.open("ab") as sink:
        return subprocess.Popen(
            [*argv, "--output_dir", str(out), *FLAGS],
            env=_clean_env(CLOUD_ML_HP_METRIC_FILE=str(out / "hp" / "metrics"), **env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def _wait(condition: Any, proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"never saw {what}; trainer log:\n{log.read_text()[-3000:]}")
        time.sleep(0.01)


def _marker_step(log: Path, pid: int, phase: str) -> int | None:
    prefix = pause_marker(pid, phase)
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith(prefix):
            return int(line[len(prefix) :])
    return None


def _interrupt_in(
    manifest: Path, out: Path, log: Path, phase: str, signum: int, **faults: Any
) -> tuple[int, int]:
    """Run with `faults` until the trainer pauses in `phase`, send `signum`; return (step,
    exit code)."""
    proc = _start(manifest, out, log, **faults_env(**faults))
    _wait(lambda: _marker_step(log, proc.pid, phase) is not None, proc, f"{phase} marker", log)
    proc.send_signal(signum)
    code = proc.wait(timeout=120)
    step = _marker_step(log, proc.pid, phase)
    assert step is not None
    return step, code


def _progress(checkpoints: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((checkpoints / "progress.json").read_text())
    return loaded


def _assert_durable(checkpoints: Path) -> int:
    """The newest checkpoint the trainer reported as durable loads; no sidecar vouches for a
    damaged file. Returns that step."""
    manager = CheckpointManager(checkpoints)
    latest = manager.load_latest()
    assert latest is not None, sorted(p.name for p in checkpoints.iterdir())
    assert latest[0] == _progress(checkpoints)["checkpoint_step"]
    for step in manager.steps():
        if manager.path(step).with_name(manager.path(step).name + ".sha256").is_file():
            assert int(manager.load(step)["step"]) == step
    return latest[0]


def _metrics(model_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((model_dir / "metrics.json").read_text())
    return loaded


def _assert_same_model(model_dir: Path, reference: Path) -> None:
    expected = torch.load(reference / "weights.pt", weights_only=True)
    got = torch.load(model_dir / "weights.pt", weights_only=True)
    for name, tensor in expected.items():
        torch.testing.assert_close(got[name], tensor, rtol=0, atol=1e-6, msg=name)
    ref, res = _metrics(reference), _metrics(model_dir)
    for name in ("ndcg_at_10", "recall_at_10", "baseline_ndcg_at_10"):
        assert res[name] == pytest.approx(ref[name], abs=1e-6), name
    assert res["training"]["steps"] == ref["training"]["steps"] == TOTAL_STEPS


@pytest.fixture(scope="module")
def reference(manifest: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    proc = _start(manifest, out, out / "train.log")
    assert proc.wait(timeout=240) == 0, (out / "train.log").read_text()[-3000:]
    return out / "model"


def test_trainer_survives_sigterm_and_sigkill_in_every_phase(
    manifest: Path, reference: Path, tmp_path: Path
) -> None:
    out, log = tmp_path / "run", tmp_path / "train.log"
    ckpts = out / "checkpoints"
    # 1. SIGTERM during training, at a seeded random step: checkpoint at that step, exit 143.
    # The trainer holds after the target step until the signal comes, so the signal lands on
    # that step however slowly either process runs.
    target = random.Random(SEED).randint(3, 12)
    step, code = _interrupt_in(manifest, out, log, "step", signal.SIGTERM, hold_at_step=target)
    assert code == 143 and step == target
    first = _assert_durable(ckpts)
    assert first == _progress(ckpts)["step"] == target

    # 2. The grace period runs out inside a checkpoint write: the data file is there, its
    # sidecar is not, so it must never be taken as the latest.
    step, code = _interrupt_in(
        manifest, out, log, "checkpoint", signal.SIGKILL, pause_in="checkpoint", pause_s=60
    )
    assert code == -signal.SIGKILL and step > first
    assert CheckpointManager(ckpts).path(step).is_file()
    assert _assert_durable(ckpts) == first

    # 3. SIGTERM inside a checkpoint write: the write finishes, and the trainer stops at the
    # next step boundary with one more checkpoint.
    step, code = _interrupt_in(
        manifest, out, log, "checkpoint", signal.SIGTERM, pause_in="checkpoint", pause_s=1
    )
    assert code == 143 and step > first
    assert _assert_durable(ckpts) == _progress(ckpts)["step"] >= step

    # 4. SIGKILL during evaluation: training is done and checkpointed, nothing is exported.
    step, code = _interrupt_in(
        manifest, out, log, "evaluate", signal.SIGKILL, pause_in="evaluate", pause_s=60
    )
    assert code == -signal.SIGKILL and step == TOTAL_STEPS
    assert _assert_durable(ckpts) == TOTAL_STEPS
    assert not (out / "model" / "artifact.json").exists()

    # 5. SIGTERM during evaluation: the trainer finishes evaluating and exports (exit 0).
    step, code = _interrupt_in(
        manifest, out, log, "evaluate", signal.SIGTERM, pause_in="evaluate", pause_s=1
    )
    assert code == 0, log.read_text()[-3000:]
    assert _metrics(out / "model")["training"]["resumed_from_step"] == TOTAL_STEPS
    _assert_same_model(out / "model", reference)
    assert len(CheckpointManager(ckpts).steps()) == 2


def test_checkpoint_save_never_prunes_itself_for_stale_unverified_newer_files(
    tmp_path: Path,
) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(5, {"step": 5})
    # Two lost attempts were killed between data file and sidecar, at steps 10 and 8.
    for stale in (10, 8):
        path = manager.save(stale, {"step": stale})
        path.with_name(path.name + ".sha256").unlink()
    manager.save(6, {"step": 6})
    latest = manager.load_latest()
    assert latest is not None and latest[0] == 6
    assert manager.steps() == [6, 5]


def _spot_job(image: str, manifest: Path, name: str, **scheduling: Any) -> dict[str, Any]:
    return {
        "displayName": name,
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "containerSpec": {
                        "imageUri": image,
                        "args": ["-m", "trainer.task", "--data", str(manifest), *FLAGS],
                    },
                }
            ],
            "scheduling": scheduling,
            "baseOutputDirectory": {"outputUriPrefix": f"gs://bkt/{name}"},
        },
    }


def test_executor_spot_job_resumes_through_seeded_random_preemptions(
    root: Path, image: str, manifest: Path, reference: Path
) -> None:
    schedule = PreemptionSchedule(rate_per_second=0.25, seed=12, max_preemptions=2)
    first, second = schedule.delays()[:2]  # seconds into attempts 1 and 2: 2.6 and 4.3
    assert first is not None and second is not None
    # Preemptions come on a clock, so each step sleeps: an attempt does at most one step per
    # `step_s` seconds. The second attempt then has at least TOTAL_STEPS - first / step_s
    # steps left, more than it can do before its own preemption, on any machine.
    step_s = 0.3
    assert (TOTAL_STEPS - first / step_s) * step_s > second
    lines: list[str] = []
    result = run_custom_job(
        _spot_job(image, manifest, "spot-random", strategy="SPOT"),
        preemption=schedule,
        extra_env={"PYTHONPATH": str(REPO), **faults_env(step_sleep_s=step_s)},
        on_log=lines.append,
    )
    assert result.state == SUCCEEDED, result.error
    assert result.restarts == 2
    outcomes = [a["outcome"] for a in result.goodput.attempts]
    assert outcomes == ["preempted", "preempted", "succeeded"]
    assert result.model_path is not None
    _assert_same_model(result.model_path, reference)
    checkpoints = root / "gcs" / "bkt" / "spot-random" / "checkpoints"
    assert _assert_durable(checkpoints) == TOTAL_STEPS
    assert result.goodput.useful_steps == TOTAL_STEPS


def _three_replica_job(name: str, image: str, args: list[str], restart: bool) -> dict[str, Any]:
    pools = [
        {
            "machineSpec": {"machineType": "n1-standard-4"},
            "replicaCount": count,
            "containerSpec": {"imageUri": image, "args": args},
        }
        for count in (1, 2)
    ]
    return {
        "displayName": name,
        "jobSpec": {
            "workerPoolSpecs": pools,
            "scheduling": {"restartJobOnWorkerRestart": restart},
            "baseOutputDirectory": {"outputUriPrefix": f"gs://bkt/{name}"},
        },
    }


def _kill_rank_2_when(
    tag: str, ready: Any, seen: set[int], killed: list[int], done: threading.Event
) -> None:
    """SIGKILL the replica with RANK=2 once `ready(processes)` holds; note every replica
    seen until `done` is set (run on a thread)."""
    while not done.is_set():
        procs = tagged_processes(tag)
        seen.update(procs)
        if not killed and ready(procs):
            victim = next(p for p, env in procs.items() if env.get("RANK") == "2")
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
        time.sleep(0.02)


def _run_with_killer(
    payload: dict[str, Any], tag: str, ready: Any, extra_env: dict[str, str]
) -> tuple[Any, list[str], set[int]]:
    seen: set[int] = set()
    killed: list[int] = []
    done = threading.Event()
    killer = threading.Thread(
        target=_kill_rank_2_when, args=(tag, ready, seen, killed, done), daemon=True
    )
    killer.start()
    lines: list[str] = []
    try:
        result = run_custom_job(
            payload,
            extra_env={**extra_env, TAG_VARIABLE: tag},
            grace_seconds=3.0,
            on_log=lines.append,
        )
    finally:
        done.set()
        killer.join(timeout=10)
    assert killed, "the worker was never killed"
    seen.update(tagged_processes(tag))
    assert len(seen) >= 3
    assert wait_until_gone(tag) == {}, "a replica outlived its job"
    return result, lines, seen


def test_executor_three_replica_job_fails_naming_the_sigkilled_worker(
    root: Path, image: str
) -> None:
    tag = f"fail-{os.getpid()}"
    payload = _three_replica_job("three-fail", image, ["-c", "import time; time.sleep(600)"], False)
    result, _, seen = _run_with_killer(payload, tag, lambda procs: len(procs) == 3, {})
    assert result.state == FAILED
    assert result.error == "replica workerpool1-1 exited with code 137"
    assert result.failure is not None and result.failure.signal == "SIGKILL"
    assert result.restarts == 0 and len(seen) == 3


def test_executor_three_replica_ddp_job_restarts_after_a_worker_is_sigkilled(
    root: Path, image: str, manifest: Path
) -> None:
    tag = f"ddp-{os.getpid()}"
    checkpoints = root / "gcs" / "bkt" / "three-ddp" / "checkpoints"

    def checkpointed(_: dict[int, dict[str, str]]) -> bool:
        if not (checkpoints / "progress.json").is_file():
            return False
        return (_progress(checkpoints)["checkpoint_step"] or 0) >= 5

    args = ["-m", "trainer.task", "--data", str(manifest), *FLAGS, "--batch_size", "32"]
    payload = _three_replica_job("three-ddp", image, args, True)
    env = {"PYTHONPATH": str(REPO), **faults_env(step_sleep_s=0.1)}
    result, lines, seen = _run_with_killer(payload, tag, checkpointed, env)
    assert result.state == SUCCEEDED, result.error
    assert result.restarts == 1
    assert any("workerpool1-1 failed; restartJobOnWorkerRestart restarts" in x for x in lines)
    assert result.model_path is not None
    training = _metrics(result.model_path)["training"]
    assert training["world_size"] == 3 and training["steps"] == training["total_steps"]
    assert training["resumed_from_step"] >= 5
    assert len(seen) >= 5  # the second attempt's three replicas, too

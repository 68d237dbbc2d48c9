"""Checkpoints planted in the checkpoint folder: FIFOs, links to /dev/zero, folders, files too
large, valid tensors in the wrong structure. Each is skipped with one log line and never
read or applied, the trainer resumes from the newest checkpoint that fits, and it answers
SIGTERM while it reads checkpoints (exit 143, nothing written, nothing pruned)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from trainer.checkpoint import CheckpointInterruptedError, CheckpointManager, capture_rng
from trainer.data import generate
from trainer.faults import faults_env, pause_marker
from trainer.model import DrinkRecommender, ModelConfig
from trainer.optim import TrainingOptimizer
from trainer.resume import Resumed, checkpoint_bound, resume
from trainer.split import make_time_split
from trainer.world import WorldConfig

REPO = Path(__file__).resolve().parent.parent
DIGEST = "0" * 64
LIVENESS_S = 60.0


def _sidecar(folder: Path, step: int, text: str = DIGEST) -> None:
    (folder / f"ckpt-{step:08d}.pt.sha256").write_text(text + "\n")


def _plant(folder: Path) -> dict[int, str]:
    """Newer checkpoints than any good one, each of another kind; their expected refusal."""
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "ckpt-00000099.pt")
    _sidecar(folder, 99)
    (folder / "ckpt-00000098.pt").symlink_to("/dev/zero")
    _sidecar(folder, 98)
    (folder / "ckpt-00000097.pt").mkdir()
    _sidecar(folder, 97)
    (folder / "ckpt-00000096.pt").write_bytes(b"x" * 10)
    os.mkfifo(folder / "ckpt-00000096.pt.sha256")
    return {
        99: "not a regular file",
        98: "a symbolic link",
        97: "not a regular file",
        96: "sha256: not a regular file",
    }


def _within(call: Callable[[], Any]) -> Any:
    """`call()` run on a thread that must end within the liveness bound (it never blocks)."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(LIVENESS_S)
    assert not worker.is_alive(), "reading the checkpoints blocked"
    return result[0]


def _skipped(caplog: pytest.LogCaptureFixture) -> dict[int, str]:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipping")]
    return {int(line.split()[4].rstrip(":")): line for line in lines}


def test_checkpoint_manager_skips_planted_files_without_reading_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager = CheckpointManager(tmp_path, max_bytes=4096)
    manager.save(1, {"step": 1, "w": torch.ones(3)})
    expected = _plant(tmp_path)
    (tmp_path / "ckpt-00000095.pt").write_bytes(b"x" * 4097)  # a regular file, too large
    _sidecar(tmp_path, 95)
    expected[95] = "4097 bytes, more than the 4096 allowed"
    caplog.set_level(logging.WARNING, "trainer.checkpoint")
    step, state = _within(manager.load_latest)
    assert step == 1 and torch.equal(state["w"], torch.ones(3))
    skipped = _skipped(caplog)
    assert sorted(skipped) == sorted(expected)  # one line each
    for planted, reason in expected.items():
        assert reason in skipped[planted], skipped[planted]


def test_checkpoint_manager_stops_reading_when_asked(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(1, {"w": torch.zeros(1 << 19)})  # 2 MiB: read in two chunks
    with pytest.raises(CheckpointInterruptedError):
        manager.load_latest(stop=lambda: True)
    asked = iter([False, False, True])  # before the file, first chunk, second chunk
    with pytest.raises(CheckpointInterruptedError, match=r"while reading ckpt-00000001\.pt"):
        manager.load_latest(stop=lambda: next(asked))
    assert manager.load_latest() is not None  # nothing was changed


def _run_parts() -> tuple[DrinkRecommender, TrainingOptimizer]:
    config = ModelConfig(n_members=5, n_stores=2, n_drinks=6, n_categories=2, embedding_dim=4)
    model = DrinkRecommender(config)
    return model, TrainingOptimizer(model, lr=0.01)


def _training_state(step: int, model: Any, optimizer: Any) -> dict[str, Any]:
    return {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": capture_rng(),
        "history": [[step, 1.5]],
    }


def _wrong(name: str, state: dict[str, Any]) -> dict[str, Any]:
    """`state` broken one way: valid tensors and containers in the wrong structure."""
    weight = next(iter(state["model"]))
    changes: dict[str, Any] = {
        "no model": {k: v for k, v in state.items() if k != "model"},
        "another shape": {**state, "model": {**state["model"], weight: torch.zeros(1)}},
        "another optimizer": {**state, "optimizer": {**state["optimizer"], "format": "adam/v0"}},
        "a list for a tensor": {**state, "model": {**state["model"], weight: [1.0]}},
        "another generator": {**state, "rng": {**state["rng"], "numpy": ["PCG64", 1, 2, 3, 4]}},
        "a bad history": {**state, "history": [[1]]},
        "another step": {**state, "step": 3},
        "an unusable generator state": {
            **state,
            "rng": {**state["rng"], "torch": torch.zeros(5056, dtype=torch.uint8)},
        },
    }
    return changes[name]


WRONG = [
    "no model",
    "another shape",
    "another optimizer",
    "a list for a tensor",
    "another generator",
    "a bad history",
    "another step",
    "an unusable generator state",
]


@pytest.mark.parametrize("wrong", WRONG)
def test_resume_skips_a_checkpoint_of_the_wrong_structure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, wrong: str
) -> None:
    model, optimizer = _run_parts()
    manager = CheckpointManager(tmp_path)
    manager.save(2, _training_state(2, model, optimizer))
    other, other_optimizer = _run_parts()
    manager.save(4, _wrong(wrong, _training_state(4, other, other_optimizer)))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    caplog.set_level(logging.WARNING, "trainer.checkpoint")
    assert resume(manager, model, optimizer, lambda: False) == Resumed(2, [[2, 1.5]])
    assert list(_skipped(caplog)) == [4], caplog.text
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())


def test_resume_changes_nothing_when_no_checkpoint_fits(tmp_path: Path) -> None:
    model, optimizer = _run_parts()
    other, other_optimizer = _run_parts()
    CheckpointManager(tmp_path).save(
        4, _wrong("another shape", _training_state(4, other, other_optimizer))
    )
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert resume(CheckpointManager(tmp_path), model, optimizer, lambda: False) is None
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())


def test_checkpoint_bound_grows_with_the_model() -> None:
    small, small_optimizer = _run_parts()
    config = ModelConfig(n_members=5000, n_stores=2, n_drinks=6, n_categories=2, embedding_dim=4)
    large = DrinkRecommender(config)
    bound = checkpoint_bound(large, TrainingOptimizer(large, lr=0.01))
    assert checkpoint_bound(small, small_optimizer) < bound
    # Twice the model and optimizer tensors (the member table three times over) and 64 MiB.
    assert bound >= 2 * 3 * 5000 * 4 * 4 + (64 << 20)


# ---- the trainer as a process ----

FLAGS = ["--epochs", "2", "--batch_size", "64", "--log_every_steps", "1", "--num_threads", "1"]
FLAGS += ["--device", "cpu", "--seed", "3"]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("planted-data")
    generate(WorldConfig(members=200, stores=10, weeks=8, seed=1), str(folder / "data"))
    make_time_split(str(folder / "data"), str(folder / "split"))
    return folder / "split" / "manifest.json"


def _trainer(manifest: Path, out: Path, log: Path, **faults: Any) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIP_", "CLOUD_ML_"))}
    env.update(
        PYTHONPATH=str(REPO), CLOUD_ML_HP_METRIC_FILE=str(out / "hp"), **faults_env(**faults)
    )
    env.pop("GCS_FUSE_ROOT", None)
    argv = [sys.executable, "-m", "trainer.task", "--data", str(manifest), "--output_dir", str(out)]
    with log.open("ab") as sink:
        return subprocess.Popen([*argv, *FLAGS], env=env, stdout=sink, stderr=subprocess.STDOUT)


def _sigterm_at_marker(proc: subprocess.Popen[bytes], log: Path, phase: str) -> int:
    marker = pause_marker(proc.pid, phase)
    deadline = time.monotonic() + 120
    while marker not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"never paused in {phase}:\n{log.read_text()[-3000:]}")
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=120)


@pytest.mark.slow
def test_trainer_skips_planted_checkpoints_and_answers_sigterm_while_reading_them(
    manifest: Path, tmp_path: Path
) -> None:
    out, log = tmp_path / "out", tmp_path / "train.log"
    checkpoints = out / "checkpoints"
    expected = _plant(checkpoints)
    # First attempt: nothing planted is read; it trains from step 0 and is preempted.
    first = _trainer(manifest, out, log, hold_at_step=2)
    assert _sigterm_at_marker(first, log, "step") == 143
    text = log.read_text()
    for step, reason in expected.items():
        lines = [
            line for line in text.splitlines() if f"skipping checkpoint at step {step}:" in line
        ]
        assert len(lines) == 1 and reason in lines[0], text[-3000:]
    # The planted files were pruned; a planted folder stays (and is skipped again).
    assert CheckpointManager(checkpoints).steps() == [97, 2]
    # Second attempt: SIGTERM while it reads the checkpoint it would resume from.
    second = _trainer(manifest, out, log, pause_in="resume", pause_s=1.0)
    assert _sigterm_at_marker(second, log, "resume") == 143
    assert "SIGTERM while reading checkpoints: stopping before training" in log.read_text()
    assert CheckpointManager(checkpoints).steps() == [97, 2]  # nothing saved, nothing pruned
    assert CheckpointManager(checkpoints).load(2)["step"] == 2

"""Preemption-safe checkpoints: atomic writes, SHA-256 sidecars, keep the last two, safe loads.

Layout in the checkpoint folder: `ckpt-00000120.pt` (torch.save of tensors and plain
containers only) and `ckpt-00000120.pt.sha256`. The sidecar is written after the data, so a
crash in between leaves a checkpoint without sidecar, which loading skips like a corrupt one.
Loading uses `torch.load(weights_only=True)`: no arbitrary objects are ever unpickled.
"""

from __future__ import annotations

import logging
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.faults import NO_FAULTS, Faults
from trainer.paths import atomic_write_bytes, atomic_write_json, atomic_write_stream, sha256_file

log = logging.getLogger(__name__)
_NAME = re.compile(r"^ckpt-(\d{8})\.pt$")
PROGRESS_FILE = "progress.json"


class CheckpointManager:
    """Saves and restores training state in one folder.

    Args:
        directory: the checkpoint folder (AIP_CHECKPOINT_DIR, already resolved to a path).
        keep: how many newest checkpoints to keep.
        faults: test-only fault injection (`trainer.faults`): a pause between a checkpoint's
            data file and its sidecar; none by default.
    """

    def __init__(self, directory: Path, keep: int = 2, faults: Faults = NO_FAULTS) -> None:
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.directory = directory
        self.keep = keep
        self.faults = faults

    def steps(self) -> list[int]:
        """Steps of the checkpoints present (verified or not), newest first."""
        if not self.directory.is_dir():
            return []
        found = (_NAME.match(p.name) for p in self.directory.iterdir())
        return sorted((int(m.group(1)) for m in found if m), reverse=True)

    def path(self, step: int) -> Path:
        """File of the checkpoint at `step`."""
        return self.directory / f"ckpt-{step:08d}.pt"

    def save(self, step: int, state: dict[str, Any]) -> Path:
        """Write the checkpoint for `step` atomically, then drop all but the newest `keep`.

        Args:
            step: global step the state belongs to.
            state: tensors, numbers, strings and lists/dicts of them.
        """
        path = self.path(step)
        # Streamed to disk and hashed on the way: no second copy in memory, no re-read.
        digest = atomic_write_stream(path, lambda handle: torch.save(state, handle))
        self.faults.pause("checkpoint", step)
        atomic_write_bytes(path.with_name(path.name + ".sha256"), (digest + "\n").encode())
        # Checkpoints newer than this one are leftovers of a lost attempt that never got their
        # sidecar (a resume starts from the newest that verifies); counting them among the
        # `keep` newest would delete the checkpoint just written.
        kept = [s for s in self.steps() if s <= step][: self.keep]
        for old in (s for s in self.steps() if s not in kept):
            self.path(old).unlink(missing_ok=True)
            self.path(old).with_name(self.path(old).name + ".sha256").unlink(missing_ok=True)
        return path

    def load(self, step: int) -> dict[str, Any]:
        """Load and verify one checkpoint.

        Raises:
            ValueError: the sidecar is missing or the hash does not match (partial or corrupt).
        """
        path = self.path(step)
        sidecar = path.with_name(path.name + ".sha256")
        if not sidecar.is_file():
            raise ValueError(f"{path.name}: no SHA-256 sidecar, the write did not finish")
        expected = sidecar.read_text(encoding="utf-8").strip()
        if sha256_file(path) != expected:
            raise ValueError(f"{path.name}: SHA-256 mismatch, the file is corrupt")
        state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
        return state

    def load_latest(self) -> tuple[int, dict[str, Any]] | None:
        """The newest checkpoint that verifies, falling back to older ones; None if none do."""
        for step in self.steps():
            try:
                return step, self.load(step)
            except Exception as error:  # any unreadable checkpoint means: try the older one
                log.warning("skipping checkpoint at step %d: %s", step, error)
        return None


def write_progress(
    directory: Path, step: int, checkpoint_step: int | None, total: int | None
) -> None:
    """Atomically write `progress.json` as the executor's goodput accounting expects."""
    atomic_write_json(
        directory / PROGRESS_FILE,
        {"step": step, "checkpoint_step": checkpoint_step, "total_steps": total},
    )


def capture_rng() -> dict[str, Any]:
    """RNG states of python, numpy's global generator and torch (CPU and CUDA), safe to save."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss = random.getstate()
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": [kind, torch.from_numpy(np.asarray(keys).copy()), pos, has_gauss, cached],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    """Inverse of `capture_rng`."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy(), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])

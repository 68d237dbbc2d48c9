"""Preemption-safe checkpoints: atomic writes, SHA-256 sidecars, keep the last two, safe loads.

Layout in the checkpoint folder: `ckpt-00000120.pt` (torch.save of tensors and plain
containers only) and `ckpt-00000120.pt.sha256`. The sidecar is written after the data, so a
crash in between leaves a checkpoint without sidecar, which loading skips like a corrupt one.
Loading uses `torch.load(weights_only=True)`: no arbitrary objects are ever unpickled.

Anyone who can write the bucket can plant files there, so loading reads regular files only,
opened without blocking or following a link (a FIFO or a link to `/dev/zero` is refused at
once, never read), at most `max_bytes` of them; it hashes and unpickles the one file it
opened, and checks the stop request between reads, so a SIGTERM is answered while
checkpoints are being read. A refused checkpoint is skipped with one log line and the older
one is tried.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import random
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from trainer.faults import NO_FAULTS, Faults
from trainer.paths import atomic_write_bytes, atomic_write_json, atomic_write_stream

log = logging.getLogger(__name__)
_NAME = re.compile(r"^ckpt-(\d{8})\.pt$")
_DIGEST = re.compile(r"[0-9a-f]{64}")
PROGRESS_FILE = "progress.json"
DEFAULT_MAX_BYTES = 1 << 36
"""64 GiB: more than a checkpoint of any model this trainer trains on one machine."""
Check = Callable[[int, dict[str, Any]], None]


class CheckpointInterruptedError(Exception):
    """A stop was requested (SIGTERM) while checkpoints were being read."""


def _never() -> bool:
    return False


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:500] or type(error).__name__


def _open_regular(path: Path, max_bytes: int) -> IO[bytes]:
    """`path` opened for reading if it is a regular file (not a link) of at most
    `max_bytes`; the open never blocks, so a FIFO is refused rather than waited on.

    Raises:
        ValueError: it is missing, a link, not a regular file, or larger than `max_bytes`.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ValueError(f"{path.name}: missing") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            message = f"{path.name}: a symbolic link, not a file the trainer wrote"
            raise ValueError(message) from None
        raise ValueError(f"{path.name}: cannot be opened ({error.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path.name}: not a regular file (a FIFO, device or folder)")
        if info.st_size > max_bytes:
            size = info.st_size
            raise ValueError(f"{path.name}: {size} bytes, more than the {max_bytes} allowed")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class CheckpointManager:
    """Saves and restores training state in one folder.

    Args:
        directory: the checkpoint folder (AIP_CHECKPOINT_DIR, already resolved to a path).
        keep: how many newest checkpoints to keep.
        faults: test-only fault injection (`trainer.faults`): a pause between a checkpoint's
            data file and its sidecar, or before one is read; none by default.
        max_bytes: larger checkpoint files are refused unread (`trainer.resume` sets the
            bound from the model).
    """

    def __init__(
        self,
        directory: Path,
        keep: int = 2,
        faults: Faults = NO_FAULTS,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.directory = directory
        self.keep = keep
        self.faults = faults
        self.max_bytes = max_bytes

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
            for stale in (
                self.path(old),
                self.path(old).with_name(self.path(old).name + ".sha256"),
            ):
                # A folder planted under a checkpoint's name stays (loading skips it); it must
                # not fail the save that has just succeeded.
                with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                    stale.unlink()
        return path

    def load(self, step: int, stop: Callable[[], bool] = _never) -> dict[str, Any]:
        """Load and verify one checkpoint.

        Raises:
            ValueError: the sidecar is missing or not a digest, the file is not a regular file
                of at most `max_bytes`, the hash does not match (partial or corrupt), or it
                does not hold a dict.
            CheckpointInterruptedError: `stop()` became true while it was read.
        """
        path = self.path(step)
        with _open_regular(path.with_name(path.name + ".sha256"), 128) as sidecar:
            expected = sidecar.read(129).decode("ascii", "replace").strip()
        if not _DIGEST.fullmatch(expected):
            raise ValueError(f"{path.name}: the SHA-256 sidecar holds no digest")
        with _open_regular(path, self.max_bytes) as handle:
            digest, size = hashlib.sha256(), 0
            while chunk := handle.read(1 << 20):
                if stop():
                    raise CheckpointInterruptedError(f"stopped while reading {path.name}")
                size += len(chunk)
                if size > self.max_bytes:  # it grew while being read
                    raise ValueError(f"{path.name}: more than the {self.max_bytes} bytes allowed")
                digest.update(chunk)
            if digest.hexdigest() != expected:
                raise ValueError(f"{path.name}: SHA-256 mismatch, the file is corrupt")
            handle.seek(0)  # the file just hashed, not whatever the name points to now
            state = torch.load(handle, map_location="cpu", weights_only=True)
        if not isinstance(state, dict):
            raise ValueError(f"{path.name}: holds a {type(state).__name__}, not training state")
        return state

    def load_latest(
        self, check: Check | None = None, stop: Callable[[], bool] = _never
    ) -> tuple[int, dict[str, Any]] | None:
        """The newest checkpoint that verifies (and passes `check(step, state)`), falling back
        to older ones; None if none do. Each refused one is logged in one line.

        Raises:
            CheckpointInterruptedError: `stop()` became true before one was found.
        """
        for step in self.steps():
            if stop():
                raise CheckpointInterruptedError(f"stopped before reading checkpoint {step}")
            self.faults.pause("resume", step)
            try:
                state = self.load(step, stop)
                if check is not None:
                    check(step, state)
                return step, state
            except CheckpointInterruptedError:
                raise
            except Exception as error:  # any unreadable checkpoint means: try the older one
                log.warning("skipping checkpoint at step %d: %s", step, _one_line(error))
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

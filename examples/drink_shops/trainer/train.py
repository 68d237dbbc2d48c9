"""The training loop: deterministic data order, checkpoints, exact resume, SIGTERM handling.

Batch k of epoch e is rows `perm_e[k*G:(k+1)*G]` with `perm_e` drawn from a generator seeded by
(seed, e) and G the global batch; replica r takes slice r of it. So the data position is a
pure function of the step, and a resumed run sees exactly the batches the lost run would have.

The rows stay in host memory in their compact encoding (`trainer.encoded`, memory-mapped);
each step gathers its batch and moves it to the device as int64 tensors. Checkpoints come
every `checkpoint_every_seconds` of training (and/or every `checkpoint_every_steps`), on
SIGTERM and at the end; their time and size are reported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from trainer.checkpoint import (
    CheckpointInterruptedError,
    CheckpointManager,
    capture_rng,
    write_progress,
)
from trainer.distributed import ClusterInfo
from trainer.faults import NO_FAULTS, Faults
from trainer.features import Rows
from trainer.model import CatalogueTensors, sampled_softmax_loss
from trainer.optim import average_sparse_gradients
from trainer.resume import resume
from trainer.scalars import ScalarWriter

log = logging.getLogger(__name__)
BATCH_KEYS = ("member", "store", "hour", "weekday", "season", "day", "drink")


@dataclass(frozen=True)
class LoopConfig:
    """How to walk the data.

    Attributes:
        batch_size: rows per replica per step; the global batch is this × world size.
        epochs: passes over the training rows.
        seed: seeds the per-epoch permutations.
        checkpoint_every_steps: checkpoint period in steps (0 = none by steps).
        log_every_steps: period of loss logging, progress.json and TensorBoard scalars.
        max_steps: stop after this many steps in total (None = all epochs).
        checkpoint_every_seconds: checkpoint period in seconds of this process's training
            (0 = none by time). With both periods 0, checkpoints come only on SIGTERM and
            at the end.
        amp: run the forward pass and the loss under bfloat16 autocast (CUDA or CPU).
    """

    batch_size: int
    epochs: int
    seed: int = 0
    checkpoint_every_steps: int = 0
    log_every_steps: int = 50
    max_steps: int | None = None
    checkpoint_every_seconds: float = 0.0
    amp: bool = False


@dataclass
class LoopResult:
    """What the loop did."""

    step: int
    total_steps: int
    preempted: bool
    resumed_from: int | None
    history: list[list[float]] = field(default_factory=list)  # [step, global mean loss]
    samples: int = 0  # rows processed by this replica in this process
    seconds: float = 0.0
    checkpoints: list[dict[str, float]] = field(default_factory=list)  # step, seconds, bytes
    warmup_seconds: float = 0.0  # from the call to the first step: restore, the epoch's order

    def checkpoint_summary(self) -> dict[str, float]:
        """Count, mean and largest time and size of the checkpoints this process wrote."""
        if not self.checkpoints:
            return {"count": 0}
        seconds = [c["seconds"] for c in self.checkpoints]
        sizes = [c["bytes"] for c in self.checkpoints]
        return {
            "count": len(self.checkpoints),
            "mean_seconds": sum(seconds) / len(seconds),
            "max_seconds": max(seconds),
            "bytes": max(sizes),
        }


class RowSource(Protocol):
    """Training rows the loop can gather batches from (`trainer.encoded.EncodedPart`)."""

    def __len__(self) -> int: ...

    def take(self, index: np.ndarray, keys: tuple[str, ...] = ...) -> dict[str, np.ndarray]:
        """int64 values of `keys` at the row positions `index`."""
        ...


class StopFlag:
    """Set by SIGTERM; the loop checkpoints and returns at the next step boundary."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        """Request a stop."""
        self._event.set()

    def is_set(self) -> bool:
        """True once a stop was requested."""
        return self._event.is_set()

    def install(self) -> None:
        """Route SIGTERM to `set` (call from the main thread)."""

        def handler(signum: int, frame: FrameType | None) -> None:
            self.set()

        signal.signal(signal.SIGTERM, handler)


def rows_to_tensors(rows: Rows, device: torch.device) -> dict[str, torch.Tensor]:
    """The encoded rows as int64 tensors on `device`, keyed by `BATCH_KEYS`."""
    return {key: torch.from_numpy(getattr(rows, key)).to(device) for key in BATCH_KEYS}


def steps_per_epoch(n_rows: int, global_batch: int) -> int:
    """Full global batches per epoch (the remainder is dropped so replicas stay in step)."""
    return n_rows // global_batch


def epoch_permutation(seed: int, epoch: int, n_rows: int) -> np.ndarray:
    """The row order of one epoch: a pure function of (seed, epoch).

    The same order as `default_rng([seed, 7, epoch]).permutation(n_rows)` (shuffling draws
    the same numbers whatever the integer type), held as int32 where it fits: 4 bytes a row.
    """
    dtype = np.int32 if n_rows <= np.iinfo(np.int32).max else np.int64
    order = np.arange(n_rows, dtype=dtype)
    np.random.default_rng([seed, 7, epoch]).shuffle(order)
    return order


def _on_device(arrays: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    return {
        key: torch.from_numpy(value).to(device, non_blocking=True) for key, value in arrays.items()
    }


def train_loop(
    model: nn.Module,
    raw_model: nn.Module,
    optimizer: Any,
    data: RowSource,
    cat: CatalogueTensors,
    cfg: LoopConfig,
    info: ClusterInfo,
    stop: StopFlag,
    checkpoints: CheckpointManager | None = None,
    writer: ScalarWriter | None = None,
    faults: Faults = NO_FAULTS,
) -> LoopResult:
    """Train until the epochs (or max_steps) are done or a stop is requested.

    Args:
        model: what the forward pass calls (the DDP wrapper when distributed).
        raw_model: the bare module whose state is saved.
        optimizer: optimizer over `raw_model`'s parameters (`trainer.optim.TrainingOptimizer`,
            or any optimizer with step, zero_grad, state_dict and load_state_dict).
        data: training rows, on the host; batches are moved to `cat`'s device.
        cat: catalogue tensors for the loss.
        cfg: loop settings.
        info: cluster layout; only rank 0 writes checkpoints, progress and scalars.
        stop: stop flag (set by SIGTERM).
        checkpoints: where to save and resume from; None disables both.
        writer: TensorBoard scalars (rank 0).
        faults: test-only fault injection (`trainer.faults`); none by default.

    Returns:
        The loop result; `preempted` is True when it stopped early on request.
    """
    import torch.distributed as dist

    distributed = info.world_size > 1
    global_batch = cfg.batch_size * info.world_size
    n_rows = len(data)
    per_epoch = steps_per_epoch(n_rows, global_batch)
    if per_epoch == 0:
        raise ValueError(
            f"global batch {global_batch} (batch_size {cfg.batch_size} × {info.world_size} "
            f"replicas) exceeds the {n_rows} training rows; lower --batch_size"
        )
    total = per_epoch * cfg.epochs
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)

    entered = time.perf_counter()
    step, history, resumed_from = 0, [], None
    try:
        restored = resume(checkpoints, raw_model, optimizer, stop.is_set) if checkpoints else None
    except CheckpointInterruptedError:
        # Nothing trained, so nothing is saved: a save at step 0 would prune the checkpoints
        # the next attempt resumes from.
        log.warning("SIGTERM while reading checkpoints: stopping before training")
        return LoopResult(step=0, total_steps=total, preempted=True, resumed_from=None)
    if restored is not None:
        step, history, resumed_from = restored.step, restored.history, restored.step
        log.info("resumed from checkpoint at step %d", step)
    checkpoint_step = resumed_from
    result = LoopResult(step=step, total_steps=total, preempted=False, resumed_from=resumed_from)
    device = cat.log_q.device
    began = last_save = time.perf_counter()
    autocast = (
        torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        if cfg.amp
        else contextlib.nullcontext()
    )

    def save() -> None:
        nonlocal checkpoint_step, last_save
        last_save = time.perf_counter()
        if checkpoints is not None and info.is_primary and checkpoint_step != step:
            state: dict[str, Any] = {
                "step": step,
                "model": raw_model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "rng": capture_rng(),
                "history": history,
            }
            path = checkpoints.save(step, state)
            seconds = time.perf_counter() - last_save
            result.checkpoints.append(
                {"step": step, "seconds": seconds, "bytes": path.stat().st_size}
            )
            log.info(
                "checkpoint at step %d: %.2f s, %.1f MB", step, seconds, path.stat().st_size / 1e6
            )
            checkpoint_step = step
            write_progress(checkpoints.directory, step, checkpoint_step, total)

    model.train()
    perm, perm_epoch = np.zeros(0, dtype=np.int64), -1
    while step < total:
        epoch, index = divmod(step, per_epoch)
        if epoch != perm_epoch:
            perm = epoch_permutation(cfg.seed, epoch, n_rows)
            perm_epoch = epoch
        rows = perm[index * global_batch : (index + 1) * global_batch]
        local = rows[info.rank * cfg.batch_size : (info.rank + 1) * cfg.batch_size]
        batch = _on_device(data.take(local), device)
        global_drinks = (
            _on_device(data.take(rows, ("drink",)), device)["drink"]
            if distributed
            else batch["drink"]
        )
        if not result.warmup_seconds:
            result.warmup_seconds = time.perf_counter() - entered
        if hasattr(optimizer, "prepare"):  # a lazy update brings the batch's rows up to date
            optimizer.prepare(batch["member"])
        with autocast:
            loss = sampled_softmax_loss(
                model, cat, batch, global_drinks, info.rank * cfg.batch_size
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if distributed:
            average_sparse_gradients(raw_model, info.world_size)
        optimizer.step()
        step += 1
        result.samples += cfg.batch_size

        if step % cfg.log_every_steps == 0 or step == total:
            value = loss.detach()
            if distributed:
                dist.all_reduce(value)
                value /= info.world_size
            history.append([step, float(value)])
            if info.is_primary:
                # The command line's progress display reads this line (step, epoch, loss).
                log.info(
                    "progress step=%d/%d epoch=%d loss=%.4f", step, total, epoch + 1, float(value)
                )
                if writer is not None:
                    writer.add_scalar("train/loss", float(value), step)
                if checkpoints is not None:
                    write_progress(checkpoints.directory, step, checkpoint_step, total)
        if step == faults.sigterm_at_step:
            os.kill(os.getpid(), signal.SIGTERM)
        if faults.step_sleep_s:
            time.sleep(faults.step_sleep_s)
        faults.hold(step, stop.is_set)
        stopping = stop.is_set()
        if distributed:
            # Every replica must stop after the same step, or the next all-reduce hangs.
            flag = torch.tensor([1.0 if stopping else 0.0], device=device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            stopping = bool(flag.item())
        if (
            stopping
            or step == total
            or (cfg.checkpoint_every_steps and step % cfg.checkpoint_every_steps == 0)
            or (
                cfg.checkpoint_every_seconds
                and time.perf_counter() - last_save >= cfg.checkpoint_every_seconds
            )
        ):
            save()
        if stopping and step < total:
            result.preempted = True
            break
    result.step, result.history = step, history
    result.seconds = time.perf_counter() - began
    if writer is not None:
        writer.flush()
    return result

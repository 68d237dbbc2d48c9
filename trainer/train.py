"""The training loop: deterministic data order, checkpoints, exact resume, SIGTERM handling.

Batch k of epoch e is rows `perm_e[k*G:(k+1)*G]` with `perm_e` drawn from a generator seeded by
(seed, e) and G the global batch; replica r takes slice r of it. So the data position is a
pure function of the step, and a resumed run sees exactly the batches the lost run would have.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np
import torch
from torch import nn

from trainer.checkpoint import CheckpointManager, capture_rng, restore_rng, write_progress
from trainer.distributed import ClusterInfo
from trainer.faults import NO_FAULTS, Faults
from trainer.features import Rows
from trainer.model import CatalogueTensors, sampled_softmax_loss
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
        checkpoint_every_steps: checkpoint period (0 = only on SIGTERM and at the end).
        log_every_steps: period of loss logging, progress.json and TensorBoard scalars.
        max_steps: stop after this many steps in total (None = all epochs).
    """

    batch_size: int
    epochs: int
    seed: int = 0
    checkpoint_every_steps: int = 500
    log_every_steps: int = 50
    max_steps: int | None = None


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
    """The row order of one epoch: a pure function of (seed, epoch)."""
    return np.random.default_rng([seed, 7, epoch]).permutation(n_rows)


def train_loop(
    model: nn.Module,
    raw_model: nn.Module,
    optimizer: torch.optim.Optimizer,
    data: dict[str, torch.Tensor],
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
        optimizer: optimizer over `raw_model`'s parameters.
        data: training rows from `rows_to_tensors`.
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
    n_rows = int(data["drink"].shape[0])
    per_epoch = steps_per_epoch(n_rows, global_batch)
    if per_epoch == 0:
        raise ValueError(
            f"global batch {global_batch} (batch_size {cfg.batch_size} × {info.world_size} "
            f"replicas) exceeds the {n_rows} training rows; lower --batch_size"
        )
    total = per_epoch * cfg.epochs
    if cfg.max_steps is not None:
        total = min(total, cfg.max_steps)

    step, history, resumed_from = 0, [], None
    restored = checkpoints.load_latest() if checkpoints else None
    if restored is not None:
        resumed_from, state = restored
        raw_model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"])
        step, history = int(state["step"]), [list(h) for h in state["history"]]
        log.info("resumed from checkpoint at step %d", step)
    checkpoint_step = resumed_from
    result = LoopResult(step=step, total_steps=total, preempted=False, resumed_from=resumed_from)
    device = data["drink"].device
    began = time.perf_counter()

    def save() -> None:
        nonlocal checkpoint_step
        if checkpoints is not None and info.is_primary and checkpoint_step != step:
            state: dict[str, Any] = {
                "step": step,
                "model": raw_model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "rng": capture_rng(),
                "history": history,
            }
            checkpoints.save(step, state)
            checkpoint_step = step
            write_progress(checkpoints.directory, step, checkpoint_step, total)

    model.train()
    perm, perm_epoch = torch.empty(0, dtype=torch.int64), -1
    while step < total:
        epoch, index = divmod(step, per_epoch)
        if epoch != perm_epoch:
            perm = torch.from_numpy(epoch_permutation(cfg.seed, epoch, n_rows)).to(device)
            perm_epoch = epoch
        rows = perm[index * global_batch : (index + 1) * global_batch]
        local = rows[info.rank * cfg.batch_size : (info.rank + 1) * cfg.batch_size]
        batch = {key: value[local] for key, value in data.items()}
        loss = sampled_softmax_loss(
            model, cat, batch, data["drink"][rows], info.rank * cfg.batch_size
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
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

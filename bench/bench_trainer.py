"""Training throughput of trainer.task's loop against a bare PyTorch loop, same model and data.

`python -m bench.bench_trainer [--full] [--device cpu|cuda] [--members N --weeks W ...]`.
Both loops start from the same initial weights and walk the same batches; the trainer's loop
adds what the job contract needs (stop checks, loss logging, progress.json, TensorBoard,
checkpoints every --checkpoint_every steps). Target: ratio >= 0.9.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.checkpoint import CheckpointManager
from trainer.data import generate
from trainer.distributed import ClusterInfo
from trainer.features import encode_rows, read_catalogue, read_columns
from trainer.model import (
    CatalogueTensors,
    DrinkRecommender,
    ModelConfig,
    purchase_log_share,
    sampled_softmax_loss,
)
from trainer.scalars import ScalarWriter
from trainer.split import plan_time_split
from trainer.train import LoopConfig, StopFlag, epoch_permutation, rows_to_tensors, train_loop
from trainer.world import WorldConfig


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _bare_loop(
    model: torch.nn.Module,
    cat: CatalogueTensors,
    data: dict[str, torch.Tensor],
    batch_size: int,
    steps: int,
    lr: float,
    seed: int,
) -> float:
    """The reference: permutation, gather, loss, backward, step. Returns seconds."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    n = int(data["drink"].shape[0])
    device = data["drink"].device
    perm = torch.from_numpy(epoch_permutation(seed, 0, n)).to(device)
    per_epoch = n // batch_size
    _sync(device)
    began = time.perf_counter()
    for step in range(steps):
        epoch, index = divmod(step, per_epoch)
        if index == 0 and epoch:
            perm = torch.from_numpy(epoch_permutation(seed, epoch, n)).to(device)
        rows = perm[index * batch_size : (index + 1) * batch_size]
        batch = {key: value[rows] for key, value in data.items()}
        loss = sampled_softmax_loss(model, cat, batch, batch["drink"], 0)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    _sync(device)
    return time.perf_counter() - began


def _trainer_loop(
    model: DrinkRecommender,
    cat: CatalogueTensors,
    data: dict[str, torch.Tensor],
    batch_size: int,
    steps: int,
    lr: float,
    seed: int,
    checkpoint_every: int,
    workdir: Path,
) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    cfg = LoopConfig(
        batch_size=batch_size,
        epochs=10_000,
        seed=seed,
        checkpoint_every_steps=checkpoint_every,
        log_every_steps=50,
        max_steps=steps,
    )
    writer = ScalarWriter(workdir / "tb")
    device = data["drink"].device
    _sync(device)
    began = time.perf_counter()
    train_loop(
        model,
        model,
        optimizer,
        data,
        cat,
        cfg,
        ClusterInfo(),
        StopFlag(),
        checkpoints=CheckpointManager(workdir / "ckpt"),
        writer=writer,
    )
    _sync(device)
    seconds = time.perf_counter() - began
    writer.close()
    return seconds


def run(
    quick: bool,
    device: str = "auto",
    members: int | None = None,
    stores: int | None = None,
    weeks: int | None = None,
    steps: int | None = None,
    batch_size: int = 1024,
    embedding_dim: int = 32,
    repeats: int = 3,
) -> dict[str, Any]:
    """Measure both loops; returns samples/s of each and their ratio.

    Args:
        quick: small data and few steps (seconds); otherwise a larger run (minutes on CPU).
        device: "auto", "cpu" or "cuda".
        members, stores, weeks, steps: override the scale.
        batch_size: rows per step.
        embedding_dim: model width.
        repeats: interleaved repetitions of each loop (best is kept, to damp machine noise).
    """
    members = members or (2000 if quick else 20000)
    stores = stores or (20 if quick else 200)
    weeks = weeks or (8 if quick else 26)
    steps = steps or (150 if quick else 300)
    use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    dev = torch.device("cuda" if use_cuda else "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(WorldConfig(members=members, stores=stores, weeks=weeks, seed=0), root / "data")
        manifest = plan_time_split(str(root / "data"))
        catalogue = read_catalogue(manifest)
        columns = read_columns(manifest, "train")
        vocab = np.unique(columns["member_id"])
        rows = encode_rows(columns, vocab, catalogue)
        cat = CatalogueTensors.build(
            catalogue, purchase_log_share(rows.drink, catalogue.drink_ids.size), dev
        )
        data = rows_to_tensors(rows, dev)
        config = ModelConfig(
            int(vocab.size),
            int(catalogue.store_ids.size),
            int(catalogue.drink_ids.size),
            catalogue.n_categories,
            embedding_dim,
            2 * embedding_dim,
        )
        torch.manual_seed(0)
        initial = DrinkRecommender(config).to(dev)
        checkpoint_every = max(steps // 2, 1)  # the loop pays for real checkpoints in the timing
        _bare_loop(
            copy.deepcopy(initial), cat, data, batch_size, min(10, steps), 0.01, 0
        )  # warm-up
        bare, trainer = [], []
        for attempt in range(repeats):
            bare.append(_bare_loop(copy.deepcopy(initial), cat, data, batch_size, steps, 0.01, 0))
            trainer.append(
                _trainer_loop(
                    copy.deepcopy(initial),
                    cat,
                    data,
                    batch_size,
                    steps,
                    0.01,
                    0,
                    checkpoint_every,
                    root / f"run{attempt}",
                )
            )
    samples = steps * batch_size
    bare_rate, trainer_rate = samples / min(bare), samples / min(trainer)
    return {
        "device": str(dev),
        "train_rows": len(rows),
        "members": members,
        "steps": steps,
        "batch_size": batch_size,
        "embedding_dim": embedding_dim,
        "checkpoint_every_steps": checkpoint_every,
        "bare_samples_per_s": bare_rate,
        "trainer_samples_per_s": trainer_rate,
        "ratio": trainer_rate / bare_rate,
        "target_ratio": 0.9,
    }


def main() -> None:
    """CLI: print the figures as JSON and a one-line summary."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_trainer", description=__doc__)
    parser.add_argument("--full", action="store_true", help="larger run (default: quick)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--members", type=int)
    parser.add_argument("--stores", type=int)
    parser.add_argument("--weeks", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--embedding_dim", type=int, default=32)
    args = parser.parse_args()
    figures = run(
        not args.full,
        args.device,
        args.members,
        args.stores,
        args.weeks,
        args.steps,
        args.batch_size,
        args.embedding_dim,
    )
    print(json.dumps(figures, indent=2))
    print(
        f"trainer loop {figures['trainer_samples_per_s']:,.0f} samples/s vs bare loop "
        f"{figures['bare_samples_per_s']:,.0f} samples/s on {figures['device']}: "
        f"ratio {figures['ratio']:.3f} "
        f"(target >= {figures['target_ratio']})"
    )


if __name__ == "__main__":
    main()

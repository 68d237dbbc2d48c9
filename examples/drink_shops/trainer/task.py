"""Training entry point: `python -m trainer.task --data DATASET --learning_rate ... --epochs ...`.

Honours the Vertex training contract: outputs go to AIP_MODEL_DIR, AIP_CHECKPOINT_DIR and
AIP_TENSORBOARD_LOG_DIR (gs:// and /gcs/ map through GCS_FUSE_ROOT; unset means folders under
--output_dir); the cluster comes from CLUSTER_SPEC / MASTER_ADDR / MASTER_PORT / WORLD_SIZE /
RANK; the tuning metric goes to cloudml-hypertune. SIGTERM checkpoints and exits with 143.

The model learns from the manifest's `train` weeks; the metrics it reports (and the tuning
metric) are measured on its `selection` weeks. It never reads the `gate` weeks, on which the
evaluation job judges it (a training dataset from the pipeline does not even list them).

The rows are read through the pre-encoded cache beside the dataset (`trainer.encoded`): the
first run encodes the Parquet files once, every later run and restart maps the result.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from trainer import warm_start

if TYPE_CHECKING:  # the real imports stay inside run(): `--help` must not import numpy/torch
    from trainer.encoded import EncodedDataset
    from trainer.features import Catalogue

EXIT_PREEMPTED = 143  # 128 + SIGTERM: stopped early with a durable checkpoint; rerun resumes
METRIC_CHOICES = ("ndcg_at_10", "recall_at_10", "ndcg_at_10_margin", "recall_at_10_margin")
log = logging.getLogger("trainer.task")
_IMPORTED = time.monotonic()


def integer(text: str) -> int:
    """An integer flag value; ``16.0`` counts as 16.

    A tuning service may hand a discrete value such as an embedding size to the program as a
    float (Vertex's ``discreteValueSpec`` holds doubles, and the local tuner renders them
    that way), so integral floats are accepted and anything else is refused.
    """
    try:
        return int(text)
    except ValueError:
        number = float(text)
        if not number.is_integer():
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        return int(number)


def build_parser() -> argparse.ArgumentParser:
    """All flags; every tunable hyperparameter is one."""
    p = argparse.ArgumentParser(prog="python -m trainer.task", description=__doc__)
    p.add_argument(
        "--data",
        required=True,
        help="manifest.json, a folder holding one, or a generated dataset folder",
    )
    p.add_argument(
        "--output_dir",
        default="trainer-output",
        help="base for outputs whose AIP_* variable is unset",
    )
    p.add_argument(
        "--learning_rate", type=float, default=0.01, help="Adam LR for one replica's batch"
    )
    p.add_argument("--embedding_dim", type=integer, default=32)
    p.add_argument("--hidden_dim", type=integer, default=64, help="width of the context MLP")
    p.add_argument(
        "--history_hidden",
        type=integer,
        default=16,
        help="width of the history head over the member's purchase counts (0: two towers only)",
    )
    p.add_argument(
        "--history_half_life_weeks",
        type=float,
        default=4.0,
        help="the history head also reads counts decayed with this half-life (0: lifetime only)",
    )
    p.add_argument("--batch_size", type=integer, default=512, help="rows per replica per step")
    p.add_argument("--epochs", type=integer, default=5)
    p.add_argument("--weight_decay", type=float, default=0.0, help="AdamW decoupled weight decay")
    p.add_argument(
        "--baseline_weeks", type=integer, default=4, help="recent weeks counted for popularity"
    )
    p.add_argument("--seed", type=integer, default=0)
    p.add_argument("--max_steps", type=integer, default=None, help="cap on total steps")
    p.add_argument(
        "--checkpoint_every_seconds",
        type=float,
        default=300.0,
        help="checkpoint period in seconds of training (0: none by time)",
    )
    p.add_argument(
        "--checkpoint_every_steps",
        type=integer,
        default=0,
        help="checkpoint period in steps (0: none by steps); SIGTERM and the end always save",
    )
    p.add_argument("--log_every_steps", type=integer, default=50)
    p.add_argument("--hypertune_metric", default="ndcg_at_10", choices=METRIC_CHOICES)
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument(
        "--num_threads", type=integer, default=0, help="torch CPU threads (0: torch default)"
    )
    p.add_argument(
        "--amp", action="store_true", help="bfloat16 autocast for the forward pass and loss"
    )
    p.add_argument(
        "--cache_dir",
        default="",
        help="folder for the pre-encoded dataset (default: _encoded beside the data)",
    )
    warm_start.add_flags(p)
    return p


def _validate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    positive = (
        "learning_rate",
        "embedding_dim",
        "hidden_dim",
        "batch_size",
        "epochs",
        "baseline_weeks",
        "log_every_steps",
    )
    for name in positive:
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be > 0, got {getattr(args, name)}")
    for name in (
        "weight_decay",
        "history_hidden",
        "history_half_life_weeks",
        "checkpoint_every_steps",
        "checkpoint_every_seconds",
        "num_threads",
    ):
        if getattr(args, name) < 0:
            parser.error(f"--{name} must be >= 0, got {getattr(args, name)}")
    if args.max_steps is not None and args.max_steps <= 0:
        parser.error(f"--max_steps must be > 0, got {args.max_steps}")
    warm_start.validate_flags(args, parser)


def output_dirs(output_dir: str, env: dict[str, str] | None = None) -> dict[str, Path]:
    """Resolved model, checkpoint and TensorBoard folders from AIP_* or `output_dir`."""
    from trainer.paths import resolve

    env = dict(os.environ) if env is None else env
    defaults = {
        "AIP_MODEL_DIR": "model",
        "AIP_CHECKPOINT_DIR": "checkpoints",
        "AIP_TENSORBOARD_LOG_DIR": "tensorboard",
    }
    return {
        key: resolve(env.get(key) or os.path.join(output_dir, sub)) for key, sub in defaults.items()
    }


def run(args: argparse.Namespace) -> int:
    """Train, evaluate, export and report; returns the process exit code."""
    import numpy as np
    import torch

    from trainer import part_counts
    from trainer.checkpoint import CheckpointManager
    from trainer.distributed import cluster_from_env, init_process_group, scaled_learning_rate
    from trainer.export import export_model
    from trainer.faults import faults_from_env
    from trainer.features import read_catalogue
    from trainer.history import MemberHistory
    from trainer.metrics import evaluate
    from trainer.model import CatalogueTensors, DrinkRecommender, ModelConfig, purchase_log_share
    from trainer.optim import TrainingOptimizer, wrap_ddp
    from trainer.purchase_log import PurchaseLog
    from trainer.reference import RECENT_HALF_LIFE_DAYS
    from trainer.resume import checkpoint_bound
    from trainer.scalars import ScalarWriter
    from trainer.split import load_manifest
    from trainer.train import LoopConfig, StopFlag, rows_to_tensors, train_loop

    faults = faults_from_env()  # test-only hooks; off unless TRAINER_FAULTS is set
    if faults.active:
        log.warning("fault injection on (tests only): %s", faults)
    stop = StopFlag()
    stop.install()
    info = cluster_from_env()
    if not info.trains:
        log.info(
            "this replica's pool (parameter/reduction server or evaluator) has no role; exiting"
        )
        return 0
    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if use_cuda else "cpu")
    init_process_group(info, use_cuda)
    dirs = output_dirs(args.output_dir)

    manifest = load_manifest(args.data)
    catalogue = read_catalogue(manifest)
    data = _encoded_data(manifest, catalogue, args.cache_dir, info.rank, info.world_size)
    member_vocab, n_stores, n_drinks = (
        data.member_vocab,
        catalogue.store_ids.size,
        catalogue.drink_ids.size,
    )
    popularity = part_counts.store_popularity(data.train, n_stores, n_drinks, args.baseline_weeks)
    log_q = purchase_log_share(data.train.columns["drink"], n_drinks)
    # The members' training purchases: the history head's input and the "usual" reference;
    # decayed as of the day after training too when the head reads them (habits drift), with
    # the purchases in time for the training rows' as-of features.
    counts = part_counts.member_counts(data.train, int(member_vocab.size), n_drinks)
    half_life = round(7 * args.history_half_life_weeks) if args.history_hidden else 0
    if half_life:
        as_of_day = part_counts.last_day(data.train) + 1
        history = MemberHistory.from_counts(
            counts,
            part_counts.member_decayed(
                data.train, int(member_vocab.size), n_drinks, as_of_day, half_life
            ),
            as_of_day,
            float(half_life),
            PurchaseLog.build(data.train, int(member_vocab.size)),
        )
    else:
        history = MemberHistory.from_counts(counts)
    config = ModelConfig(
        n_members=int(member_vocab.size),
        n_stores=int(catalogue.store_ids.size),
        n_drinks=int(catalogue.drink_ids.size),
        n_categories=catalogue.n_categories,
        embedding_dim=args.embedding_dim,
        hidden_dim=args.hidden_dim,
        history_hidden=args.history_hidden,
        history_half_life_days=half_life,
    )
    cat = CatalogueTensors.build(
        catalogue, log_q, device, history if config.history_hidden else None
    )
    raw_model = DrinkRecommender(config)
    # A warm start takes the champion's weights and steps over the newest weeks and a replay.
    rows: Any = data.train
    warm: dict[str, Any] = {"used": False}
    if args.warm_start_from:
        warm = warm_start.start_from_champion(
            args.warm_start_from, raw_model, member_vocab, catalogue
        )
    if warm["used"]:
        rows, row_counts = warm_start.warm_rows(
            data.train, args.warm_start_recent_weeks, args.warm_start_replay_fraction, args.seed
        )
        warm.update(row_counts)
    raw_model = raw_model.to(device)
    rate = args.warm_start_learning_rate if warm["used"] else args.learning_rate
    lr = scaled_learning_rate(rate, info.world_size)
    optimizer = TrainingOptimizer(raw_model, lr=lr, weight_decay=args.weight_decay)
    model = wrap_ddp(raw_model, device) if info.world_size > 1 else raw_model
    loop_cfg = LoopConfig(
        batch_size=args.batch_size,
        epochs=args.warm_start_epochs if warm["used"] else args.epochs,
        seed=args.seed,
        checkpoint_every_steps=args.checkpoint_every_steps,
        checkpoint_every_seconds=args.checkpoint_every_seconds,
        log_every_steps=args.log_every_steps,
        max_steps=args.max_steps,
        amp=args.amp,
    )
    ready = seconds_since_start()
    log.info(
        "data and model ready %.1f s after the process started (%.1f s of CPU)",
        ready,
        time.process_time(),
    )
    writer = ScalarWriter(dirs["AIP_TENSORBOARD_LOG_DIR"]) if info.is_primary else None
    result = train_loop(
        model,
        raw_model,
        optimizer,
        rows,
        cat,
        loop_cfg,
        info,
        stop,
        checkpoints=CheckpointManager(
            dirs["AIP_CHECKPOINT_DIR"],
            faults=faults,
            max_bytes=checkpoint_bound(raw_model, optimizer),
        ),
        writer=writer,
        faults=faults,
    )
    startup = ready + result.warmup_seconds  # the checkpoint restore and the epoch's order
    log.info("training started %.1f s after the process started", startup)
    if result.preempted or stop.is_set():
        log.warning(
            "stopped at step %d of %d on SIGTERM; %s, exiting %d",
            result.step,
            result.total_steps,
            "checkpoint saved" if result.checkpoints else "no new checkpoint",
            EXIT_PREEMPTED,
        )
        _leave_group(info.world_size)
        return EXIT_PREEMPTED

    if info.is_primary:
        optimizer.finish()  # the member rows as AdamW would have left them
        pop_tensor = torch.as_tensor(popularity, device=device)
        usual = torch.as_tensor(history.counts, device=device)
        # "recent usual", decayed as the evaluation job decays it (the history's own decayed
        # table when the half-lives agree).
        recent_table = (
            history.decayed
            if history.decayed is not None and history.half_life_days == RECENT_HALF_LIFE_DAYS
            else part_counts.member_decayed(
                data.train,
                int(member_vocab.size),
                n_drinks,
                part_counts.last_day(data.train) + 1,
                RECENT_HALF_LIFE_DAYS,
            )
        )
        recent_usual = torch.as_tensor(recent_table, device=device)
        selection = rows_to_tensors(data.selection.rows(), device)
        faults.pause("evaluate", result.step)
        metrics: dict[str, Any] = evaluate(
            raw_model, cat, selection, pop_tensor, usual, recent_usual
        )
        metrics["periods"] = {
            "train": manifest["train"]["periods"],
            "selection": manifest["selection"]["periods"],
        }
        metrics["training"] = {
            "steps": result.step,
            "total_steps": result.total_steps,
            "resumed_from_step": result.resumed_from,
            "world_size": info.world_size,
            "global_batch": args.batch_size * info.world_size,
            "learning_rate": lr,
            "train_rows": len(data.train),
            "trained_rows": len(rows),
            "warm_start": warm,
            "samples_per_second": result.samples * info.world_size / max(result.seconds, 1e-9),
            "startup_seconds": startup,
            "warmup_seconds": result.warmup_seconds,
            "encoded_cache": {"built": data.built, "seconds": data.seconds},
            "checkpoints": result.checkpoint_summary(),
            "amp": args.amp,
            "loss_history": result.history,
            "dataset_content_hash": manifest["content_hash"],
            "args": vars(args),
        }
        export_model(
            dirs["AIP_MODEL_DIR"],
            raw_model,
            catalogue,
            member_vocab,
            popularity,
            metrics,
            history=history if config.history_hidden else None,
        )
        if writer is not None:
            for name in (
                "recall_at_10",
                "ndcg_at_10",
                "baseline_recall_at_10",
                "baseline_ndcg_at_10",
            ):
                writer.add_scalar(f"selection/{name}", metrics[name], result.step)
            writer.close()
        import hypertune

        hypertune.HyperTune().report_hyperparameter_tuning_metric(
            hyperparameter_metric_tag=args.hypertune_metric,
            metric_value=metrics[args.hypertune_metric],
            global_step=result.step,
        )
        summary = {k: v for k, v in metrics.items() if k != "training"}
        print(json.dumps({"metrics": summary, "model_dir": str(dirs["AIP_MODEL_DIR"])}), flush=True)
    _leave_group(info.world_size, barrier=True)
    return 0


def _encoded_data(
    manifest: dict[str, Any], catalogue: Catalogue, cache_dir: str, rank: int, world_size: int
) -> EncodedDataset:
    """The encoded rows; with several replicas rank 0 builds a missing cache first."""
    from trainer import encoded
    from trainer.paths import resolve

    root = resolve(cache_dir) if cache_dir else None
    if world_size > 1 and rank != 0:
        import torch.distributed as dist

        dist.barrier()  # wait for rank 0's build, then map its files
        return encoded.load_or_build(manifest, catalogue, root)
    data = encoded.load_or_build(manifest, catalogue, root)
    if world_size > 1:
        import torch.distributed as dist

        dist.barrier()
    return data


def seconds_since_start() -> float:
    """Seconds since this process started (from /proc where there is one), imports included."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


def _leave_group(world_size: int, barrier: bool = False) -> None:
    if world_size > 1:
        import torch.distributed as dist

        if barrier:
            dist.barrier()  # replicas wait while the primary evaluates and exports
        dist.destroy_process_group()


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags, configure logging and run."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _validate(args, parser)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        return run(args)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def exit_now(code: int) -> NoReturn:
    """Flush the logs and leave without interpreter teardown.

    Tearing down an interpreter that imported torch takes about a second, paid again after
    every preemption. By the time `main` returns, everything the job leaves behind is on disk
    (checkpoints and the artifact are fsynced and renamed into place, event files closed), so
    there is nothing for the teardown to do.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())

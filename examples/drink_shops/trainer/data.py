"""Synthetic transactions: `python -m trainer.data generate --members N --stores S --weeks W ...`.

Each week is drawn from its own seeded generator (`trainer.sampling`) and written as its own
Parquet file, so the full scale (500,000 members × 156 weeks) streams one week at a time, and
large datasets are sampled by several worker processes (`default_workers`) that write the same
files as one process would. `python -m trainer.data append --out DIR` adds the next week: a
scheduled pipeline trains on a dataset that grows by one week at a time, drawn from the same
world (`generation.json`'s `config`) after the weeks it was generated with.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from trainer.paths import atomic_write_bytes, atomic_write_json, resolve
from trainer.sampling import SCHEMA, sample_week
from trainer.world import (
    CATEGORIES,
    REGIONS,
    START_DATE,
    World,
    WorldConfig,
    build_world,
)

FORMAT = "drinkshop-transactions/v1"
TRANSACTIONS_DIR = "transactions"
_ROW_GROUP = 262_144
PARALLEL_FROM = 2_000_000  # member-weeks from which generate() samples in several processes
MAX_WORKERS = 4  # each worker holds the world and one week (about 0.3 GB at full scale)


def week_file(week: int) -> str:
    """Relative path of one week's transactions inside a dataset folder."""
    return f"{TRANSACTIONS_DIR}/week-{week:04d}.parquet"


def drinks_table(world: World) -> pa.Table:
    """The catalogue: every drink ever sold, with its launch week and where it is sold."""
    ids = np.arange(world.config.drinks)
    region_names = ["all" if r < 0 else REGIONS[r] for r in world.drink_region]
    return pa.table(
        {
            "drink_id": pa.array(ids, pa.int32()),
            "name": [
                f"{CATEGORIES[c]} no.{i}" for i, c in zip(ids, world.drink_category, strict=True)
            ],
            "category": [CATEGORIES[c] for c in world.drink_category],
            "category_id": pa.array(world.drink_category, pa.int8()),
            "is_cold": pa.array(world.drink_cold, pa.bool_()),
            "region_id": pa.array(world.drink_region, pa.int8()),
            "region": region_names,
            "launch_week": pa.array(world.drink_launch_week, pa.int16()),
            "launch_date": pa.array(
                np.datetime64(START_DATE.isoformat(), "D")
                + 7 * world.drink_launch_week.astype(np.int64),
                pa.date32(),
            ),
            "base_price": pa.array(world.drink_price, pa.float32()),
            "season_id": pa.array(world.drink_season, pa.int8()),
        }
    )


def stores_table(world: World) -> pa.Table:
    """One row per shop: its region and relative footfall."""
    return pa.table(
        {
            "store_id": pa.array(np.arange(world.config.stores), pa.int32()),
            "region_id": pa.array(world.store_region, pa.int8()),
            "region": [REGIONS[r] for r in world.store_region],
            "traffic": pa.array(world.store_traffic, pa.float32()),
        }
    )


def parquet_bytes(table: pa.Table) -> bytes:
    """Serialise a table as zstd Parquet (deterministic for a given pyarrow version)."""
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=_ROW_GROUP)
    return sink.getvalue()


def default_workers(config: WorldConfig) -> int:
    """Processes `generate` uses by default: 1 below `PARALLEL_FROM` member-weeks."""
    if config.members * config.weeks < PARALLEL_FROM:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, MAX_WORKERS, config.weeks))


def _write_week(world: World, root: Path, week: int) -> dict[str, Any]:
    table = sample_week(world, week)
    data = parquet_bytes(table)
    atomic_write_bytes(root / week_file(week), data)
    return {"week": week, "path": week_file(week), "rows": table.num_rows, "bytes": len(data)}


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for the processes started inside the block."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_worker_world: World | None = None


def _set_worker_world(world: World) -> None:
    global _worker_world
    _worker_world = world


def _write_week_in_worker(root: Path, week: int) -> dict[str, Any]:
    assert _worker_world is not None, "the pool initializer sets the world"
    return _write_week(_worker_world, root, week)


def generate(config: WorldConfig, out: str | Path, workers: int = 0) -> dict[str, Any]:
    """Write a synthetic dataset: weekly transaction files, drinks, stores, generation.json.

    Args:
        config: scale and seed.
        out: destination folder (local, `gs://` or `/gcs/`, see `trainer.paths.resolve`).
        workers: processes sampling weeks in parallel; 0 picks one per core (at most
            `MAX_WORKERS`) when the dataset is large enough to repay starting them, else 1.
            Each week has its own generator, so the files are the same for any count.

    Returns:
        The content of `generation.json`: config, files with row counts and bytes, totals.
    """
    if workers < 0:
        raise ValueError(f"workers must be >= 0 (0: automatic), got {workers}")
    root = resolve(out)
    began = time.perf_counter()
    world = build_world(config)
    workers = workers or default_workers(config)
    if workers == 1:
        weeks = [_write_week(world, root, week) for week in range(config.weeks)]
    else:
        # spawn, not fork: the caller may hold threads (torch, servers) that fork would copy
        # in whatever state they are in. One BLAS thread per worker: the workers already use
        # every core, and idle BLAS threads spin on them.
        with (
            _environment(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1"),
            ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_set_worker_world,
                initargs=(world,),
            ) as pool,
        ):
            weeks = list(
                pool.map(_write_week_in_worker, [root] * config.weeks, range(config.weeks))
            )
    for name, table in (
        ("drinks.parquet", drinks_table(world)),
        ("stores.parquet", stores_table(world)),
    ):
        atomic_write_bytes(root / name, parquet_bytes(table))
    rows = sum(w["rows"] for w in weeks)
    size = sum(w["bytes"] for w in weeks)
    summary: dict[str, Any] = {
        "format": FORMAT,
        "config": config.to_json(),
        "start_date": START_DATE.isoformat(),
        "schema": {field.name: str(field.type) for field in SCHEMA},
        "weeks": weeks,
        "drinks_path": "drinks.parquet",
        "stores_path": "stores.parquet",
        "rows": rows,
        "bytes": size,
        "bytes_per_row": size / rows if rows else 0.0,
    }
    atomic_write_json(root / "generation.json", summary)
    # Timing stays out of generation.json so that the same seed gives byte-identical output.
    summary["seconds"] = time.perf_counter() - began
    return summary


def append_week(out: str | Path) -> dict[str, Any]:
    """Append the next week to a dataset written by `generate` (or appended to before).

    Args:
        out: the dataset folder (local, `gs://` or `/gcs/`).

    Returns:
        The new week's entry of `generation.json`: week, path, rows and bytes.

    Raises:
        FileNotFoundError: `out` has no generation.json.
        ValueError: generation.json is not this generator's.
    """
    root = resolve(out)
    info_path = root / "generation.json"
    if not info_path.is_file():
        raise FileNotFoundError(
            f"{out!s} has no generation.json; write the dataset first with "
            "`python -m trainer.data generate ... --out DIR`"
        )
    info: dict[str, Any] = json.loads(info_path.read_text(encoding="utf-8"))
    if info.get("format") != FORMAT:
        raise ValueError(f"{info_path}: format {info.get('format')!r}, expected {FORMAT!r}")
    world = build_world(WorldConfig.from_json(info["config"]))
    week = max(entry["week"] for entry in info["weeks"]) + 1
    entry = _write_week(world, root, week)
    info["weeks"].append(entry)
    info["rows"] += entry["rows"]
    info["bytes"] += entry["bytes"]
    info["bytes_per_row"] = info["bytes"] / info["rows"] if info["rows"] else 0.0
    # The week's file is in place before generation.json names it.
    atomic_write_json(info_path, info)
    return entry


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `python -m trainer.data generate --members N --stores S --weeks W --out DIR`, and
    `python -m trainer.data append --out DIR` for the next week."""
    parser = argparse.ArgumentParser(prog="python -m trainer.data", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write a synthetic transactions dataset")
    gen.add_argument("--members", type=int, required=True)
    gen.add_argument("--stores", type=int, required=True)
    gen.add_argument("--weeks", type=int, required=True)
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--drinks", type=int, default=96)
    defaults = WorldConfig(members=1, stores=len(REGIONS), weeks=1, seed=0)
    gen.add_argument(
        "--habit-weeks",
        type=float,
        default=defaults.habit_weeks,
        help="mean weeks a favourite lasts (0: favourites never change)",
    )
    gen.add_argument(
        "--launch-boost",
        type=float,
        default=defaults.launch_boost,
        help="extra odds of a recent launch becoming a new habit (0: none)",
    )
    gen.add_argument(
        "--seasonal-share",
        type=float,
        default=defaults.seasonal_share,
        help="share of drinks sold in one season only (0: none)",
    )
    gen.add_argument("--out", required=True, help="output folder (local, gs:// or /gcs/)")
    gen.add_argument(
        "--workers", type=int, default=0, help="parallel processes (0: one per core when large)"
    )
    add = sub.add_parser("append", help="append the next week to a dataset")
    add.add_argument("--out", required=True, help="the dataset folder (local, gs:// or /gcs/)")
    args = parser.parse_args(argv)
    if args.command == "append":
        try:
            entry = append_week(args.out)
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
        # Week indexes count from 0 (file names); people count weeks from 1.
        print(
            f"appended {entry['path']} (week {entry['week'] + 1} of the data, "
            f"{entry['rows']} rows) to {args.out}"
        )
        return 0
    try:
        config = WorldConfig(
            members=args.members,
            stores=args.stores,
            weeks=args.weeks,
            seed=args.seed,
            drinks=args.drinks,
            habit_weeks=args.habit_weeks,
            launch_boost=args.launch_boost,
            seasonal_share=args.seasonal_share,
        )
    except ValueError as error:
        parser.error(str(error))
    if args.workers < 0:
        parser.error(f"--workers must be >= 0 (0: automatic), got {args.workers}")
    summary = generate(config, args.out, workers=args.workers)
    rate = summary["rows"] / max(summary["seconds"], 1e-9)
    print(
        f"wrote {summary['rows']} rows ({summary['bytes']} bytes, "
        f"{summary['bytes_per_row']:.1f} B/row) in {summary['seconds']:.2f}s "
        f"({rate:,.0f} rows/s) to {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Synthetic transactions: `python -m trainer.data generate --members N --stores S --weeks W ...`.

Each week is drawn from its own seeded generator and written as its own Parquet file, so the
full scale (500,000 members × 156 weeks) streams one week at a time, and large datasets are
sampled by several worker processes (`default_workers`) with the same files as one process.
A drink is chosen by Gumbel-max over utilities; `trainer.gumbel` makes that choice exactly as
`Generator.gumbel` would, without computing a Gumbel variate for every (visit, drink) cell.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from trainer.gumbel import gumbel_argmax
from trainer.paths import atomic_write_bytes, atomic_write_json, resolve
from trainer.world import (
    CATEGORIES,
    REGIONS,
    START_DATE,
    TASTE_DIM,
    World,
    WorldConfig,
    build_world,
    region_price_factor,
    rng_for,
    season_of_month,
    weekly_temperature,
)

FORMAT = "drinkshop-transactions/v1"
TRANSACTIONS_DIR = "transactions"
SCHEMA = pa.schema(
    [
        ("member_id", pa.int32()),
        ("store_id", pa.int32()),
        ("drink_id", pa.int32()),
        ("timestamp", pa.timestamp("ms")),  # Parquet has no second unit
        ("quantity", pa.int8()),
        ("price", pa.float32()),
        ("hour", pa.int8()),
        ("weekday", pa.int8()),
        ("week", pa.int16()),
        ("season", pa.int8()),
        ("region", pa.int8()),
        ("temperature", pa.float32()),
    ]
)
_ROW_GROUP = 262_144
_DAYPART_HOURS = np.array([[7, 11], [11, 14], [14, 18], [18, 22]])
_WEEKDAY_CDF = np.cumsum(
    [[0.17, 0.17, 0.17, 0.17, 0.18, 0.07, 0.07], [0.1, 0.1, 0.1, 0.1, 0.15, 0.22, 0.23]], axis=1
)
_FAVOURITE_CDF = np.array([0.6, 0.9, 1.0])
_EPOCH_START = np.datetime64(START_DATE.isoformat(), "s").astype(np.int64)
_TASTE_CHUNK = 65_536  # exploring visits per taste matrix product
_BLOCK = 4_096  # visits per cache-sized block of the elementwise passes
PARALLEL_FROM = 2_000_000  # member-weeks from which generate() samples in several processes
MAX_WORKERS = 4  # each worker holds the world and one week (about 0.3 GB at full scale)


def week_file(week: int) -> str:
    """Relative path of one week's transactions inside a dataset folder."""
    return f"{TRANSACTIONS_DIR}/week-{week:04d}.parquet"


def sample_week(world: World, week: int) -> pa.Table:
    """Draw one week of transactions.

    Args:
        world: the world from `build_world`.
        week: week index, 0-based from `START_DATE`.

    Returns:
        A table with `SCHEMA`, sorted by timestamp then member.
    """
    cfg = world.config
    rng = rng_for(cfg.seed, 5, week)
    temps = weekly_temperature(world, week)
    home_region = world.store_region[world.member_home]
    # Warm weeks and a growing member base bring more visits.
    busy = 1.0 + 0.04 * (temps.mean(axis=1)[home_region] - 22.0) + 0.1 * week / 52
    visits = rng.poisson(world.member_rate * np.clip(busy, 0.3, None))
    member = np.repeat(np.arange(cfg.members, dtype=np.int32), visits)
    n = member.size

    weekday = (rng.random(n)[:, None] > _WEEKDAY_CDF[world.member_weekend[member].astype(int)]).sum(
        1
    )
    usual = rng.random(n) < 0.7
    daypart = np.where(usual, world.member_daypart[member], rng.integers(0, 4, n))
    lo, hi = _DAYPART_HOURS[daypart, 0], _DAYPART_HOURS[daypart, 1]
    hour = lo + (rng.random(n) * (hi - lo)).astype(np.int64)

    store = _choose_store(world, rng, member)
    region = world.store_region[store]
    temperature = temps[region, weekday]
    drink = _choose_drink(world, rng, member, store, week, hour, temperature)

    u = rng.random(n)
    quantity = (1 + (u < 0.12) + (u < 0.03)).astype(np.int8)
    price = np.round(world.drink_price[drink] * region_price_factor(region)).astype(np.float32)
    day = 7 * week + weekday
    seconds = _EPOCH_START + day * 86400 + hour * 3600 + rng.integers(0, 60, n) * 60
    month = (np.datetime64(START_DATE.isoformat(), "D") + day).astype("datetime64[M]")
    season = season_of_month(month.astype(np.int64) % 12 + 1)

    order = np.lexsort((member, seconds))
    columns = {
        "member_id": member,
        "store_id": store.astype(np.int32),
        "drink_id": drink.astype(np.int32),
        "timestamp": seconds.astype("datetime64[s]"),
        "quantity": quantity,
        "price": price,
        "hour": hour.astype(np.int8),
        "weekday": weekday.astype(np.int8),
        "week": np.full(n, week, dtype=np.int16),
        "season": season,
        "region": region.astype(np.int8),
        "temperature": np.round(temperature, 1).astype(np.float32),
    }
    return pa.table({name: values[order] for name, values in columns.items()}, schema=SCHEMA)


def _choose_store(world: World, rng: np.random.Generator, member: np.ndarray) -> np.ndarray:
    """Home store most of the time, otherwise another shop in the same region."""
    home = world.member_home[member]
    by_region = np.argsort(world.store_region, kind="stable")
    counts = np.bincount(world.store_region, minlength=len(REGIONS))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    region = world.store_region[home]
    other = by_region[starts[region] + (rng.random(member.size) * counts[region]).astype(np.int64)]
    return np.where(rng.random(member.size) < 0.85, home, other)


def _choose_drink(
    world: World,
    rng: np.random.Generator,
    member: np.ndarray,
    store: np.ndarray,
    week: int,
    hour: np.ndarray,
    temperature: np.ndarray,
) -> np.ndarray:
    """A favourite out of habit, else a choice by taste, weather, time of day and novelty."""
    n = member.size
    slot = (rng.random(n)[:, None] > _FAVOURITE_CDF).sum(1)
    favourite = world.member_favourites[member, slot]
    store_region = world.store_region[store]
    fav_region = world.drink_region[favourite]
    fav_on_menu = (fav_region == -1) | (fav_region == store_region)
    habitual = (rng.random(n) < world.member_habit[member]) & fav_on_menu
    drink = favourite.astype(np.int64)

    explore = np.flatnonzero(~habitual)
    category = world.drink_category
    age = week - world.drink_launch_week.astype(np.int64)
    novelty = np.where((age >= 0) & (age < 6), 1.5 * (1 - age / 6), 0.0)
    base = world.drink_popularity + novelty
    sign = np.where(world.drink_cold, 1.0, -1.0)
    # A visit falls in at most one of the three boosted dayparts, so adding its daypart's row
    # adds exactly what three masked additions would (the other two add 0.0, which is exact);
    # the same row adds -inf for drinks off the region's menu or not launched yet.
    boost = np.zeros((4, category.size))
    boost[1] = 1.0 * (category == 3)  # before 11:00: coffee
    boost[2] = 0.4 * ((category == 1) | (category == 4))  # 13:00-18:00: fruit tea, smoothies
    boost[3] = 0.3 * (category == 0)  # from 18:00: milk tea
    on_menu = (world.drink_region == -1) | (world.drink_region == np.arange(len(REGIONS))[:, None])
    off_menu = np.where(on_menu & (age >= 0), 0.0, -np.inf)
    context = (boost[:, None, :] + off_menu[None, :, :]).reshape(-1, category.size)
    daypart = np.select([hour < 11, (hour >= 13) & (hour < 18), hour >= 18], [1, 2, 3], 0)
    context_row = daypart * len(REGIONS) + store_region
    scale = 2.0 / np.sqrt(TASTE_DIM)
    # float32 copies for the approximate scores `gumbel_argmax` screens cells with.
    base32, sign32 = base.astype(np.float32), sign.astype(np.float32)
    context32 = context.astype(np.float32)
    for start in range(0, explore.size, _TASTE_CHUNK):
        rows = explore[start : start + _TASTE_CHUNK]
        # One BLAS call per 65,536 rows, as since v1: other shapes may round differently.
        taste = world.member_taste[member[rows]] @ world.drink_taste.T
        heat = 0.9 * (temperature[rows] - 22.0) / 6.0
        situation = context_row[rows]
        # float32 rounding of |terms| <= `largest` stays far below this bound.
        largest = float(np.abs(taste).max()) * scale + np.abs(base).max() + np.abs(heat).max() + 1
        error = 1e-3 + 1e-6 * largest
        for block in range(0, rows.size, _BLOCK):
            part = slice(block, block + _BLOCK)
            approx = taste[part] * np.float32(scale)
            approx += base32
            approx += sign32 * heat[part, None]
            approx += context32[situation[part]]

            exact = partial(
                _exact_utility, taste[part], heat[part], situation[part], base, sign, context, scale
            )
            drink[rows[part]] = gumbel_argmax(rng, approx, exact, error)
    return drink


def _exact_utility(
    taste: np.ndarray,
    heat: np.ndarray,
    situation: np.ndarray,
    base: np.ndarray,
    sign: np.ndarray,
    context: np.ndarray,
    scale: float,
    rows: np.ndarray,
    columns: np.ndarray,
) -> np.ndarray:
    """The float64 utility of the given cells: version 1's operations, in its order."""
    utility = taste[rows, columns] * scale
    utility += base[columns]
    utility += sign[columns] * heat[rows]
    utility += context[situation[rows], columns]
    return np.asarray(utility)


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
        # in whatever state they are in.
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_set_worker_world,
            initargs=(world,),
        ) as pool:
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
        "config": {
            "members": config.members,
            "stores": config.stores,
            "weeks": config.weeks,
            "seed": config.seed,
            "drinks": config.drinks,
            "clusters": config.clusters,
        },
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
    gen.add_argument("--out", required=True, help="output folder (local, gs:// or /gcs/)")
    gen.add_argument(
        "--workers", type=int, default=0, help="parallel processes (0: one per core when large)"
    )
    add = sub.add_parser("append", help="append the next week to a dataset (trainer.data_append)")
    add.add_argument("--out", required=True, help="the dataset folder (local, gs:// or /gcs/)")
    args = parser.parse_args(argv)
    if args.command == "append":
        from trainer.data_append import append_week

        try:
            entry = append_week(args.out)
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
        print(f"appended week {entry['week']} ({entry['rows']} rows) to {args.out}")
        return 0
    try:
        config = WorldConfig(
            members=args.members,
            stores=args.stores,
            weeks=args.weeks,
            seed=args.seed,
            drinks=args.drinks,
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

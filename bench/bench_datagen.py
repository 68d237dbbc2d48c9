"""Synthetic data generation speed (rows/s) and the full-scale size it implies.

`python -m bench.bench_datagen [--full]`. Baseline in the same run: writing the very same
tables to Parquet alone, the I/O floor of any generator; the ratio says how much of the time
the sampling itself costs. Full scale (2,000 stores × 500,000 members × 156 weeks) is
extrapolated from the measured rows per member-week and bytes per row; it is not generated.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from trainer.data import generate, parquet_bytes
from trainer.paths import atomic_write_bytes
from trainer.world import WorldConfig, build_world

FULL_SCALE = {"members": 500_000, "stores": 2_000, "weeks": 156}


def run(quick: bool) -> dict[str, Any]:
    """Generate one dataset, time it, then time writing the same tables alone.

    Args:
        quick: 5,000 members × 200 stores × 12 weeks; otherwise 20,000 × 2,000 × 52 (a year,
            so the rate covers every season).
    """
    config = (
        WorldConfig(members=5_000, stores=200, weeks=12, seed=0)
        if quick
        else WorldConfig(members=20_000, stores=2_000, weeks=52, seed=0)
    )
    from trainer.data import sample_week

    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        summary = generate(config, Path(tmp) / "data")
        seconds = time.perf_counter() - began
        world = build_world(config)
        tables = [sample_week(world, week) for week in range(config.weeks)]
        began = time.perf_counter()
        for week, table in enumerate(tables):
            atomic_write_bytes(Path(tmp) / "floor" / f"{week}.parquet", parquet_bytes(table))
        write_seconds = time.perf_counter() - began
    rows = summary["rows"]
    per_member_week = rows / (config.members * config.weeks)
    full_rows = per_member_week * FULL_SCALE["members"] * FULL_SCALE["weeks"]
    rate = rows / seconds
    return {
        "members": config.members,
        "stores": config.stores,
        "weeks": config.weeks,
        "rows": rows,
        "bytes": summary["bytes"],
        "bytes_per_row": summary["bytes_per_row"],
        "rows_per_s": rate,
        "parquet_write_only_rows_per_s": rows / write_seconds,
        "ratio_vs_write_only": rate / (rows / write_seconds),
        "rows_per_member_week": per_member_week,
        "full_scale_rows_extrapolated": full_rows,
        "full_scale_bytes_extrapolated": full_rows * summary["bytes_per_row"],
        "full_scale_seconds_extrapolated": full_rows / rate,
    }


def main() -> None:
    """CLI: print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_datagen", description=__doc__)
    parser.add_argument("--full", action="store_true")
    figures = run(not parser.parse_args().full)
    print(json.dumps(figures, indent=2))
    print(
        f"{figures['rows_per_s']:,.0f} rows/s end to end vs "
        f"{figures['parquet_write_only_rows_per_s']:,.0f} "
        f"rows/s writing Parquet alone (ratio {figures['ratio_vs_write_only']:.2f}); full scale ≈ "
        f"{figures['full_scale_rows_extrapolated'] / 1e6:,.1f} M rows, "
        f"{figures['full_scale_bytes_extrapolated'] / 2**30:,.2f} GiB (extrapolated)"
    )


if __name__ == "__main__":
    main()

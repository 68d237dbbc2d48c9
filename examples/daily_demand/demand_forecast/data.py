"""The sample data: ``python -m demand_forecast.data generate|append --out=URI``.

``generate`` writes a dataset folder as ``examples/daily_demand/dataset.yaml`` declares it::

    <out>/sales/2025-01-06.parquet   one file per day: day, store, item, units, price, on_promo
    <out>/items.parquet              the items dimension: item, family, base_price
    <out>/generation.json            the config and the last day written (``append`` reads it)

``append`` adds the next day (``--days=N``: the next N days), as a nightly feed would. The
rows come from :mod:`demand_forecast.synthetic`, seeded, so the same arguments give the same
bytes. ``--out`` is a local folder or ``gs://BUCKET/PATH``, written under
``$VERTEX_LOCAL_ROOT/gcs/BUCKET/PATH`` (default ``./.local-vertex``), where a local run of
vertex-retrain reads that URI. Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.parquet as pq

from demand_forecast.paths import atomic_write, atomic_write_json, sample_path
from demand_forecast.synthetic import WorldConfig, build_world, day_columns, items_columns

GENERATION_FORMAT = "demand-forecast-sample/v1"
SALES_FOLDER = "sales"
ITEMS_FILE = "items.parquet"
GENERATION_FILE = "generation.json"

SALES_SCHEMA = pa.schema(
    [
        ("day", pa.date32()),
        ("store", pa.string()),
        ("item", pa.string()),
        ("units", pa.int32()),
        ("price", pa.float64()),
        ("on_promo", pa.bool_()),
    ]
)
ITEMS_SCHEMA = pa.schema(
    [("item", pa.string()), ("family", pa.string()), ("base_price", pa.float64())]
)
MAX_DAYS = 3660


class SampleDataError(ValueError):
    """The output folder cannot take this command (already generated, or nothing to append to)."""


def _write_parquet(path: Path, columns: dict[str, Any], schema: pa.Schema) -> None:
    table = pa.Table.from_pydict(columns, schema=schema)
    atomic_write(path, lambda handle: pq.write_table(table, handle))


def _check_days(days: int) -> None:
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"--days must be between 1 and {MAX_DAYS}, got {days}")


def _write_days(folder: Path, config: WorldConfig, first: dt.date, days: int) -> dt.date:
    world = build_world(config)
    day = first
    for offset in range(days):
        day = first + dt.timedelta(days=offset)
        _write_parquet(
            folder / SALES_FOLDER / f"{day.isoformat()}.parquet",
            day_columns(world, day),
            SALES_SCHEMA,
        )
    return day


def _record(folder: Path, config: WorldConfig, last_day: dt.date) -> None:
    atomic_write_json(
        folder / GENERATION_FILE,
        {
            "format": GENERATION_FORMAT,
            "stores": config.stores,
            "items": config.items,
            "seed": config.seed,
            "start": config.start.isoformat(),
            "last_day": last_day.isoformat(),
        },
    )


def generate(out: str, config: WorldConfig, days: int) -> dict[str, Any]:
    """Writes ``days`` days of sales from ``config.start`` and the items dimension.

    Returns:
        What was written (folder, first and last day, rows).

    Raises:
        SampleDataError: ``out`` already holds generated data.
    """
    folder = sample_path(out)
    if (folder / GENERATION_FILE).is_file():
        raise SampleDataError(
            f"--out={out} already holds sample data ({folder / GENERATION_FILE}); append to it "
            "with `append`, or choose another --out"
        )
    _check_days(days)
    _write_parquet(folder / ITEMS_FILE, items_columns(build_world(config)), ITEMS_SCHEMA)
    last = _write_days(folder, config, config.start, days)
    # Written last: a folder without it was interrupted, and generating again redoes it.
    _record(folder, config, last)
    return _summary(folder, config.start, last, config, days)


def append(out: str, days: int = 1) -> dict[str, Any]:
    """Writes the ``days`` days after the last one written, with the folder's own config.

    Raises:
        SampleDataError: ``out`` holds no generated data.
    """
    _check_days(days)
    folder = sample_path(out)
    record_path = folder / GENERATION_FILE
    if not record_path.is_file():
        raise SampleDataError(
            f"--out={out} holds no sample data ({record_path} is missing); run `generate` first"
        )
    record = json.loads(record_path.read_text(encoding="utf-8"))
    if record.get("format") != GENERATION_FORMAT:
        raise SampleDataError(
            f"{record_path}: format {record.get('format')!r}; expected {GENERATION_FORMAT!r}"
        )
    config = WorldConfig(
        stores=int(record["stores"]),
        items=int(record["items"]),
        seed=int(record["seed"]),
        start=dt.date.fromisoformat(record["start"]),
    )
    first = dt.date.fromisoformat(record["last_day"]) + dt.timedelta(days=1)
    last = _write_days(folder, config, first, days)
    _record(folder, config, last)
    return _summary(folder, first, last, config, days)


def _summary(
    folder: Path, first: dt.date, last: dt.date, config: WorldConfig, days: int
) -> dict[str, Any]:
    return {
        "folder": str(folder),
        "first_day": first.isoformat(),
        "last_day": last.isoformat(),
        "rows": days * config.stores * config.items,
    }


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _days(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of days, got {text!r}") from None
    if not 1 <= value <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_DAYS} days, got {value}")
    return value


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """``generate`` and ``append``, with their flags."""
    parser = _Parser(prog="python -m demand_forecast.data", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    made = commands.add_parser("generate", help="write a new sample dataset")
    made.add_argument("--out", required=True, help="local folder or gs://BUCKET/PATH")
    made.add_argument("--stores", type=int, default=WorldConfig.stores)
    made.add_argument("--items", type=int, default=WorldConfig.items)
    made.add_argument("--days", type=_days, default=56, help="days of sales (default 8 weeks)")
    made.add_argument("--seed", type=int, default=WorldConfig.seed)
    made.add_argument("--start", type=_date, default=WorldConfig.start, help="first day")
    more = commands.add_parser("append", help="add the next day(s) to a sample dataset")
    more.add_argument("--out", required=True, help="the folder `generate` wrote")
    more.add_argument("--days", type=_days, default=1, help="days to add (default 1)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command; prints what was written as one JSON line.

    Returns:
        0 on success, 2 on bad input.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "generate":
            config = WorldConfig(args.stores, args.items, args.seed, args.start)
            done = generate(args.out, config, args.days)
        else:
            done = append(args.out, args.days)
    except (SampleDataError, ValueError) as error:
        parser.error(str(error))
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The data gate on a daily table of another shape (tests/declarations.py's sales): the period
sets the defaults, and each generic check reads the declared names."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.declarations import DATASET
from vertex_retrain.contracts.gate_report import GateThresholds
from vertex_retrain.steps.data_gate import check_data

FIRST = dt.date(2026, 3, 2)
DAYS = 3


def _day(folder: Path, day: dt.date, rows: list[tuple[str, str, float]]) -> None:
    table = pa.table(
        {
            "day": pa.array([day] * len(rows), pa.date32()),
            "store": pa.array([r[0] for r in rows], pa.string()),
            "item": pa.array([r[1] for r in rows], pa.string()),
            "units": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
    pq.write_table(table, folder / "sales" / f"{day.isoformat()}.parquet")


def _dataset(tmp_path: Path, newest: list[tuple[str, str, float]] | None = None) -> Path:
    folder = tmp_path / "data"
    (folder / "sales").mkdir(parents=True)
    pq.write_table(
        pa.table({"item": ["a", "b", "c"], "family": ["tea", "tea", "coffee"]}),
        folder / "items.parquet",
    )
    usual = [(s, i, 1.0) for s in ("s1", "s2") for i in ("a", "b", "c")]
    for offset in range(DAYS):
        last = offset == DAYS - 1
        _day(folder, FIRST + dt.timedelta(days=offset), newest if last and newest else usual)
    return folder


def _gate(folder: Path, as_of: dt.date, **options: object):  # type: ignore[no-untyped-def]
    return check_data(
        backend="local",
        data_uri=str(folder),
        dataset_declaration=DATASET,
        as_of=as_of.isoformat(),
        **options,
    )


def test_daily_gate_passes_a_clean_day_with_the_daily_defaults(tmp_path: Path) -> None:
    report = _gate(_dataset(tmp_path), FIRST + dt.timedelta(days=DAYS))
    assert report.passed, report.verdict()
    assert report.period == FIRST + dt.timedelta(days=DAYS - 1)
    assert report.statistics["days_covered"] == 1 and report.statistics["groups"] == 2
    assert report.statistics["distinct_item"] == 3


@pytest.mark.parametrize(("late_days", "stale"), [(0, False), (1, True)])
def test_daily_gate_data_age_default_is_one_day(
    tmp_path: Path, late_days: int, stale: bool
) -> None:
    # The newest row is on the last day at midnight (a date), so it is 1 day old on as_of.
    as_of = FIRST + dt.timedelta(days=DAYS + late_days)
    report = _gate(_dataset(tmp_path), as_of)
    assert ("data_age" in [b.check for b in report.breaches]) is stale
    assert GateThresholds().for_period(1).max_data_age_days == 1.0


def test_daily_gate_unknown_key_names_the_dimension_and_its_file(tmp_path: Path) -> None:
    rows = [(s, i, 1.0) for s in ("s1", "s2") for i in ("a", "b", "c")] + [("s1", "zz", 1.0)]
    report = _gate(_dataset(tmp_path, rows), FIRST + dt.timedelta(days=DAYS))
    (unknown,) = [b for b in report.breaches if b.check == "unknown_keys"]
    assert unknown.detail == "1 row(s) name a item missing from items.parquet (dimension items)"


def test_daily_gate_mix_shift_per_group_reads_the_category_from_the_dimension(
    tmp_path: Path,
) -> None:
    # s1 sold 2/3 tea and 1/3 coffee; now only coffee: a shift of 2/3 in its family mix.
    rows = [("s1", "c", 1.0)] * 3 + [("s2", i, 1.0) for i in ("a", "b", "c")]
    folder = _dataset(tmp_path, rows)
    loose = {"min_group_rows_for_mix": 3, "max_duplicate_share": 1.0}
    report = _gate(folder, FIRST + dt.timedelta(days=DAYS), thresholds=loose)
    (shift,) = [b for b in report.breaches if b.check == "mix_shift"]
    assert shift.detail == "store s1's family mix moved by 0.67 from the period before"
    # Below the rows a group needs, its mix is not compared at all.
    fewer = _gate(
        folder, FIRST + dt.timedelta(days=DAYS), thresholds={**loose, "min_group_rows_for_mix": 4}
    )
    assert "mix_shift" not in [b.check for b in fewer.breaches]


def test_daily_gate_refuses_a_file_with_two_days_as_a_time_range_breach(tmp_path: Path) -> None:
    folder = _dataset(tmp_path)
    newest = folder / "sales" / f"{(FIRST + dt.timedelta(days=DAYS - 1)).isoformat()}.parquet"
    table = pq.read_table(newest)
    days = [FIRST + dt.timedelta(days=DAYS - 1)] * (table.num_rows - 1) + [
        FIRST + dt.timedelta(days=DAYS)
    ]
    pq.write_table(table.set_column(0, "day", pa.array(days, pa.date32())), newest)
    report = _gate(folder, FIRST + dt.timedelta(days=DAYS + 1))
    assert report.period == FIRST + dt.timedelta(days=DAYS - 1)
    assert "time_range" in [b.check for b in report.breaches]

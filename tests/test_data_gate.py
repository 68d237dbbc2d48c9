"""The data gate: each breach is found, named with its value and threshold, and can be accepted.

The data comes from the drink shops' generator, read by the example's declaration
(examples/drink_shops/dataset.yaml); each test breaks the newest week the way a failed
upstream export would and runs the gate on the window that ends after it.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.examples import DRINK_SHOPS, dataset_declaration
from trainer.data import generate, week_file
from trainer.world import START_DATE, WorldConfig
from vertex_retrain.contracts.gate_report import (
    CHECKS,
    DataGateInputError,
    GateThresholds,
    parse_accept,
    thresholds_from,
)
from vertex_retrain.steps.data_gate import check_data

DECLARATION = dataset_declaration(DRINK_SHOPS)

WEEKS = 4
AS_OF = (START_DATE + dt.timedelta(days=7 * WEEKS)).isoformat()
"""The Monday after the newest week: the window holds every week."""


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gate") / "data"
    generate(WorldConfig(members=600, stores=8, weeks=WEEKS, seed=5), folder)
    return folder


@pytest.fixture()
def dataset(clean: Path, tmp_path: Path) -> Path:
    shutil.copytree(clean, tmp_path / "data")
    return tmp_path / "data"


def _break_newest_week(dataset: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    path = dataset / week_file(WEEKS - 1)
    pq.write_table(change(pq.read_table(path)), path)


def _gate(dataset: Path, **options: object):  # type: ignore[no-untyped-def]
    return check_data(
        backend="local",
        data_uri=str(dataset),
        dataset_declaration=DECLARATION,
        as_of=AS_OF,
        **options,
    )


def _checks(report) -> list[str]:  # type: ignore[no-untyped-def]
    return [b.check for b in report.breaches]


def test_gate_passes_a_clean_week_and_records_its_statistics(clean: Path) -> None:
    report = _gate(clean)
    assert report.passed and report.breaches == [], report.verdict()
    assert report.period == START_DATE + dt.timedelta(days=7 * (WEEKS - 1))
    stats = report.statistics
    assert stats["rows"] == pq.ParquetFile(clean / week_file(WEEKS - 1)).metadata.num_rows
    assert stats["previous_rows"] == pq.ParquetFile(clean / week_file(WEEKS - 2)).metadata.num_rows
    assert stats["groups"] == 8 and stats["days_covered"] == 7
    assert stats["distinct_member_id"] > 0 and stats["distinct_drink_id"] > 0
    assert report.verdict() == (
        f"data gate passed for the period starting {report.period.isoformat()} before {AS_OF}"
    )


def test_gate_empty_week_names_the_file_and_the_missing_days(dataset: Path) -> None:
    _break_newest_week(dataset, lambda table: table.slice(0, 0))
    report = _gate(dataset)
    assert not report.passed
    assert _checks(report) == ["empty_file", "data_age"]
    empty, age = report.breaches
    assert empty.detail == f"{week_file(WEEKS - 1)} holds no rows"
    assert float(age.value.split()[0]) > 7 and "max_data_age_days" in age.threshold
    verdict = report.verdict()
    assert "\n" not in verdict and "--param data_gate_accept=empty_file,data_age" in verdict


def test_gate_half_week_breaks_days_covered_and_rows(dataset: Path) -> None:
    _break_newest_week(dataset, lambda t: t.filter(pc.less(t["weekday"], pa.scalar(3, pa.int8()))))
    report = _gate(dataset)
    assert set(_checks(report)) == {"days_covered", "rows", "distinct"}
    distinct = next(b for b in report.breaches if b.check == "distinct")
    assert "distinct 'member_id' values" in distinct.detail
    days = next(b for b in report.breaches if b.check == "days_covered")
    assert days.value == "3 days"
    assert days.threshold == ">= 7 (the period before's days; min_days_covered sets it)"
    rows = next(b for b in report.breaches if b.check == "rows")
    assert float(rows.value) < 0.7 and "min_row_ratio" in rows.threshold


def test_gate_duplicated_rows_are_counted_against_their_share(dataset: Path) -> None:
    _break_newest_week(dataset, lambda t: pa.concat_tables([t, t.slice(0, t.num_rows // 5)]))
    report = _gate(dataset)
    assert _checks(report) == ["duplicates"]
    (duplicates,) = report.breaches
    assert 0.1 < float(duplicates.value) < 0.2
    assert duplicates.threshold == "<= 0.001 (max_duplicate_share)"


def test_gate_changed_column_type_is_a_schema_breach(dataset: Path) -> None:
    def to_double(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index("price")
        return table.set_column(index, "price", table["price"].cast(pa.float64()))

    _break_newest_week(dataset, to_double)
    report = _gate(dataset)
    assert _checks(report) == ["schema"]
    (schema,) = report.breaches
    assert (schema.value, schema.threshold) == ("double", "float (the declaration)")
    assert schema.detail == (
        f"column 'price' is double in {week_file(WEEKS - 1)}; the declaration says float"
    )


def test_gate_vanished_store_is_named_with_last_week_rows(dataset: Path) -> None:
    before = pq.read_table(dataset / week_file(WEEKS - 2))
    last_week = int(pc.sum(pc.equal(before["store_id"], 3)).as_py())
    _break_newest_week(dataset, lambda t: t.filter(pc.not_equal(t["store_id"], 3)))
    report = _gate(dataset)
    assert _checks(report) == ["groups_vanished"]
    (vanished,) = report.breaches
    assert vanished.detail.startswith(f"store_id 3 ({last_week} rows) had rows the period before")
    assert (vanished.value, vanished.threshold) == ("1 group(s)", "<= 0 (max_vanished_groups)")


def test_gate_unknown_ids_and_nulls_are_breaches(dataset: Path) -> None:
    def corrupt(table: pa.Table) -> pa.Table:
        drinks = table["drink_id"].to_pylist()
        drinks[0] = 9999
        temperature = table["temperature"].to_pylist()
        temperature[1] = None
        table = table.set_column(
            table.schema.get_field_index("drink_id"), "drink_id", pa.array(drinks, pa.int32())
        )
        return table.set_column(
            table.schema.get_field_index("temperature"),
            "temperature",
            pa.array(temperature, pa.float32()),
        )

    _break_newest_week(dataset, corrupt)
    report = _gate(dataset)
    assert sorted(_checks(report)) == ["nulls", "unknown_keys"]
    unknown = next(b for b in report.breaches if b.check == "unknown_keys")
    assert (
        unknown.detail == "1 row(s) name a drink_id missing from drinks.parquet (dimension drinks)"
    )


def test_gate_accepted_breach_is_reported_and_does_not_stop(dataset: Path) -> None:
    _break_newest_week(dataset, lambda t: t.filter(pc.not_equal(t["store_id"], 3)))
    report = _gate(dataset, accept="groups_vanished")
    assert report.passed and [b.accepted for b in report.breaches] == [True]
    assert "1 accepted: groups_vanished" in report.verdict()
    assert "| groups_vanished |" in report.markdown()


def test_gate_thresholds_are_parameters(dataset: Path) -> None:
    _break_newest_week(dataset, lambda t: pa.concat_tables([t, t.slice(0, t.num_rows // 5)]))
    assert _gate(dataset, thresholds={"max_duplicate_share": 0.5}).passed


def test_gate_refuses_unknown_thresholds_and_checks_naming_the_known_ones() -> None:
    with pytest.raises(DataGateInputError, match=r"no key 'min_rows'; known keys: min_row_ratio"):
        thresholds_from({"min_rows": 3})
    with pytest.raises(DataGateInputError, match=r"expected a finite number >= 0"):
        thresholds_from({"min_row_ratio": -1})
    with pytest.raises(DataGateInputError, match=r"expected a whole number"):
        thresholds_from({"max_vanished_groups": 1.5})
    assert thresholds_from({"max_vanished_groups": 2.0}).max_vanished_groups == 2
    assert thresholds_from({}) == GateThresholds()
    with pytest.raises(DataGateInputError, match=r"unknown check\(s\) row; known checks: schema"):
        parse_accept("row, groups_vanished")
    assert parse_accept(" rows , mix_shift ") == {"rows", "mix_shift"} <= set(CHECKS)


def test_gate_window_digest_follows_the_window_files_in_place_and_not_after(
    dataset: Path,
) -> None:
    first = _gate(dataset).window_digest
    assert first.startswith("sha256:") and _gate(dataset).window_digest == first
    # A later period is outside the window: the digest (the data steps' key) stays.
    shutil.copy(dataset / week_file(WEEKS - 1), dataset / week_file(WEEKS))
    later = dataset / week_file(WEEKS)
    table = pq.read_table(later)
    column = table.column("timestamp")
    shifted = pc.add(column, pa.scalar(dt.timedelta(days=7))).cast(column.type)
    pq.write_table(
        table.set_column(table.schema.get_field_index("timestamp"), "timestamp", shifted), later
    )
    assert _gate(dataset).window_digest == first
    # The newest period rewritten in place, under the same name: another key.
    _break_newest_week(dataset, lambda table: table.slice(0, table.num_rows - 1))
    assert _gate(dataset).window_digest != first


def test_gate_without_files_names_the_folder_it_read(dataset: Path) -> None:
    for path in (dataset / week_file(0)).parent.glob("*.parquet"):
        path.unlink()
    with pytest.raises(FileNotFoundError) as missing:
        _gate(dataset)
    folder = (dataset / week_file(0)).parent
    assert f"holds no .parquet files (read at {folder})" in str(missing.value)

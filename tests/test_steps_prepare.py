"""prepare_dataset's step: the dataset declaration is checked, the split is written.

The data comes from the drink shops' generator (``trainer.data``); the step itself reads it
only through the example's declaration, and the example's trainer reads the manifest it
writes.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.examples import DRINK_SHOPS, dataset_declaration
from trainer.data import generate, week_file
from trainer.split import load_manifest, part_weeks, plan_time_split
from trainer.world import START_DATE, WorldConfig
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.steps.prepare import DataWindowError, SchemaMismatchError, prepare

DECLARATION = dataset_declaration(DRINK_SHOPS)
CONTRACT_KEYS = (
    "format", "data_uri", "period", "train", "selection", "gate", "dimensions", "sha256",
    "content_hash",
)  # fmt: skip
"""The manifest keys both writers (the library's step and the trainer's split) define."""


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    generate(WorldConfig(members=200, stores=10, weeks=5, seed=1), tmp_path / "data")
    return tmp_path / "data"


def _prepare(
    dataset: Path, out: Path, gate_weeks: int = 1, as_of: str = "", selection_weeks: int = 1
) -> dict:
    return prepare(
        backend="local",
        data_uri=str(dataset),
        dataset_declaration=DECLARATION,
        output_dir=str(out),
        selection_periods=selection_weeks,
        gate_periods=gate_weeks,
        as_of=as_of,
    ).manifest


def _rewrite(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


def test_prepare_local_writes_the_manifest_the_reference_trainer_reads(
    dataset: Path, tmp_path: Path
) -> None:
    manifest = _prepare(dataset, tmp_path / "split", gate_weeks=2)
    assert part_weeks(manifest, "train") == [0, 1]
    assert part_weeks(manifest, "selection") == [2]
    assert part_weeks(manifest, "gate") == [3, 4]
    assert manifest["train"]["periods"][0] == START_DATE.isoformat()
    assert manifest["gate"]["files"] == [week_file(3), week_file(4)]
    assert load_manifest(str(tmp_path / "split")) == manifest
    # The trainer's own split of the same folder agrees on every key the contract defines;
    # each writer adds keys of its own (readers ignore keys they do not know).
    trainers = plan_time_split(str(dataset), selection_weeks=1, gate_weeks=2)
    assert {key: trainers[key] for key in CONTRACT_KEYS} == {
        key: manifest[key] for key in CONTRACT_KEYS
    }


def test_prepare_local_maps_gs_uris_under_the_local_root(
    dataset: Path, root: Path, tmp_path: Path
) -> None:
    target = to_local_path("gs://bucket/data")
    target.parent.mkdir(parents=True)
    dataset.rename(target)
    prepared = prepare(
        backend="local",
        data_uri="gs://bucket/data",
        dataset_declaration=DECLARATION,
        output_dir=str(tmp_path / "out"),
    )
    assert prepared.manifest["data_uri"] == "gs://bucket/data"
    assert prepared.summary()["gate_periods"] == [(START_DATE + dt.timedelta(days=28)).isoformat()]
    assert prepared.summary()["selection_periods"] == [
        (START_DATE + dt.timedelta(days=21)).isoformat()
    ]
    assert prepared.train_rows + prepared.selection_rows + prepared.gate_rows == sum(
        pq.ParquetFile(path).metadata.num_rows
        for path in (to_local_path("gs://bucket/data") / "transactions").glob("*.parquet")
    )


def test_prepare_refuses_a_mistyped_column_naming_found_and_expected_types(
    dataset: Path, tmp_path: Path
) -> None:
    path = dataset / week_file(2)
    table = pq.read_table(path)
    index = table.schema.get_field_index("member_id")
    _rewrite(path, table.set_column(index, "member_id", table["member_id"].cast(pa.int64())))
    with pytest.raises(SchemaMismatchError) as error:
        _prepare(dataset, tmp_path / "split")
    message = str(error.value)
    assert "week-0002.parquet" in message
    assert "column 'member_id' has type int64; the table declares int32" in message
    assert not (tmp_path / "split").exists()


def test_prepare_refuses_a_missing_column_and_lists_what_was_found(
    dataset: Path, tmp_path: Path
) -> None:
    path = dataset / "stores.parquet"
    _rewrite(path, pq.read_table(path).drop_columns(["region_id"]))
    with pytest.raises(SchemaMismatchError, match=r"stores\.parquet") as error:
        _prepare(dataset, tmp_path / "split")
    assert "column 'region_id' is missing; dimension 'stores' declares it with type int8" in str(
        error.value
    )


def test_prepare_refuses_a_file_of_several_weeks(dataset: Path, tmp_path: Path) -> None:
    merged = pa.concat_tables([pq.read_table(dataset / week_file(w)) for w in (0, 1)])
    _rewrite(dataset / week_file(0), merged)
    with pytest.raises(ValueError, match=r"week-0000\.parquet holds rows of the weeks starting"):
        _prepare(dataset, tmp_path / "split")


def test_prepare_refuses_nulls_in_a_key_column(dataset: Path, tmp_path: Path) -> None:
    path = dataset / week_file(1)
    table = pq.read_table(path)
    index = table.schema.get_field_index("drink_id")
    values = table["drink_id"].to_pylist()
    values[0] = None
    _rewrite(path, table.set_column(index, "drink_id", pa.array(values, pa.int32())))
    with pytest.raises(ValueError, match="key column 'drink_id' holds 1 null"):
        _prepare(dataset, tmp_path / "split")


def test_prepare_refuses_missing_parts_and_impossible_splits(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "split"
    with pytest.raises(ValueError, match=r"must leave a training period of the 5 period\(s\)"):
        _prepare(dataset, out, gate_weeks=4)
    with pytest.raises(ValueError, match="gate_periods must be at least 1"):
        _prepare(dataset, out, gate_weeks=0)
    with pytest.raises(ValueError, match="selection_periods must be 0 or more"):
        _prepare(dataset, out, selection_weeks=-1)
    with pytest.raises(FileNotFoundError, match="no dataset folder"):
        _prepare(tmp_path / "nowhere", out)
    (dataset / "drinks.parquet").unlink()
    with pytest.raises(FileNotFoundError, match=r"drinks\.parquet is missing"):
        _prepare(dataset, out)
    for path in (dataset / "transactions").glob("*.parquet"):
        path.unlink()
    with pytest.raises(FileNotFoundError, match=r"transactions/ holds no \.parquet files"):
        _prepare(dataset, out)
    assert not out.exists()


def test_prepare_extra_columns_are_allowed_and_the_hash_tracks_content(
    dataset: Path, tmp_path: Path
) -> None:
    before = _prepare(dataset, tmp_path / "a")
    path = dataset / week_file(0)
    table = pq.read_table(path)
    _rewrite(path, table.append_column("channel", pa.array(["app"] * table.num_rows)))
    after = _prepare(dataset, tmp_path / "b")
    assert after["content_hash"] != before["content_hash"]
    assert after["train"]["rows"] == before["train"]["rows"]
    assert json.loads((tmp_path / "b" / "manifest.json").read_text()) == after


def test_prepare_point_in_time_no_row_at_or_after_as_of_reaches_the_split(
    dataset: Path, tmp_path: Path
) -> None:
    # Wednesday of week 3: week 3 is in progress, week 4 is after the cut.
    as_of = START_DATE + dt.timedelta(days=7 * 3 + 2)
    manifest = _prepare(dataset, tmp_path / "split", gate_weeks=1, as_of=as_of.isoformat())
    assert part_weeks(manifest, "train") == [0]
    assert part_weeks(manifest, "selection") == [1] and part_weeks(manifest, "gate") == [2]
    cut = dt.datetime.combine(as_of, dt.time())
    used = [*manifest["train"]["files"], *manifest["selection"]["files"]]
    used += manifest["gate"]["files"]
    newest = max(
        pc.max(pq.read_table(dataset / rel, columns=["timestamp"])["timestamp"]).as_py()
        for rel in used
    )
    assert newest < cut
    window = manifest["window"]
    assert window["as_of"] == as_of.isoformat()
    assert window["left_out"]["in_progress"] == [week_file(3)]
    assert window["left_out"]["after_as_of"] == [week_file(4)]
    assert window["labels"] == {
        "data_as_of": as_of.isoformat(),
        "data_from": "2023-01-02",
        "data_gate_from": (START_DATE + dt.timedelta(days=14)).isoformat(),
    }
    assert set(manifest["sha256"]) == set(used) | {"drinks.parquet", "stores.parquet"}


def test_prepare_on_a_week_boundary_keeps_the_week_that_just_ended(
    dataset: Path, tmp_path: Path
) -> None:
    as_of = (START_DATE + dt.timedelta(days=7 * 4)).isoformat()
    manifest = _prepare(dataset, tmp_path / "split", gate_weeks=2, as_of=as_of)
    assert part_weeks(manifest, "gate") == [2, 3]
    assert manifest["window"]["left_out"]["after_as_of"] == [week_file(4)]


@pytest.mark.parametrize(
    ("as_of", "message"),
    [
        (
            "2022-12-01",
            r"as_of 2022-12-01 is before the data starts \(first row 2023-01-02",
        ),
        ("2023-01-04", r"leaves no complete week"),
        ("2999-01-01", r"as_of 2999-01-01 is in the future"),
        ("01/02/2023", r"as_of must be a date YYYY-MM-DD"),
    ],
)
def test_prepare_refuses_a_bad_as_of_in_one_line(
    dataset: Path, tmp_path: Path, as_of: str, message: str
) -> None:
    with pytest.raises(DataWindowError, match=message) as error:
        _prepare(dataset, tmp_path / "split", as_of=as_of)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "split").exists()


@pytest.mark.parametrize("selection_weeks", [0, 1, 2])
def test_prepare_training_dataset_withholds_the_gate_period(
    dataset: Path, tmp_path: Path, selection_weeks: int
) -> None:
    prepared = prepare(
        backend="local",
        data_uri=str(dataset),
        dataset_declaration=DECLARATION,
        output_dir=str(tmp_path / "all"),
        training_output_dir=str(tmp_path / "training"),
        selection_periods=selection_weeks,
        gate_periods=1,
    )
    full = prepared.manifest
    training = json.loads((tmp_path / "training" / "manifest.json").read_text())
    assert part_weeks(full, "gate") == [4]
    assert part_weeks(full, "selection") == list(range(4 - selection_weeks, 4))
    assert "gate" not in training and training["withheld"] == {"gate": full["gate"]["periods"]}
    assert training["train"] == full["train"] and training["selection"] == full["selection"]
    # Nothing of the gate period is named anywhere in what a training job reads.
    assert week_file(4) not in json.dumps(training)
    assert set(training["sha256"]) == set(full["sha256"]) - {week_file(4)}
    assert training["content_hash"] != full["content_hash"]
    summary = prepared.training_summary()
    assert summary["gate_withheld"] == full["gate"]["periods"] and summary["gate_rows"] == 0
    assert summary["content_hash"] == training["content_hash"]

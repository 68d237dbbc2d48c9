"""Time-based split and dataset manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.data import generate, week_file
from trainer.features import read_columns
from trainer.split import (
    load_manifest,
    main,
    make_time_split,
    manifest_part,
    part_weeks,
    plan_time_split,
)
from trainer.world import WorldConfig


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    generate(WorldConfig(members=200, stores=10, weeks=5, seed=1), tmp_path / "data")
    return tmp_path / "data"


def test_make_time_split_holds_out_a_selection_and_a_gate_week(
    dataset: Path, tmp_path: Path
) -> None:
    manifest = make_time_split(str(dataset), str(tmp_path / "split"))
    assert part_weeks(manifest, "train") == [0, 1, 2]
    assert part_weeks(manifest, "selection") == [3]
    assert part_weeks(manifest, "gate") == [4]
    assert manifest["gate"]["files"] == [week_file(4)]
    info = json.loads((dataset / "generation.json").read_text())
    assert manifest["train"]["rows"] == sum(w["rows"] for w in info["weeks"][:3])
    assert manifest["gate"]["rows"] == info["weeks"][4]["rows"]
    assert manifest["seed"] == 1 and "member_id" in manifest["schema"]
    assert json.loads((tmp_path / "split" / "manifest.json").read_text()) == manifest
    assert load_manifest(str(tmp_path / "split")) == manifest


def test_make_time_split_several_selection_and_gate_weeks(dataset: Path, tmp_path: Path) -> None:
    manifest = make_time_split(str(dataset), str(tmp_path / "split"), gate_weeks=2)
    assert part_weeks(manifest, "train") == [0, 1]
    assert part_weeks(manifest, "selection") == [2]
    assert part_weeks(manifest, "gate") == [3, 4]
    wider = make_time_split(str(dataset), str(tmp_path / "split"), selection_weeks=2)
    assert part_weeks(wider, "train") == [0, 1] and part_weeks(wider, "selection") == [2, 3]


def test_plan_time_split_content_hash_tracks_file_content(dataset: Path) -> None:
    before = plan_time_split(str(dataset))
    assert plan_time_split(str(dataset))["content_hash"] == before["content_hash"]
    path = dataset / week_file(2)
    path.write_bytes(path.read_bytes() + b"x")
    assert plan_time_split(str(dataset))["content_hash"] != before["content_hash"]


def test_make_time_split_rejects_bad_input_and_writes_nothing(
    dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "split"
    with pytest.raises(ValueError, match="leave at least one training week of the 5 weeks"):
        make_time_split(str(dataset), str(out), selection_weeks=2, gate_weeks=3)
    with pytest.raises(ValueError, match=r"gate_weeks \(0\) must each be >= 1"):
        make_time_split(str(dataset), str(out), gate_weeks=0)
    with pytest.raises(ValueError, match=r"selection_weeks \(0\) and gate_weeks"):
        make_time_split(str(dataset), str(out), selection_weeks=0)
    with pytest.raises(FileNotFoundError, match=r"generation\.json"):
        make_time_split(str(tmp_path / "nowhere"), str(out))
    (dataset / week_file(3)).unlink()
    with pytest.raises(FileNotFoundError, match="week-0003"):
        make_time_split(str(dataset), str(out))
    assert not out.exists()


def test_make_time_split_resolves_gs_uris(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fuse = tmp_path / "fuse"
    (fuse / "bucket").mkdir(parents=True)
    dataset.rename(fuse / "bucket" / "data")
    monkeypatch.setenv("GCS_FUSE_ROOT", str(fuse))
    manifest = make_time_split("gs://bucket/data", "gs://bucket/split")
    assert manifest["data_uri"] == "gs://bucket/data"
    assert (fuse / "bucket" / "split" / "manifest.json").is_file()


def test_split_cli_reports_errors(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--data", str(dataset), "--out", str(tmp_path / "s")]) == 0
    assert "selection weeks [3]" in capsys.readouterr().out
    assert main(["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "s2")]) == 2
    assert "generation.json" in capsys.readouterr().err


def test_load_manifest_rejects_foreign_json(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="vertex-retrain-dataset-manifest/v2"):
        load_manifest(str(tmp_path / "manifest.json"))
    with pytest.raises(FileNotFoundError, match="no dataset"):
        load_manifest(str(tmp_path / "absent.json"))


def test_manifest_part_says_a_training_dataset_withholds_its_gate(dataset: Path) -> None:
    manifest = plan_time_split(str(dataset))
    assert manifest_part(manifest, "gate") == manifest["gate"]
    training = {k: v for k, v in manifest.items() if k != "gate"} | {"withheld": {"gate": []}}
    with pytest.raises(ValueError, match="withholds its gate period"):
        manifest_part(training, "gate")
    with pytest.raises(ValueError, match="withholds its gate period"):
        read_columns(training, "gate")  # what training reads rows through
    assert len(read_columns(training, "selection")["member_id"]) == manifest["selection"]["rows"]
    with pytest.raises(ValueError, match="no 'selection' part"):
        manifest_part({"train": {}}, "selection")

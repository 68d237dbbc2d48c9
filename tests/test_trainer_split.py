"""Time-based split and dataset manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.data import generate, week_file
from trainer.split import load_manifest, main, make_time_split, part_weeks, plan_time_split
from trainer.world import WorldConfig


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    generate(WorldConfig(members=200, stores=10, weeks=5, seed=1), tmp_path / "data")
    return tmp_path / "data"


def test_make_time_split_holds_out_the_last_week(dataset: Path, tmp_path: Path) -> None:
    manifest = make_time_split(str(dataset), str(tmp_path / "split"))
    assert part_weeks(manifest, "train") == [0, 1, 2, 3]
    assert part_weeks(manifest, "validation") == [4]
    assert manifest["validation"]["files"] == [week_file(4)]
    info = json.loads((dataset / "generation.json").read_text())
    assert manifest["train"]["rows"] == sum(w["rows"] for w in info["weeks"][:4])
    assert manifest["validation"]["rows"] == info["weeks"][4]["rows"]
    assert manifest["seed"] == 1 and "member_id" in manifest["schema"]
    assert json.loads((tmp_path / "split" / "manifest.json").read_text()) == manifest
    assert load_manifest(str(tmp_path / "split")) == manifest


def test_make_time_split_several_validation_weeks(dataset: Path, tmp_path: Path) -> None:
    manifest = make_time_split(str(dataset), str(tmp_path / "split"), validation_weeks=2)
    assert part_weeks(manifest, "train") == [0, 1, 2]
    assert part_weeks(manifest, "validation") == [3, 4]


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
    with pytest.raises(ValueError, match="validation_weeks must be between 1 and 4"):
        make_time_split(str(dataset), str(out), validation_weeks=5)
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
    assert "validation weeks [4]" in capsys.readouterr().out
    assert main(["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "s2")]) == 2
    assert "generation.json" in capsys.readouterr().err


def test_load_manifest_rejects_foreign_json(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="vertex-retrain-dataset-manifest/v1"):
        load_manifest(str(tmp_path / "manifest.json"))
    with pytest.raises(FileNotFoundError, match="no dataset"):
        load_manifest(str(tmp_path / "absent.json"))

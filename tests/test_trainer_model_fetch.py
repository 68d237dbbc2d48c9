"""The prediction server finds its model: in place through a mount, or downloaded from gs://."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from trainer.model_fetch import local_model_dir


@dataclass
class _Blob:
    name: str
    source: Path

    def download_to_filename(self, filename: str) -> None:
        shutil.copyfile(self.source, filename)


class _FakeStorage:
    """Serves objects from a local folder standing for a bucket, as storage.Client does."""

    def __init__(self, bucket_dir: Path, extra: list[_Blob] | None = None) -> None:
        self.bucket_dir, self.extra, self.listed = bucket_dir, extra or [], []

    def list_blobs(self, bucket: str, prefix: str) -> list[_Blob]:
        self.listed.append((bucket, prefix))
        found = [
            _Blob(str(p.relative_to(self.bucket_dir)), p)
            for p in sorted(self.bucket_dir.rglob("*"))
            if p.is_file() and str(p.relative_to(self.bucket_dir)).startswith(prefix)
        ]
        return found + self.extra


def _model(folder: Path) -> Path:
    (folder / "sub").mkdir(parents=True)
    (folder / "artifact.json").write_text("{}")
    (folder / "weights.pt").write_bytes(b"\x00\x01")
    (folder / "sub" / "vocab.json").write_text("[]")
    return folder


def test_local_model_dir_uses_reachable_folder_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _model(tmp_path / "fuse" / "bucket" / "models" / "v1")
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path / "fuse"))
    storage = _FakeStorage(tmp_path)
    found = local_model_dir("gs://bucket/models/v1", storage_client=storage)
    assert found == tmp_path / "fuse" / "bucket" / "models" / "v1"
    assert storage.listed == []


def test_local_model_dir_downloads_when_no_mount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path / "no-mount"))
    bucket = tmp_path / "bucket"
    _model(bucket / "models" / "v1")
    _model(bucket / "models" / "v10")  # a sibling sharing the prefix "v1" is not copied
    storage = _FakeStorage(bucket)
    found = local_model_dir(
        "gs://bucket/models/v1", storage_client=storage, cache_dir=tmp_path / "cache"
    )
    assert storage.listed == [("bucket", "models/v1/")]
    copied = sorted(str(p.relative_to(found)) for p in found.rglob("*") if p.is_file())
    assert copied == ["artifact.json", "sub/vocab.json", "weights.pt"]
    assert (found / "weights.pt").read_bytes() == b"\x00\x01"


def test_local_model_dir_empty_prefix_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path / "no-mount"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    with pytest.raises(FileNotFoundError, match="no objects under gs://bucket/nothing"):
        local_model_dir("gs://bucket/nothing", storage_client=_FakeStorage(tmp_path / "empty"))
    assert list((tmp_path / "temp").iterdir()) == []  # the folder it made for the copy is gone


def test_local_model_dir_removes_its_folder_when_a_copy_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path / "no-mount"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    evil = tmp_path / "evil.txt"
    evil.write_text("x")
    storage = _FakeStorage(tmp_path / "empty", extra=[_Blob("m/../../escape.txt", evil)])
    with pytest.raises(ValueError, match="would leave"):
        local_model_dir("gs://bucket/m", storage_client=storage)
    assert list((tmp_path / "temp").iterdir()) == []


def test_local_model_dir_refuses_objects_escaping_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path / "no-mount"))
    evil = tmp_path / "evil.txt"
    evil.write_text("x")
    storage = _FakeStorage(tmp_path / "empty", extra=[_Blob("m/../../escape.txt", evil)])
    with pytest.raises(ValueError, match="would leave"):
        local_model_dir("gs://bucket/m", storage_client=storage, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "escape.txt").exists()

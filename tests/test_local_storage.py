"""The local storage root: URI mapping, traversal refusal, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.storage import (
    StorageError,
    local_root,
    read_json,
    to_gcs_uri,
    to_local_path,
)


def test_local_root_created_from_environment(root: Path, tmp_path: Path) -> None:
    assert root == (tmp_path / "root").resolve()
    assert root.is_dir()


def test_local_root_defaults_to_dot_local_vertex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERTEX_LOCAL_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert local_root() == (tmp_path / ".local-vertex").resolve()


def test_to_local_path_maps_gs_and_fuse_uris_to_one_place(root: Path) -> None:
    expected = root / "gcs" / "bucket" / "data" / "train.parquet"
    assert to_local_path("gs://bucket/data/train.parquet") == expected
    assert to_local_path("/gcs/bucket/data/train.parquet") == expected


def test_to_local_path_passes_plain_paths_through(root: Path, tmp_path: Path) -> None:
    assert to_local_path(tmp_path / "x" / ".." / "y") == (tmp_path / "y").resolve()


@pytest.mark.parametrize(
    "uri", ["gs://b/../../etc/passwd", "gs://b/x/../../../outside", "/gcs/b/../../..", "gs://.."]
)
def test_to_local_path_refuses_traversal(root: Path, uri: str) -> None:
    with pytest.raises(StorageError, match=r"outside the local storage root|names no bucket"):
        to_local_path(uri)


def test_to_local_path_refuses_symlink_escaping_root(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    bucket = root / "gcs" / "bucket"
    bucket.mkdir(parents=True)
    os.symlink(outside, bucket / "link")
    with pytest.raises(StorageError, match="outside the local storage root"):
        to_local_path("gs://bucket/link/file.txt")


@pytest.mark.parametrize("uri", ["gs://", "gs:///path", "s3://bucket/key"])
def test_to_local_path_refuses_malformed_uris(root: Path, uri: str) -> None:
    with pytest.raises(StorageError):
        to_local_path(uri)


def test_to_gcs_uri_reverses_to_local_path(root: Path) -> None:
    path = to_local_path("gs://bucket/a/b.txt")
    assert to_gcs_uri(path) == "gs://bucket/a/b.txt"


def test_to_gcs_uri_refuses_paths_outside_root(root: Path, tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="not under the local storage root"):
        to_gcs_uri(tmp_path / "elsewhere")


def test_atomic_write_json_replaces_whole_file_and_leaves_no_temp(root: Path) -> None:
    target = root / "state" / "x.json"
    atomic_write_json(target, {"a": 1})
    atomic_write_json(target, {"a": 2})
    assert read_json(target) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]
    assert read_json(root / "missing.json", default={}) == {}

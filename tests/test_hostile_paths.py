"""Hostile paths and files: URIs that leave the storage root, model files that run code on
load, build-context archives that write outside the context.

Covered elsewhere and not repeated here: `gs://b/../../etc/passwd`-style traversal and one
symlink out of a bucket (test_local_storage.py), archive members named `../x` or `/etc/x`
(test_local_build.py), a checkpoint holding an arbitrary class (test_trainer_checkpoint.py).
"""

from __future__ import annotations

import builtins
import io
import json
import os
import pickle
import tarfile
from pathlib import Path
from typing import Any

import pytest
import torch
from data.hostile.support import write_tiny_artifact

from trainer.checkpoint import CheckpointManager
from trainer.export import load_artifact
from trainer.paths import resolve, sha256_file
from trainer.serve import main as serve_main
from vertex_retrain.backends.local.environments.build_index import index_path
from vertex_retrain.backends.local.environments.builder import (
    build_container_image,
    build_python_package,
)
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.storage import StorageError, to_local_path
from vertex_retrain.build.context import BuildError

IMAGE = "us-docker.pkg.dev/p/r/trainer:v1"


# ---- URIs and symlinks that leave the storage root ----


@pytest.mark.parametrize(
    "uri",
    [
        "gs://b//etc/passwd",  # an absolute segment replaces everything before it
        "/gcs/b//etc",
        "gs://b/x/./../../..",
        "gs://b/a\0/../../../etc",  # NUL: refused before the OS sees it
        "/gcs/b/\0",
    ],
)
def test_to_local_path_refuses_absolute_segments_and_nul(root: Path, uri: str) -> None:
    with pytest.raises(StorageError, match=r"outside the local storage root|NUL character"):
        to_local_path(uri)


def test_to_local_path_refuses_a_bucket_that_is_a_symlink_chain_out(
    root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "gcs").mkdir()
    os.symlink(outside, tmp_path / "hop")
    os.symlink(tmp_path / "hop", root / "gcs" / "evil")  # bucket -> hop -> outside
    for uri in ("gs://evil/x", "gs://evil", "/gcs/evil/a/b"):
        with pytest.raises(StorageError, match="outside the local storage root"):
            to_local_path(uri)


@pytest.mark.parametrize(
    "uri",
    [
        "/gcs/../etc/passwd",
        "gs:///etc/passwd",
        "gs:////etc/passwd",  # POSIX keeps "//" as a root of its own
        "/gcs///etc/passwd",
        "gs://b/x/../../../etc",
        "/gcs",
    ],
)
def test_trainer_resolve_refuses_uris_that_leave_the_mount(
    uri: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path))
    with pytest.raises(ValueError, match=r"BUCKET/PATH|'\.\.' would leave"):
        resolve(uri)


def test_build_python_package_refuses_destination_outside_root(root: Path, tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    with pytest.raises(StorageError, match="outside the local storage root"):
        build_python_package(package, destination_uri="gs://b/../../../escaped", version="1")
    assert not (tmp_path / "escaped").exists()
    assert not index_path(root).exists()


def test_deploy_refuses_artifact_uri_outside_root_and_starts_nothing(
    root: Path, tmp_path: Path
) -> None:
    from vertex_retrain.backends.local.environments.builder import build_container_image

    context = tmp_path / "image"  # an image the local backend can serve
    context.mkdir()
    (context / "Dockerfile").write_text('FROM python:3.11-slim\nCMD ["python", "-c", "pass"]\n')
    image = "us-docker.pkg.dev/p/r/serve:1"
    build_container_image(context, image_uri=image)
    registry = ModelRegistry()
    registry.upload_version(
        "recs",
        artifact_uri="gs://b/../../../etc",  # the registry records it, as Vertex would
        container_spec={"imageUri": image, "command": ["python", "-c", "pass"]},
        sample_instances=[1],
    )
    endpoints = LocalEndpoints()
    endpoints.get_or_create("ep")
    with pytest.raises(StorageError, match="outside the local storage root"):
        endpoints.deploy("ep", "recs", "1")
    endpoint = endpoints.get("ep")
    assert not endpoint.deployed_models and not endpoint.traffic_split


# ---- model files that would run code when unpickled ----


class _Payload:
    """Unpickling this calls `exec`, which creates the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (builtins.exec, (f"open({str(self.marker)!r}, 'w').close()",))


def _malicious_bytes(marker: Path, *, via_torch: bool) -> bytes:
    buffer = io.BytesIO()
    if via_torch:
        torch.save({"weights": torch.zeros(2), "payload": _Payload(marker)}, buffer)
    else:
        pickle.dump({"payload": _Payload(marker)}, buffer, protocol=2)  # torch.load's protocol
    return buffer.getvalue()


def _plant_weights(model_dir: Path, data: bytes) -> None:
    """Replace weights.pt and update artifact.json so the hashes still verify."""
    (model_dir / "weights.pt").write_bytes(data)
    index_file = model_dir / "artifact.json"
    index = json.loads(index_file.read_text())
    index["sha256"]["weights.pt"] = sha256_file(model_dir / "weights.pt")
    index_file.write_text(json.dumps(index))


def test_payload_runs_code_when_loaded_unsafely(tmp_path: Path) -> None:
    # Proves the payload used below is live: only safe loading keeps the marker away.
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pt"
    path.write_bytes(_malicious_bytes(marker, via_torch=True))
    torch.load(path, weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("via_torch", [True, False], ids=["torch-save", "raw-pickle"])
def test_load_artifact_refuses_weights_that_run_code(tmp_path: Path, via_torch: bool) -> None:
    marker = tmp_path / "marker"
    model_dir = write_tiny_artifact(tmp_path / "model")
    _plant_weights(model_dir, _malicious_bytes(marker, via_torch=via_torch))
    with pytest.raises(ValueError, match=r"refused to load; it holds more than tensors.*exec"):
        load_artifact(model_dir)
    assert not marker.exists()


def test_prediction_server_cli_refuses_weights_that_run_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "marker"
    model_dir = write_tiny_artifact(tmp_path / "model")
    _plant_weights(model_dir, _malicious_bytes(marker, via_torch=True))
    assert serve_main(["--model_dir", str(model_dir), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "error: cannot load the model" in err and "never load it with weights_only=False" in err
    assert not marker.exists()


def test_checkpoint_that_runs_code_is_refused_and_older_one_used(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    manager = CheckpointManager(tmp_path / "ckpt")
    manager.save(1, {"w": torch.ones(2)})
    evil = manager.path(2)
    evil.write_bytes(_malicious_bytes(marker, via_torch=True))
    evil.with_name(evil.name + ".sha256").write_text(sha256_file(evil) + "\n")
    with pytest.raises(Exception, match=r"(?i)weights only load failed"):
        manager.load(2)
    step, state = manager.load_latest() or (None, {})
    assert step == 1 and torch.equal(state["w"], torch.ones(2))
    assert not marker.exists()


# ---- build-context archives ----


def _archive(path: Path, *members: tarfile.TarInfo) -> Path:
    dockerfile = b'FROM python:3.11\nENTRYPOINT ["python"]\n'
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        for member in members:
            content = b"owned\n" if member.isfile() else b""
            member.size = len(content)
            tar.addfile(member, io.BytesIO(content) if content else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


@pytest.mark.parametrize(
    "members",
    [
        [_member("etc", tarfile.SYMTYPE, "/etc")],
        [_member("up", tarfile.SYMTYPE, "../../.."), _member("up/escaped.txt")],
        [_member("passwd", tarfile.LNKTYPE, "/etc/passwd")],
        [_member("null", tarfile.CHRTYPE)],
        [_member("pipe", tarfile.FIFOTYPE)],
        [_member("ok.txt"), _member("sub/../../escaped.txt")],
    ],
    ids=["abs-symlink", "symlink-then-write", "abs-hardlink", "device", "fifo", "late-dotdot"],
)
def test_build_refuses_archive_with_links_out_or_special_files(
    root: Path, tmp_path: Path, members: list[tarfile.TarInfo]
) -> None:
    archive = _archive(tmp_path / "ctx.tar.gz", *members)
    with pytest.raises(BuildError, match=r"outside the context|unsafe"):
        build_container_image(archive, image_uri=IMAGE)
    contexts = root / "builds" / "contexts"
    assert not contexts.exists() or list(contexts.iterdir()) == []  # no partial extraction
    assert not (tmp_path / "escaped.txt").exists() and not (root / "escaped.txt").exists()
    assert not index_path(root).exists()


@pytest.mark.parametrize("dockerfile", ["../Dockerfile", "/etc/hostname", "sub/../../x"])
def test_build_refuses_dockerfile_outside_the_context(
    root: Path, tmp_path: Path, dockerfile: str
) -> None:
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text('FROM python:3.11\nENTRYPOINT ["python"]\n')
    (tmp_path / "Dockerfile").write_text('FROM python:3.11\nENTRYPOINT ["python"]\n')
    with pytest.raises(BuildError, match="inside the build context"):
        build_container_image(context, image_uri=IMAGE, dockerfile=dockerfile)
    assert not index_path(root).exists()

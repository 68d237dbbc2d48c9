"""Cloud Build and package upload against in-memory clients (no Google calls)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.vertex_build import FakeCloudBuildClient, FakeStorageClient
from vertex_retrain.backends.vertex.cloud_build import (
    BuiltImage,
    CloudBuildError,
    build_image_with_cloud_build,
    upload_python_package,
)
from vertex_retrain.build.context import context_digest, context_files

IMAGE = "europe-west4-docker.pkg.dev/proj/repo/trainer"


def _context(tmp_path: Path) -> Path:
    context = tmp_path / "ctx"
    (context / "trainer").mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY trainer /app/trainer\n")
    (context / "trainer" / "task.py").write_text("print('train')\n")
    (context / "notes.log").write_text("ignored\n")
    (context / ".dockerignore").write_text("*.log\n")
    return context


def _build(
    context: Path, builds: FakeCloudBuildClient, storage: FakeStorageClient, **kw: Any
) -> BuiltImage:
    return build_image_with_cloud_build(
        context,
        project="proj",
        location="europe-west4",
        image=IMAGE,
        staging_uri="gs://staging/builds",
        build_client=builds,
        storage_client=storage,
        **kw,
    )


def test_cloud_build_builds_pushes_and_pins_by_digest(tmp_path: Path) -> None:
    context = _context(tmp_path)
    builds, storage = FakeCloudBuildClient(), FakeStorageClient()
    result = _build(context, builds, storage)
    files = context_files(context)
    digest = context_digest(context, files, (context / "Dockerfile").read_text().encode())
    assert result.context_digest == digest and not result.skipped
    assert result.image_uri.startswith(f"{IMAGE}@sha256:")
    (build,) = builds.builds
    assert list(build.images) == [f"{IMAGE}:ctx-{digest}"]
    assert list(build.steps[0].args)[:3] == ["build", "-t", f"{IMAGE}:ctx-{digest}"]
    source = f"gs://staging/builds/cloud-build/{digest}.tar.gz"
    assert build.source.storage_source.object_ == f"builds/cloud-build/{digest}.tar.gz"
    with tarfile.open(fileobj=io.BytesIO(storage.objects[source])) as tar:
        assert sorted(tar.getnames()) == [".dockerignore", "Dockerfile", "trainer/task.py"]


def test_cloud_build_unchanged_context_skips_the_build(tmp_path: Path) -> None:
    context = _context(tmp_path)
    builds, storage = FakeCloudBuildClient(), FakeStorageClient()
    first = _build(context, builds, storage)
    (context / "notes.log").write_text("changed, but ignored by .dockerignore\n")
    second = _build(context, builds, storage)
    assert second.skipped and second.image_uri == first.image_uri
    assert len(builds.builds) == 1
    (context / "trainer" / "task.py").write_text("print('train v2')\n")
    third = _build(context, builds, storage)
    assert not third.skipped and third.context_digest != first.context_digest
    assert len(builds.builds) == 2


def test_cloud_build_tarball_is_reproducible(tmp_path: Path) -> None:
    context = _context(tmp_path)
    storage = FakeStorageClient()
    _build(context, FakeCloudBuildClient(), storage)
    first = dict(storage.objects)
    (context / "trainer" / "task.py").touch()  # new mtime, same content
    storage.objects.clear()
    _build(context, FakeCloudBuildClient(), storage, force=True)
    assert storage.objects == first


def test_cloud_build_failure_is_reported(tmp_path: Path) -> None:
    with pytest.raises(CloudBuildError, match="FAILURE"):
        _build(_context(tmp_path), FakeCloudBuildClient(status="FAILURE"), FakeStorageClient())


def test_cloud_build_bad_input_uploads_nothing(tmp_path: Path) -> None:
    context = _context(tmp_path)
    builds, storage = FakeCloudBuildClient(), FakeStorageClient()
    with pytest.raises(ValueError, match="without tag"):
        build_image_with_cloud_build(
            context,
            project="proj",
            location="europe-west4",
            image=f"{IMAGE}:v1",
            staging_uri="gs://staging",
            build_client=builds,
            storage_client=storage,
        )
    with pytest.raises(ValueError, match="no Dockerfile"):
        _build(context, builds, storage, dockerfile="../Dockerfile")
    assert builds.builds == [] and storage.objects == {}


def test_cloud_build_upload_python_package_once_per_content(tmp_path: Path) -> None:
    wheel = tmp_path / "trainer-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel bytes")
    storage = FakeStorageClient()
    first = upload_python_package(
        wheel, project="proj", destination_uri="gs://staging/pkgs/", storage_client=storage
    )
    assert first.uri.startswith("gs://staging/pkgs/") and first.uri.endswith(wheel.name)
    assert storage.objects[first.uri] == b"wheel bytes" and not first.skipped
    again = upload_python_package(
        wheel, project="proj", destination_uri="gs://staging/pkgs", storage_client=storage
    )
    assert again.skipped and again.uri == first.uri
    with pytest.raises(ValueError, match=r"\.whl"):
        upload_python_package(
            tmp_path / "x.txt", project="proj", destination_uri="gs://s", storage_client=storage
        )

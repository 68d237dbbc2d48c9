"""In-memory Cloud Build and Cloud Storage clients for tests (see `tests.fakes.vertex_jobs`)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from tests.fakes.vertex_jobs import FakeOperation, copy_message, request_field


class FakeCloudBuildClient:
    """Cloud Build: builds finish at once with `status`; pushed images get a digest."""

    def __init__(self, status: str = "SUCCESS") -> None:
        self.status = status
        self.builds: list[Any] = []

    def create_build(self, request: Any) -> FakeOperation:
        """CloudBuild.CreateBuild."""
        from google.cloud.devtools import cloudbuild_v1

        build = copy_message(request.build)
        build.id = f"build-{len(self.builds) + 1}"
        build.status = self.status
        if self.status == "SUCCESS":
            build.results = cloudbuild_v1.Results(
                images=[
                    cloudbuild_v1.BuiltImage(
                        name=image, digest="sha256:" + hashlib.sha256(image.encode()).hexdigest()
                    )
                    for image in build.images
                ]
            )
        self.builds.append(build)
        return FakeOperation(copy_message(build))

    def list_builds(self, request: Any) -> list[Any]:
        """CloudBuild.ListBuilds (`tags="T"` and `status="S"` filters)."""
        wanted = dict(re.findall(r'(tags|status)="([^"]*)"', request_field(request, "filter")))
        return [
            copy_message(b)
            for b in self.builds
            if ("tags" not in wanted or wanted["tags"] in b.tags)
            and ("status" not in wanted or b.status.name == wanted["status"])
        ]


class _FakeBlob:
    def __init__(self, store: dict[str, bytes], uri: str) -> None:
        self._store = store
        self._uri = uri

    def exists(self) -> bool:
        return self._uri in self._store

    @property
    def name(self) -> str:
        return self._uri.split("/", 3)[3]

    def delete(self) -> None:
        del self._store[self._uri]

    def upload_from_filename(self, filename: str, if_generation_match: int | None = None) -> None:
        from google.api_core import exceptions as api_exceptions

        if if_generation_match == 0 and self.exists():
            raise api_exceptions.PreconditionFailed(f"{self._uri} exists")
        self._store[self._uri] = Path(filename).read_bytes()


class _FakeBucket:
    def __init__(self, store: dict[str, bytes], name: str) -> None:
        self._store = store
        self._name = name

    def blob(self, name: str) -> _FakeBlob:
        return _FakeBlob(self._store, f"gs://{self._name}/{name}")


class FakeStorageClient:
    """Cloud Storage: `objects` maps gs:// URIs to their bytes."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def bucket(self, name: str) -> _FakeBucket:
        """Returns a bucket handle."""
        return _FakeBucket(self.objects, name)

    def list_blobs(self, bucket: str, prefix: str = "") -> list[_FakeBlob]:
        """Storage.list_blobs."""
        start = f"gs://{bucket}/{prefix}"
        return [
            _FakeBlob(self.objects, uri) for uri in sorted(self.objects) if uri.startswith(start)
        ]

"""Training code packaging for Vertex: container images with Cloud Build, Python packages on GCS.

An image build is skipped when a successful Cloud Build already pushed the image for the same
context digest. The digest is `vertex_retrain.build.context.context_digest` over the files
Docker would send (`.dockerignore` honoured) plus the Dockerfile text, so the local and the
Vertex backend agree on when a context changed.
"""

from __future__ import annotations

import gzip
import re
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.backends.vertex._protos import location_parent
from vertex_retrain.build.context import context_digest
from vertex_retrain.build.dockerfile_lint import check_build_context
from vertex_retrain.build.wheel import content_addressed_name

__all__ = [
    "BuiltImage",
    "CloudBuildError",
    "UploadedPackage",
    "build_image_with_cloud_build",
    "upload_python_package",
]

_DOCKER_BUILDER = "gcr.io/cloud-builders/docker"
_IMAGE = re.compile(r"^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+$")
_PACKAGE_SUFFIXES = (".whl", ".tar.gz", ".zip")


class CloudBuildError(RuntimeError):
    """A Cloud Build build did not succeed."""


@dataclass(frozen=True)
class BuiltImage:
    """An image in Artifact Registry.

    Attributes:
        image_uri: `IMAGE@sha256:...`, pinned by the registry digest Cloud Build reported.
        context_digest: sha256 of the build context (hex).
        skipped: True when an earlier successful build for this digest was reused.
        build_id: The Cloud Build build that pushed the image.
    """

    image_uri: str
    context_digest: str
    skipped: bool
    build_id: str


@dataclass(frozen=True)
class UploadedPackage:
    """A Python package on Cloud Storage, for `pythonPackageSpec.packageUris`.

    Attributes:
        uri: `gs://...` of the package.
        sha256: Content digest (hex); part of the object path, so content never changes.
        skipped: True when the object already existed.
    """

    uri: str
    sha256: str
    skipped: bool


def _split_gs(uri: str, what: str) -> tuple[str, str]:
    if not uri.startswith("gs://") or len(uri) <= len("gs://"):
        raise ValueError(f"{what} must be a gs://BUCKET[/PREFIX] URI, got {uri!r}.")
    bucket, _, prefix = uri[len("gs://") :].partition("/")
    return bucket, prefix.strip("/")


def _object_path(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _default_storage_client(project: str) -> Any:
    import google.cloud.storage

    return google.cloud.storage.Client(project=project)


def _default_build_client() -> Any:
    from google.cloud.devtools import cloudbuild_v1

    return cloudbuild_v1.CloudBuildClient()


def _write_context_tarball(context: Path, files: list[str], target: Path) -> None:
    """Writes the context as a reproducible .tar.gz (fixed order, times and owners)."""
    with (
        target.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for relative in files:
            info = tar.gettarinfo(str(context / relative), arcname=relative)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isfile():
                info.mode = 0o755 if info.mode & 0o111 else 0o644
                with (context / relative).open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)


def _upload_once(storage_client: Any, bucket: str, name: str, source: Path) -> bool:
    """Uploads unless the object exists; returns True when it uploaded."""
    from google.api_core import exceptions as api_exceptions

    blob = storage_client.bucket(bucket).blob(name)
    if blob.exists():
        return False
    try:
        # if_generation_match=0: only create, so a concurrent identical upload is harmless.
        blob.upload_from_filename(str(source), if_generation_match=0)
    except api_exceptions.PreconditionFailed:
        return False
    return True


def _previous_build(client: Any, project: str, parent: str, tag: str, tagged: str) -> Any | None:
    from google.cloud.devtools import cloudbuild_v1

    request = cloudbuild_v1.ListBuildsRequest(
        project_id=project, parent=parent, filter=f'tags="{tag}" AND status="SUCCESS"'
    )
    for build in client.list_builds(request=request):
        if build.status != cloudbuild_v1.Build.Status.SUCCESS or tag not in build.tags:
            continue
        for image in build.results.images:
            if image.name == tagged and image.digest:
                return build, image.digest
    return None


def build_image_with_cloud_build(
    context_dir: str | Path,
    *,
    project: str,
    location: str,
    image: str,
    staging_uri: str,
    dockerfile: str = "Dockerfile",
    gpu: bool = True,
    timeout_s: float = 3600.0,
    force: bool = False,
    build_client: Any = None,
    storage_client: Any = None,
) -> BuiltImage:
    """Builds and pushes an image with Cloud Build, unless this context was built before.

    The context is uploaded as a reproducible tarball to
    `<staging_uri>/cloud-build/<digest>.tar.gz`; the build runs `docker build` and pushes
    `<image>:ctx-<digest>`, which is also the build's tag. A successful build with that tag is
    reused (`force=True` rebuilds, e.g. after the image was deleted from the registry).

    Args:
        context_dir: The build context folder.
        project: Google Cloud project id (where Cloud Build runs).
        location: Cloud Build region (the builds run in `projects/P/locations/L`).
        image: Artifact Registry image without tag or digest, e.g.
            `europe-west4-docker.pkg.dev/PROJECT/REPO/trainer`.
        staging_uri: `gs://BUCKET[/PREFIX]` for the context tarball.
        dockerfile: Dockerfile path relative to the context.
        gpu: Whether the image is meant for GPU machines (the lint then wants a CUDA base).
        timeout_s: Build timeout, also how long to wait for it.
        force: Build even when a build for this digest succeeded before.
        build_client: A `cloudbuild_v1.CloudBuildClient` (or a fake).
        storage_client: A `google.cloud.storage.Client` (or a fake).

    Returns:
        `IMAGE@sha256:...`, the context digest, and whether the build was skipped.

    Raises:
        ValueError: Bad input; nothing is uploaded or built.
        BuildError: No Dockerfile inside the context, or it failed lint (e.g. it copies a
            credential); nothing is uploaded or built.
        CloudBuildError: The build failed or pushed no image.
    """
    from google.cloud.devtools import cloudbuild_v1
    from google.protobuf import duration_pb2

    parent = location_parent(project, location)
    if not _IMAGE.match(image) or "@" in image or ":" in image.rsplit("/", 1)[-1]:
        raise ValueError(
            "image must be a registry path without tag or digest, e.g. "
            f"'europe-west4-docker.pkg.dev/PROJECT/REPO/trainer', got {image!r}."
        )
    bucket, prefix = _split_gs(staging_uri, "staging_uri")
    context = Path(context_dir).resolve()
    # The same lint as the local builder, before anything is uploaded or built.
    checked = check_build_context(context, dockerfile, gpu=gpu)
    files = checked.files
    digest = context_digest(context, files, checked.text.encode())
    tag = f"ctx-{digest}"
    tagged = f"{image}:{tag}"
    client = build_client or _default_build_client()

    if not force:
        found = _previous_build(client, project, parent, tag, tagged)
        if found is not None:
            build, image_digest = found
            return BuiltImage(f"{image}@{image_digest}", digest, True, build.id)

    storage = storage_client or _default_storage_client(project)
    source_name = _object_path(prefix, f"cloud-build/{digest}.tar.gz")
    with tempfile.TemporaryDirectory() as scratch:
        tarball = Path(scratch) / "context.tar.gz"
        _write_context_tarball(context, files, tarball)
        _upload_once(storage, bucket, source_name, tarball)

    build = cloudbuild_v1.Build(
        source=cloudbuild_v1.Source(
            storage_source=cloudbuild_v1.StorageSource(bucket=bucket, object_=source_name)
        ),
        steps=[
            cloudbuild_v1.BuildStep(
                name=_DOCKER_BUILDER, args=["build", "-t", tagged, "-f", dockerfile, "."]
            )
        ],
        images=[tagged],
        tags=[tag],
        timeout=duration_pb2.Duration(seconds=int(timeout_s)),
    )
    operation = client.create_build(
        request=cloudbuild_v1.CreateBuildRequest(project_id=project, parent=parent, build=build)
    )
    result = operation.result(timeout=timeout_s)
    if result.status != cloudbuild_v1.Build.Status.SUCCESS:
        raise CloudBuildError(
            f"Cloud Build {result.id} for {tagged} ended {result.status.name}: "
            f"{result.status_detail or 'no detail'}; logs: {result.log_url or 'n/a'}"
        )
    pushed = [i.digest for i in result.results.images if i.name == tagged and i.digest]
    if not pushed:
        raise CloudBuildError(
            f"Cloud Build {result.id} succeeded but reported no digest for {tagged}."
        )
    return BuiltImage(f"{image}@{pushed[0]}", digest, False, result.id)


def upload_python_package(
    package_path: str | Path,
    *,
    project: str,
    destination_uri: str,
    storage_client: Any = None,
) -> UploadedPackage:
    """Uploads a wheel or sdist for a prebuilt training container, once per content.

    The object is `<destination_uri>/<sha256[:16]>/<file name>`
    (`vertex_retrain.build.wheel.content_addressed_name`): an object's content never
    changes, so re-uploading the same file is skipped.

    Args:
        package_path: A `.whl`, `.tar.gz` or `.zip` file.
        project: Google Cloud project id (for the storage client).
        destination_uri: `gs://BUCKET[/PREFIX]`.
        storage_client: A `google.cloud.storage.Client` (or a fake).

    Returns:
        The package's gs:// URI and digest.

    Raises:
        ValueError: Not a package file, or a bad destination; nothing is uploaded.
    """
    path = Path(package_path)
    if not path.is_file() or not path.name.endswith(_PACKAGE_SUFFIXES):
        raise ValueError(
            f"package_path must be an existing {', '.join(_PACKAGE_SUFFIXES)} file, got {path}."
        )
    bucket, prefix = _split_gs(destination_uri, "destination_uri")
    relative, sha256 = content_addressed_name(path)
    name = _object_path(prefix, relative)
    storage = storage_client or _default_storage_client(project)
    uploaded = _upload_once(storage, bucket, name, path)
    return UploadedPackage(uri=f"gs://{bucket}/{name}", sha256=sha256, skipped=not uploaded)

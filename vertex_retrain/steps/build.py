"""build_container's logic: a container image or a Python package, skipped when unchanged."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from vertex_retrain.steps.backend import check_backend, readable_path, temporary_env

KINDS = ("container", "python_package")
_REPRODUCIBLE_WHEEL_EPOCH = "315532800"
"""1980-01-01, the earliest time a zip entry can carry; honoured by the wheel builders."""


@dataclass(frozen=True)
class BuildOutcome:
    """What the component outputs."""

    reference: str
    digest: str
    skipped: bool


def build(
    *,
    backend: str,
    source_uri: str,
    destination: str,
    kind: str = "python_package",
    dockerfile: str = "Dockerfile",
    gpu: bool = True,
    package_name: str = "",
    package_version: str = "",
    staging_uri: str = "",
    project: str = "",
    location: str = "",
) -> BuildOutcome:
    """Builds the training code (see the ``build_container`` component for the arguments).

    Raises:
        ValueError: Unknown ``kind`` or ``backend``, or a Vertex container build without
            ``staging_uri``.
        BuildError / CloudBuildError: The build failed; nothing was published.
    """
    check_backend(backend)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    source = readable_path(backend, source_uri)
    if backend == "local":
        return _build_locally(
            source, destination, kind, dockerfile, gpu, package_name, package_version
        )
    if kind == "container":
        if not staging_uri.startswith("gs://"):
            raise ValueError(
                "a Cloud Build needs staging_uri, a gs:// folder for the build context "
                f"tarball (e.g. gs://my-bucket/staging); got {staging_uri!r}"
            )
        from vertex_retrain.backends.local.dockerfile_lint import check_build_context
        from vertex_retrain.backends.vertex.cloud_build import build_image_with_cloud_build

        # The same lint as the local builder, before anything is uploaded or built.
        check_build_context(source, dockerfile, gpu=gpu)
        image = build_image_with_cloud_build(
            source,
            project=project,
            location=location,
            image=destination,
            staging_uri=staging_uri,
            dockerfile=dockerfile,
        )
        return BuildOutcome(image.image_uri, f"sha256:{image.context_digest}", image.skipped)
    return _package_for_vertex(source, destination, package_name, package_version, project)


def _build_locally(
    source: Path,
    destination: str,
    kind: str,
    dockerfile: str,
    gpu: bool,
    package_name: str,
    package_version: str,
) -> BuildOutcome:
    from vertex_retrain.backends.local.builder import build_container_image, build_python_package

    if kind == "container":
        result = build_container_image(
            source, image_uri=destination, dockerfile=dockerfile, gpu=gpu
        )
    else:
        result = build_python_package(
            source,
            destination_uri=destination,
            name=package_name or None,
            version=package_version or None,
        )
    return BuildOutcome(result.uri, _prefixed(result.digest), result.skipped)


def _package_for_vertex(
    source: Path, destination: str, package_name: str, package_version: str, project: str
) -> BuildOutcome:
    """Builds the wheel with the local builder in a scratch root, then uploads it once."""
    from vertex_retrain.backends.local.builder import build_python_package
    from vertex_retrain.backends.vertex.cloud_build import upload_python_package

    # The upload is keyed by the wheel's bytes. Without a fixed timestamp every build of the
    # same source gives a different zip, so a re-run would upload a duplicate package.
    with (
        tempfile.TemporaryDirectory(prefix="vertex-retrain-wheel-") as scratch,
        temporary_env("VERTEX_LOCAL_ROOT", scratch),
        temporary_env("SOURCE_DATE_EPOCH", _REPRODUCIBLE_WHEEL_EPOCH),
    ):
        wheel = build_python_package(
            source,
            destination_uri="gs://scratch/packages",
            name=package_name or None,
            version=package_version or None,
        )
        uploaded = upload_python_package(wheel.path, project=project, destination_uri=destination)
    return BuildOutcome(uploaded.uri, _prefixed(wheel.digest), uploaded.skipped)


def _prefixed(digest: str) -> str:
    return digest if digest.startswith("sha256:") else f"sha256:{digest}"

"""build_container's logic: a container image or a Python package, skipped when unchanged."""

from __future__ import annotations

from vertex_retrain.backends.base import Backend, BuildOutcome
from vertex_retrain.build.context import BuildError
from vertex_retrain.steps.backend import resolve_backend

__all__ = ["KINDS", "BuildOutcome", "build"]

KINDS = ("container", "python_package")


def build(
    *,
    backend: str | Backend,
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

    Both backends hash the source the same way (``vertex_retrain.build``), lint a Dockerfile
    before anything is built, and skip the work when the digest was built before.

    Args:
        backend: ``"local"`` or ``"vertex"``, or a backend (a test's, with fakes).
        source_uri: The source folder (local path, ``gs://`` or ``/gcs/``).
        destination: The image (container) or the ``gs://`` folder (package).
        kind: ``"container"`` or ``"python_package"``.
        dockerfile: The Dockerfile, relative to the source (container).
        gpu: The image is for GPU machines (the lint then wants a CUDA base).
        package_name: Distribution name of a bare package folder.
        package_version: Version of a bare package folder.
        staging_uri: ``gs://`` folder for the Cloud Build context (Vertex containers).
        project: Google Cloud project (Vertex).
        location: Google Cloud region (Vertex).

    Raises:
        ValueError: Unknown ``kind`` or ``backend``, a container build without
            ``destination``, or a Vertex container build without ``staging_uri``.
        BuildError: ``source_uri`` is not a folder (or, for a container, an archive).
        BuildError / CloudBuildError: The build failed; nothing was published.
    """
    chosen = resolve_backend(backend, project=project, location=location)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    source = chosen.readable_path(source_uri)
    if not source.is_dir() and not (kind == "container" and source.is_file()):
        raise BuildError(
            f"source_uri {source_uri!r} is not a folder here ({source}): set the pipeline "
            "parameter source_uri to the folder of your training code (for a local run a "
            "path on this machine, e.g. --param source_uri=$PWD/mypackage, or "
            "configure(..., source_uri=...)); on Vertex a gs:// folder"
        )
    if kind == "container":
        if not destination:
            raise ValueError(
                "destination is empty: name the Artifact Registry image the Dockerfile builds "
                "into, without tag, e.g. REGION-docker.pkg.dev/PROJECT/REPOSITORY/trainer (the "
                "templates' image_destination), or run the Python package instead "
                "(training_code='python_package')"
            )
        return chosen.build_container_image(
            source, image=destination, dockerfile=dockerfile, gpu=gpu, staging_uri=staging_uri
        )
    return chosen.build_python_package(
        source, destination=destination, name=package_name, version=package_version
    )

"""build_container's logic: a container image or a Python package, skipped when unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertex_retrain.backends.base import Backend, BuildOutcome
from vertex_retrain.build.context import BuildError
from vertex_retrain.steps.backend import resolve_backend

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["KINDS", "BuildOutcome", "build", "source_path"]

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
    source = source_path(chosen, source_uri, archive=kind == "container")
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


def source_path(backend: Backend, source_uri: str, *, archive: bool = False) -> Path:
    """The source folder (or, with ``archive``, a context archive) as this process opens it.

    Args:
        backend: The backend that maps ``source_uri``.
        source_uri: The source (local path, ``gs://`` or ``/gcs/``).
        archive: A file (a container's context archive) is a source too.

    Raises:
        BuildError: Nothing there; for a Cloud Storage URI a local run maps into its storage
            root, the line says so and how to point the run at a folder on this machine.
    """
    source = backend.readable_path(source_uri)
    if source.is_dir() or (archive and source.is_file()):
        return source
    if backend.name == "local" and source_uri.startswith(("gs://", "/gcs/")):
        raise BuildError(
            f"source_uri {source_uri!r} cannot be read here: a local run reads Cloud Storage "
            f"from its storage root, which holds no such folder ({source}); pass --param "
            "source_uri=<local path> (the folder of your training code)"
        )
    raise BuildError(
        f"source_uri {source_uri!r} is not a folder here ({source}): set the pipeline "
        "parameter source_uri to the folder of your training code (for a local run a "
        "path on this machine, e.g. --param source_uri=$PWD/mypackage, or "
        "configure(..., source_uri=...)); on Vertex a gs:// folder"
    )

"""build_container: package the training code as a container image or a Python package.

``kind`` has no default: the name says container, and a Python package is built as often, so
every call says which it builds.
"""

from typing import NamedTuple

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(RUN_PLACEHOLDERS)
def build_container(
    backend: str,
    source_uri: str,
    destination: str,
    kind: str,
    dockerfile: str = "Dockerfile",
    gpu: bool = True,
    package_name: str = "",
    package_version: str = "",
    staging_uri: str = "",
    source_digest: str = "",
    project: str = ...,
    location: str = ...,
) -> NamedTuple("Outputs", [("reference", str), ("digest", str), ("skipped", bool)]):
    """Packages training code; skips the work when the source digest is unchanged.

    Args:
        backend: ``"vertex"`` (Cloud Build / Cloud Storage) or ``"local"`` (the local builder).
        source_uri: The source: a directory (local path, ``gs://`` or ``/gcs/``).
        destination: For ``kind="container"`` the Artifact Registry image URI without tag;
            for ``kind="python_package"`` the ``gs://`` folder that receives the package.
        kind: ``"container"`` (an image from ``dockerfile``) or ``"python_package"`` (a
            wheel or sdist for ``pythonPackageSpec``).
        dockerfile: The Dockerfile, relative to the source, for containers.
        gpu: Whether the image is meant for GPU machines (the lint then wants a CUDA base).
        package_name: Distribution name when the source is a bare package folder.
        package_version: Distribution version when the source is a bare package folder.
        staging_uri: ``gs://`` folder for the Cloud Build context (Vertex containers).
        source_digest: The cache key only: the source's digest read by a ``source_digest``
            task this run (caching off), so Vertex reuses a cached build only for the same
            source content. Not used by the build itself.
        project: Google Cloud project (Vertex backend).
        location: Google Cloud region (Vertex backend).

    Returns:
        reference: ``IMAGE@sha256:DIGEST`` or the package's ``gs://`` URI.
        digest: The source digest (``sha256:...``).
        skipped: True when an earlier build of the same digest was reused.
    """
    from vertex_retrain.steps.build import build

    result = build(
        backend=backend,
        source_uri=source_uri,
        destination=destination,
        kind=kind,
        dockerfile=dockerfile,
        gpu=gpu,
        package_name=package_name,
        package_version=package_version,
        staging_uri=staging_uri,
        project=project,
        location=location,
    )
    return (result.reference, result.digest, result.skipped)

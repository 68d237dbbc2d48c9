"""source_digest: the digest of the training code, read fresh every run (never cached)."""

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
def source_digest(
    backend: str,
    source_uri: str,
    kind: str,
    dockerfile: str = "Dockerfile",
    package_name: str = "",
    package_version: str = "",
) -> str:
    """Hashes the source as ``build_container`` would, without building anything.

    Run it with caching off and pass its output to ``build_container(source_digest=...)``:
    Vertex then reuses a cached build only for the same source content, so unchanged code
    reuses the package or image and changed code rebuilds it.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        source_uri: The source folder (local path, ``gs://`` or ``/gcs/``).
        kind: ``"container"`` or ``"python_package"``, as the ``build_container`` it keys.
        dockerfile: The Dockerfile, relative to the source (containers).
        package_name: Distribution name of a bare package folder.
        package_version: Version of a bare package folder.

    Returns:
        ``sha256:<hex>``, the digest ``build_container`` reports for the same source.
    """
    from vertex_retrain.steps.digest import digest_source

    digest = digest_source(
        backend=backend,
        source_uri=source_uri,
        kind=kind,
        dockerfile=dockerfile,
        package_name=package_name,
        package_version=package_version,
    )
    print(f"source {source_uri}: {digest}")
    return digest

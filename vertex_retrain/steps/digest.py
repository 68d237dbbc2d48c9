"""source_digest's logic: the build's digest of the source, computed without building.

Both builders hash a source the same way (:mod:`vertex_retrain.build`); this module calls the
same functions, so the digest equals the one ``build_container`` reports for the same files.
"""

from __future__ import annotations

from vertex_retrain.steps.backend import resolve_backend
from vertex_retrain.steps.build import KINDS, source_path

__all__ = ["digest_source"]


def digest_source(
    *,
    backend: str,
    source_uri: str,
    kind: str = "python_package",
    dockerfile: str = "Dockerfile",
    package_name: str = "",
    package_version: str = "",
) -> str:
    """Returns ``sha256:<hex>`` of the source folder as built for ``kind``.

    A container context given as an archive is hashed as its bytes (the build reports the
    digest of the unpacked files instead; either changes exactly when the content does).

    Raises:
        ValueError: Unknown ``kind`` or ``backend``.
        BuildError: Not a buildable folder (no project, package or Dockerfile).
    """
    from vertex_retrain.build.context import BuildError, context_digest, context_files
    from vertex_retrain.build.wheel import package_source

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    source = source_path(resolve_backend(backend), source_uri, archive=kind == "container")
    if kind == "python_package":
        package = package_source(source, name=package_name or None, version=package_version or None)
        return f"sha256:{package.digest}"
    context = source.resolve()
    if context.is_file():
        # A context archive (the local builder takes .tar/.tar.gz): its bytes are its content.
        import hashlib

        return f"sha256:{hashlib.sha256(context.read_bytes()).hexdigest()}"
    path = (context / dockerfile).resolve()
    if context not in path.parents or not path.is_file():
        raise BuildError(f"no Dockerfile at {dockerfile!r} inside the build context {context}")
    text = path.read_text(encoding="utf-8")
    return f"sha256:{context_digest(context, context_files(context), text.encode())}"

"""What preflight checks of the code the jobs run, where it can be read here: whether a
Python-package job's package installs on its executor image
(:mod:`vertex_retrain.specs.package_compat`) and whether the modules the jobs run are in the
source they are built from (:mod:`vertex_retrain.build.package_modules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vertex_retrain.build.context import BuildError
from vertex_retrain.build.dockerfile_lint import parse_dockerfile
from vertex_retrain.build.package_metadata import read_package_metadata
from vertex_retrain.build.package_modules import module_problems as source_module_problems
from vertex_retrain.invocation import command
from vertex_retrain.specs.defaults import CONTAINER, PYTHON_PACKAGE
from vertex_retrain.specs.package_compat import package_problems as requirement_problems
from vertex_retrain.specs.problems import Problem, error, warning

__all__ = ["module_problems", "package_problems", "resolve_package"]

_DOCKERFILE_BYTES = 1 << 20
"""A larger Dockerfile is not read here (a planted huge file costs nothing)."""


def resolve_package(uri: str) -> Path | None:
    """A local copy of a training package to read offline, if there is one.

    A local path is read where it is; a ``gs://`` or ``/gcs/`` URI where a local run keeps
    Cloud Storage files (the local storage root, :mod:`vertex_retrain.backends.local.storage`).

    Returns:
        The local file or folder, or None when there is none.
    """
    from vertex_retrain.backends.local.storage import StorageError, to_local_path

    if not uri.startswith(("gs://", "/gcs/")):
        return Path(uri) if Path(uri).exists() else None
    try:
        local = to_local_path(uri)
    except StorageError:
        return None
    return local if local.exists() else None


def package_problems(uri: str, image: str, field: str) -> list[Problem]:
    """Whether the package installs on the executor image, when it can be read offline."""
    local = resolve_package(uri)
    if local is None:
        return [
            warning(
                field,
                uri,
                "The package cannot be read offline, so whether it installs on the "
                "executor image is not checked.",
                [
                    "a copy where local runs keep gs:// files ($VERTEX_LOCAL_ROOT/gcs/...)",
                    command("run PIPELINE --local"),
                ],
                code="package-unread",
            )
        ]
    try:
        metadata = read_package_metadata(local)
    except BuildError as failure:
        return [error(field, uri, str(failure), code="package-unreadable")]
    return requirement_problems(metadata, image, field)


def _installs_source(source: Path, dockerfile: Any) -> bool:
    """Whether the source's Dockerfile pip-installs its whole build context, so the image's
    ``python -m`` finds the modules where the package built from the source has them."""
    path = (source / str(dockerfile or "Dockerfile")).resolve()
    if source.resolve() not in path.parents or not path.is_file():
        return False  # the build step says so, with the path it looked at
    if path.stat().st_size > _DOCKERFILE_BYTES:
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return parse_dockerfile(text).installed_context() is not None


def module_problems(arguments: Mapping[str, Any]) -> list[Problem]:
    """Each ``*_module`` parameter against the source folder ``source_uri`` names, when the
    jobs run the project built from it and that folder can be read here
    (:mod:`vertex_retrain.build.package_modules`).

    The jobs run that project with ``training_code="python_package"`` (unless a built
    ``package_uri`` is given instead) and with ``training_code="container"`` when the
    source's Dockerfile pip-installs its build context, the templates' layout. Any other
    image may put its code anywhere, so nothing is said of it.
    """
    code = arguments.get("training_code")
    if code not in (PYTHON_PACKAGE, CONTAINER) or (
        code == PYTHON_PACKAGE and arguments.get("package_uri")
    ):
        return []
    source = arguments.get("source_uri")
    local = resolve_package(source) if isinstance(source, str) and source else None
    if local is None or not local.is_dir():
        return []
    if code == CONTAINER and not _installs_source(local, arguments.get("dockerfile")):
        return []
    return [
        problem
        for name, value in sorted(arguments.items())
        if name.endswith("_module") and isinstance(value, str) and value
        for problem in source_module_problems(local, value, f"--param {name}")
    ]

"""What preflight checks of the package a Python-package job installs, where it can be read
here: whether it installs on the executor image
(:mod:`vertex_retrain.specs.package_compat`) and whether the modules the jobs run are in its
source (:mod:`vertex_retrain.build.package_modules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vertex_retrain.build.context import BuildError
from vertex_retrain.build.package_metadata import read_package_metadata
from vertex_retrain.build.package_modules import module_problems as source_module_problems
from vertex_retrain.invocation import command
from vertex_retrain.specs.defaults import PYTHON_PACKAGE
from vertex_retrain.specs.package_compat import package_problems as requirement_problems
from vertex_retrain.specs.problems import Problem, error, warning

__all__ = ["module_problems", "package_problems", "resolve_package"]


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


def module_problems(arguments: Mapping[str, Any]) -> list[Problem]:
    """Each ``*_module`` parameter against the package source ``source_uri`` names, when the
    jobs run the package built from it (``training_code="python_package"`` and no built
    ``package_uri`` given instead) and its source folder can be read here
    (:mod:`vertex_retrain.build.package_modules`)."""
    source = arguments.get("source_uri")
    if arguments.get("training_code") != PYTHON_PACKAGE or arguments.get("package_uri"):
        return []
    if not isinstance(source, str):
        return []
    local = resolve_package(source) if source else None
    if local is None or not local.is_dir():
        return []
    return [
        problem
        for name, value in sorted(arguments.items())
        if name.endswith("_module") and isinstance(value, str) and value
        for problem in source_module_problems(local, value, f"--param {name}")
    ]

"""What a training package declares: its name, version, ``Requires-Python`` and requirements.

Read without building or installing anything, from a wheel (``*.dist-info/METADATA``), an
sdist (``PKG-INFO``, or its ``pyproject.toml`` when ``PKG-INFO`` lists no requirements), a
project folder (``pyproject.toml`` ``[project]``) or a bare package folder
(``requirements.txt``, as :func:`vertex_retrain.build.wheel.package_source` packages it).
The rules that judge it against an executor image are
:mod:`vertex_retrain.specs.package_compat`.
"""

from __future__ import annotations

import email.parser
import tarfile
import tomllib
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from vertex_retrain.build.context import BuildError
from vertex_retrain.specs.package_compat import PackageMetadata

__all__ = ["PackageMetadata", "read_package_metadata"]


def _from_headers(text: str, origin: str) -> PackageMetadata:
    headers = email.parser.Parser().parsestr(text, headersonly=True)
    return PackageMetadata(
        name=str(headers.get("Name", "")),
        version=str(headers.get("Version", "")),
        requires_python=headers.get("Requires-Python") or None,
        requires_dist=tuple(str(r) for r in headers.get_all("Requires-Dist") or []),
        origin=origin,
    )


def _from_pyproject(data: dict[str, Any], origin: str) -> PackageMetadata:
    project = data.get("project", {})
    extras = project.get("optional-dependencies", {}) or {}
    requires = [str(r) for r in project.get("dependencies", []) or []]
    for extra, items in extras.items():
        # The form a wheel's METADATA gives them, so one checker reads both.
        requires += [_with_extra(str(item), str(extra)) for item in items]
    return PackageMetadata(
        name=str(project.get("name", "")),
        version=str(project.get("version", "")),
        requires_python=project.get("requires-python") or None,
        requires_dist=tuple(requires),
        origin=origin,
    )


def _with_extra(requirement: str, extra: str) -> str:
    """`requirement` as a wheel's METADATA lists it for `extra`: a marker of its own is kept,
    joined to the extra's with `and` (``uvloop; sys_platform != 'win32'`` becomes
    ``uvloop ; (sys_platform != 'win32') and extra == "serve"``)."""
    spec, _, marker = requirement.partition(";")
    condition = f'extra == "{extra}"'
    if marker.strip():
        condition = f"({marker.strip()}) and {condition}"
    return f"{spec.strip()} ; {condition}"


def _wheel(path: Path) -> PackageMetadata:
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        if len(names) != 1:
            raise BuildError(f"{path}: a wheel holds exactly one *.dist-info/METADATA")
        return _from_headers(archive.read(names[0]).decode("utf-8"), str(path))


def _sdist_members(path: Path) -> dict[str, bytes]:
    wanted = ("PKG-INFO", "pyproject.toml")
    found: dict[str, bytes] = {}
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if len(PurePosixPath(name).parts) == 2 and PurePosixPath(name).name in wanted:
                    found[PurePosixPath(name).name] = archive.read(name)
        return found
    with tarfile.open(path, "r:*") as archive:
        for member in archive.getmembers():
            parts = PurePosixPath(member.name).parts
            if member.isfile() and len(parts) == 2 and parts[1] in wanted:
                handle = archive.extractfile(member)
                if handle is not None:
                    found[parts[1]] = handle.read()
    return found


def _sdist(path: Path) -> PackageMetadata:
    members = _sdist_members(path)
    if "PKG-INFO" not in members and "pyproject.toml" not in members:
        raise BuildError(f"{path}: an sdist holds PKG-INFO or pyproject.toml at its top level")
    info = _from_headers(members.get("PKG-INFO", b"").decode("utf-8"), str(path))
    if info.requires_dist or "pyproject.toml" not in members:
        return info
    return _from_pyproject(tomllib.loads(members["pyproject.toml"].decode("utf-8")), str(path))


def _folder(path: Path) -> PackageMetadata:
    pyproject = path / "pyproject.toml"
    if pyproject.is_file():
        return _from_pyproject(tomllib.loads(pyproject.read_text(encoding="utf-8")), str(path))
    from vertex_retrain.build.wheel import package_source

    package = package_source(path)
    return PackageMetadata(
        package.name, package.version, None, tuple(package.dependencies), str(path)
    )


def read_package_metadata(path: str | Path) -> PackageMetadata:
    """Reads a package's metadata without building or installing it.

    Args:
        path: A ``.whl``, an sdist (``.tar.gz``, ``.zip``), a project folder or a bare package
            folder.

    Returns:
        The metadata.

    Raises:
        BuildError: Not one of those, or unreadable.
    """
    target = Path(path)
    try:
        if target.is_dir():
            return _folder(target)
        if target.name.endswith(".whl"):
            return _wheel(target)
        if target.name.endswith((".tar.gz", ".zip")):
            return _sdist(target)
    except (OSError, zipfile.BadZipFile, tarfile.TarError, tomllib.TOMLDecodeError) as exc:
        raise BuildError(f"cannot read package metadata from {target}: {exc}") from exc
    raise BuildError(
        f"{target} is not a wheel, an sdist (.tar.gz, .zip) or a project folder; "
        "pythonPackageSpec.packageUris takes those"
    )

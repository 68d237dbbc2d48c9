"""A reproducible wheel of a Python project or a bare package folder.

The same source gives the same wheel bytes on every build: the wheel builder reads
``SOURCE_DATE_EPOCH`` for the zip entries' times, and it is set in the build subprocess's
environment only, never in this process's. pip builds in this environment when it has the
project's build requirements, and in an isolated one (requirements from the package index)
when it has not, so a fresh venv with an old setuptools still builds. Both backends build
packages here; the local builder keeps the wheel in the storage root, the Vertex backend
uploads it once per content.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from vertex_retrain.build.context import BuildError, context_digest

REPRODUCIBLE_EPOCH = 315532800
"""1980-01-01, the earliest time a zip entry can carry."""

_SKIP_IN_PACKAGES = {"__pycache__", ".git", "build", "dist", ".pytest_cache", ".mypy_cache"}
_OUTPUT_TAIL = 4000
"""Characters of pip's output an error carries."""
_PIP_FALLBACK_REQUIRES = ("setuptools>=40.8.0",)
"""What pip builds a project with when it declares no ``[build-system]`` (PEP 518)."""
_SETUPTOOLS_OWN_BDIST_WHEEL = "70.1"
"""setuptools builds wheels without the ``wheel`` package from this version on."""


@dataclass(frozen=True)
class PackageSource:
    """A folder to package, and what the wheel will be called.

    Attributes:
        path: The project or package folder (resolved).
        is_project: It has ``pyproject.toml`` or ``setup.py`` (built as is).
        name: Distribution name for a bare package folder.
        version: Version for a bare package folder.
        dependencies: ``requirements.txt`` lines of a bare package folder.
        files: The files packaged (posix paths relative to ``path``).
    """

    path: Path
    is_project: bool
    name: str
    version: str
    dependencies: tuple[str, ...]
    files: tuple[str, ...]

    @property
    def digest(self) -> str:
        """sha256 (hex) over the files and the name, version and dependencies."""
        meta = {"deps": list(self.dependencies), "name": self.name, "version": self.version}
        return context_digest(self.path, list(self.files), repr(sorted(meta.items())).encode())


def _package_tree(source: Path) -> tuple[str, ...]:
    files = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        skip = any(
            part in _SKIP_IN_PACKAGES or part.endswith(".egg-info") for part in relative.parts
        )
        if path.is_file() and not skip and path.suffix != ".pyc":
            files.append(relative.as_posix())
    return tuple(files)


def _requirements(path: Path) -> tuple[str, ...]:
    if not path.exists():
        return ()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return tuple(line for line in lines if line and not line.startswith("-"))


def package_source(
    source_dir: str | Path, *, name: str | None = None, version: str | None = None
) -> PackageSource:
    """Checks a folder can be packaged and lists what goes into the wheel.

    A folder with ``pyproject.toml`` or ``setup.py`` is built as is. A bare package folder
    (an ``__init__.py``, maybe a ``requirements.txt``) gets a minimal pyproject, with the
    requirements as dependencies.

    Args:
        source_dir: The project or package folder.
        name: Distribution name for a bare package (default: the folder name).
        version: Version for a bare package (default ``0.1.0``).

    Raises:
        BuildError: Not a folder, neither a project nor a package, or a name/version given
            for a project (which sets its own).
    """
    source = Path(source_dir).resolve()
    if not source.is_dir():
        raise BuildError(f"source_dir {source} is not a folder")
    is_project = (source / "pyproject.toml").exists() or (source / "setup.py").exists()
    if not is_project and not (source / "__init__.py").exists():
        raise BuildError(
            f"{source} is neither a Python project (pyproject.toml or setup.py) nor a package "
            "folder (__init__.py); point source_dir at one of them"
        )
    if is_project and (name or version):
        raise BuildError(
            f"{source} is a Python project; set its name and version in pyproject.toml/setup.py "
            "instead of passing name= or version="
        )
    return PackageSource(
        path=source,
        is_project=is_project,
        name=name or source.name.replace("_", "-"),
        version=version or "0.1.0",
        dependencies=_requirements(source / "requirements.txt"),
        files=_package_tree(source),
    )


def _synthesised_pyproject(package: PackageSource) -> str:
    dependencies = ", ".join(f'"{dep}"' for dep in package.dependencies)
    folder = package.path.name
    return (
        f'[build-system]\nrequires = ["setuptools>={_SETUPTOOLS_OWN_BDIST_WHEEL}"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{package.name}"\nversion = "{package.version}"\n'
        f"dependencies = [{dependencies}]\n\n"
        f'[tool.setuptools.packages.find]\ninclude = ["{folder}", "{folder}.*"]\n\n'
        '[tool.setuptools.package-data]\n"*" = ["*"]\n'
    )


def _stage(package: PackageSource, staging: Path) -> Path:
    """Copies the sources to `staging` (pip builds in-tree and would litter the source)."""
    target = staging if package.is_project else staging / package.path.name
    for relative in package.files:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(package.path / relative, target / relative)
    if not package.is_project:
        (staging / "pyproject.toml").write_text(_synthesised_pyproject(package))
    return staging


def build_wheel(
    package: PackageSource, out_dir: Path, *, source_date_epoch: int = REPRODUCIBLE_EPOCH
) -> Path:
    """Builds the wheel into ``out_dir`` (created), replacing a wheel of the same name.

    Readers of ``out_dir`` never see a partial wheel: it is written beside the target and
    renamed into place.

    Args:
        package: What to build (:func:`package_source`).
        out_dir: The folder that receives the wheel.
        source_date_epoch: Timestamp for every zip entry (seconds since 1970).

    Returns:
        The wheel's path.

    Raises:
        BuildError: ``pip wheel`` failed; the message carries its output.
    """
    with tempfile.TemporaryDirectory(prefix="vertex-retrain-wheel-") as tmp:
        staging = _stage(package, Path(tmp) / "src")
        built = pip_wheel(
            staging, Path(tmp) / "out", source_date_epoch=source_date_epoch, label=package.path
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        partial = out_dir / f".{built.name}.partial"
        shutil.copyfile(built, partial)
        partial.replace(out_dir / built.name)
    return out_dir / built.name


def content_addressed_name(package_file: Path) -> tuple[str, str]:
    """Where a package file is published under its destination folder, and its sha256.

    The name is ``<sha256[:16]>/<file name>``: pip reads the version from the file name, so
    it is kept, and the digest in the path means a published file never changes, so a
    cached build that names it always gets the bytes it was built with (a rebuild of edited
    code under the same version cannot overwrite them). Both backends publish this way.

    Args:
        package_file: A built ``.whl`` (or sdist) file.

    Returns:
        The relative object name and the file's full sha256 (hex).
    """
    sha256 = hashlib.sha256(package_file.read_bytes()).hexdigest()
    return f"{sha256[:16]}/{package_file.name}", sha256


def pip_wheel(
    project: Path,
    out_dir: Path,
    *,
    source_date_epoch: int = REPRODUCIBLE_EPOCH,
    label: str | Path | None = None,
) -> Path:
    """Runs ``pip wheel --no-deps`` on a project folder, isolating the build when needed.

    The build runs in this environment (``--no-build-isolation``: fast, offline) when it
    satisfies the project's ``[build-system] requires``
    (:func:`missing_build_requirements`); otherwise pip builds in an isolated environment,
    installing those requirements from the package index.

    Args:
        project: A folder with ``pyproject.toml`` or ``setup.py`` (pip may write into it).
        out_dir: Receives the wheel.
        source_date_epoch: ``SOURCE_DATE_EPOCH`` of the build subprocess (reproducible zips).
        label: What to call the project in an error (default: the folder).

    Returns:
        The wheel's path.

    Raises:
        BuildError: pip failed or built no single wheel; the message carries the tail of
            pip's output (stdout and stderr, in order) and says whether the build was isolated.
    """
    missing = missing_build_requirements(build_requirements(project))
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check",
            "--no-input", "-w", str(out_dir), str(project)]  # fmt: skip
    if not missing:
        argv.insert(5, "--no-build-isolation")
    built = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
        env={**os.environ, "SOURCE_DATE_EPOCH": str(int(source_date_epoch))},
    )  # fmt: skip
    wheels = sorted(out_dir.glob("*.whl"))
    if built.returncode == 0 and len(wheels) == 1:
        return wheels[0]
    how = (
        f"in an isolated build environment (this one lacks {', '.join(missing)})"
        if missing
        else "without build isolation (this environment has its build requirements)"
    )
    outcome = f"exit {built.returncode}" if built.returncode else f"{len(wheels)} wheels"
    # The first line names the build's own error: consoles show a failure's first line.
    raise BuildError(
        f"pip wheel failed for {label or project}: {_telling_line(built.stdout)} ({outcome}; "
        f"built {how}). pip's output ends:\n"
        f"{built.stdout[-_OUTPUT_TAIL:].strip() or '(no output)'}"
    )


def _telling_line(output: str) -> str:
    """The line of pip's output that says what went wrong.

    That is the last line the build backend printed (pip frames it between ``[N lines of
    output]`` and ``[end of output]``), else pip's last ``ERROR`` line, else its last line.
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    backend: list[str] = []
    inside = False
    for line in lines:
        if line.endswith("lines of output]"):
            inside, backend = True, []
        elif line == "[end of output]":
            inside = False
        elif inside:
            backend.append(line)
    errors = [line for line in lines if line.startswith("ERROR")]
    return (backend or errors or lines or ["pip printed nothing"])[-1]


def build_requirements(project: Path) -> list[str]:
    """The project's ``[build-system] requires`` (pip's fallback when it declares none)."""
    pyproject = project / "pyproject.toml"
    if not pyproject.is_file():
        return list(_PIP_FALLBACK_REQUIRES)
    try:
        declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise BuildError(f"cannot read {pyproject}: {error}") from None
    system = declared.get("build-system")
    if not isinstance(system, dict):
        return list(_PIP_FALLBACK_REQUIRES)
    return [str(item) for item in system.get("requires", [])]


def missing_build_requirements(requirements: list[str]) -> list[str]:
    """The build requirements this environment does not satisfy, one phrase each.

    setuptools before 70.1 asks for the ``wheel`` package to build a wheel (its own dynamic
    build requirement): a fresh venv's setuptools 65 fails with ``invalid command
    'bdist_wheel'``, so that case counts as missing too.
    """
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    def installed(name: str) -> Version | None:
        try:
            return Version(importlib.metadata.version(name))
        except (importlib.metadata.PackageNotFoundError, InvalidVersion):
            return None

    missing = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            missing.append(f"{text} (not a valid requirement)")
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        found = installed(requirement.name)
        if found is None:
            missing.append(f"{text} (not installed)")
        elif not requirement.specifier.contains(found, prereleases=True):
            missing.append(f"{text} (installed: {found})")
        elif (
            requirement.name.lower() == "setuptools"
            and found < Version(_SETUPTOOLS_OWN_BDIST_WHEEL)
            and installed("wheel") is None
        ):
            missing.append(f"wheel (setuptools {found} needs it to build wheels)")
    return missing

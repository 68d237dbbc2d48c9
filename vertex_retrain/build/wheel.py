"""A reproducible wheel of a Python project or a bare package folder.

The same source gives the same wheel bytes on every build: the wheel builder reads
``SOURCE_DATE_EPOCH`` for the zip entries' times, and it is set in the build subprocess's
environment only, never in this process's. Both backends build packages here; the local
builder keeps the wheel in the storage root, the Vertex backend uploads it once per content.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from vertex_retrain.build.context import BuildError, context_digest

REPRODUCIBLE_EPOCH = 315532800
"""1980-01-01, the earliest time a zip entry can carry."""

_SKIP_IN_PACKAGES = {"__pycache__", ".git", "build", "dist", ".pytest_cache", ".mypy_cache"}


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
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
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
        BuildError: ``pip wheel`` failed; the message carries its error output.
    """
    with tempfile.TemporaryDirectory(prefix="vertex-retrain-wheel-") as tmp:
        staging = _stage(package, Path(tmp) / "src")
        built = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
             "--disable-pip-version-check", "--quiet", "-w", str(Path(tmp) / "out"), str(staging)],
            capture_output=True, text=True, check=False,
            env={**os.environ, "SOURCE_DATE_EPOCH": str(int(source_date_epoch))},
        )  # fmt: skip
        wheels = sorted((Path(tmp) / "out").glob("*.whl"))
        if built.returncode != 0 or len(wheels) != 1:
            raise BuildError(f"pip wheel failed for {package.path}:\n{built.stderr[-3000:]}")
        out_dir.mkdir(parents=True, exist_ok=True)
        partial = out_dir / f".{wheels[0].name}.partial"
        shutil.copyfile(wheels[0], partial)
        partial.replace(out_dir / wheels[0].name)
    return out_dir / wheels[0].name

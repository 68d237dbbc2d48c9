"""Installing exactly the given package file into a job's virtual environment.

pip skips a wheel when a distribution of the same name and version is installed, without a
word; a job then runs other code than the file it was given. The local backend installs the
file itself: a wheel is unpacked as the wheel specification says (its `.data` folders to the
scheme's paths), after checking that its tags fit this interpreter. An sdist is first built
into a wheel with `vertex_retrain.build.wheel.pip_wheel`. Console scripts are not generated:
jobs and servers run `python -m MODULE`.
"""

from __future__ import annotations

import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from vertex_retrain.build.archive import extract_archive
from vertex_retrain.build.context import BuildError
from vertex_retrain.build.wheel import pip_wheel


class PackageInstallError(ValueError):
    """A package file that cannot be installed into a job's environment."""


def site_packages(env_dir: Path) -> Path:
    """The site-packages folder of a venv made by this interpreter."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return env_dir / "lib" / version / "site-packages"


def _scheme_paths(env_dir: Path, name: str) -> dict[str, Path]:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = site_packages(env_dir)
    return {
        "purelib": site,
        "platlib": site,
        "scripts": env_dir / "bin",
        "data": env_dir,
        "headers": env_dir / "include" / "site" / version / name,
    }


def _check_tags(wheel: Path) -> str:
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, _, _, tags = parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as error:
        raise PackageInstallError(f"package {wheel.name!r} is not a valid wheel: {error}") from None
    if not tags & set(sys_tags()):
        raise PackageInstallError(
            f"wheel {wheel.name} does not fit this interpreter (Python "
            f"{sys.version_info.major}.{sys.version_info.minor}, {sys.platform}); its tags are "
            f"{', '.join(sorted(str(t) for t in tags))}. Build it for this Python or as "
            "py3-none-any"
        )
    return str(name)


def _target(name: str, data_dir: str, schemes: dict[str, Path], site: Path) -> Path:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise PackageInstallError(f"archive entry {name!r} would be written outside the venv")
    if path.parts[0] == data_dir and len(path.parts) > 2:
        scheme = path.parts[1]
        if scheme not in schemes:
            raise PackageInstallError(f"wheel entry {name!r}: unknown scheme {scheme!r}")
        return schemes[scheme].joinpath(*path.parts[2:])
    return site.joinpath(*path.parts)


def install_wheel(wheel: Path, env_dir: Path) -> str:
    """Unpacks `wheel` into the venv `env_dir`; returns the distribution's name.

    Raises:
        PackageInstallError: Not a valid wheel, tags that do not fit this interpreter, or a
            entry that would land outside the venv.
    """
    name = _check_tags(wheel)
    site = site_packages(env_dir)
    schemes = _scheme_paths(env_dir, name)
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as error:
        raise PackageInstallError(f"cannot open wheel {wheel}: {error}") from None
    with archive:
        entries = [e for e in archive.infolist() if not e.is_dir()]
        info = [e.filename for e in entries if e.filename.endswith(".dist-info/WHEEL")]
        if len(info) != 1:
            raise PackageInstallError(f"wheel {wheel.name} has no single .dist-info/WHEEL")
        data_dir = info[0].split("/", 1)[0].removesuffix(".dist-info") + ".data"
        for entry in entries:
            target = _target(entry.filename, data_dir, schemes, site)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(entry) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink)
            if (entry.external_attr >> 16) & stat.S_IXUSR:
                target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        dist_info = site / info[0].split("/", 1)[0]
        (dist_info / "INSTALLER").write_text("vertex-retrain\n")
    return name


def wheel_of(package: Path, work_dir: Path) -> Path:
    """`package` when it is a wheel; an sdist (`.tar.gz`, `.zip`) is built into one first.

    Raises:
        PackageInstallError: The sdist cannot be unpacked or built (with pip's output).
    """
    if package.name.endswith(".whl"):
        return package
    with tempfile.TemporaryDirectory(prefix="sdist-", dir=work_dir) as tmp:
        unpacked = Path(tmp) / "src"
        unpacked.mkdir()
        try:
            if package.name.endswith(".zip"):
                with zipfile.ZipFile(package) as archive:
                    for name in archive.namelist():
                        _target(name, "", {}, unpacked)  # refuses names leaving the folder
                    archive.extractall(unpacked)
            else:
                # The build context's checked extraction: tarfile's own filters are not
                # trusted on every patch level (docs/security.md).
                extract_archive(package, unpacked)
        except (OSError, zipfile.BadZipFile, BuildError) as error:
            raise PackageInstallError(f"cannot unpack sdist {package.name}: {error}") from None
        tops = [p for p in unpacked.iterdir() if p.is_dir()]
        project = tops[0] if len(tops) == 1 else unpacked
        try:
            built = pip_wheel(project, Path(tmp) / "out", label=package.name)
        except BuildError as error:
            raise PackageInstallError(str(error)) from None
        kept = work_dir / built.name
        shutil.copyfile(built, kept)
    return kept

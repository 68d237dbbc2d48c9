"""Package builds in an environment that lacks the build requirements (a fresh venv's old or
absent setuptools): pip builds in isolation then, and a failure shows pip's real error."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import venv
import zipfile
from pathlib import Path

import pytest

from tests.package_files import write_wheel
from vertex_retrain.build import wheel as wheel_module
from vertex_retrain.build.context import BuildError
from vertex_retrain.build.wheel import build_wheel, missing_build_requirements, package_source

REPO = Path(__file__).resolve().parent.parent
# A PEP 517 backend in a distribution of its own: a build can import it only when pip
# installed it into an isolated build environment.
BACKEND = """
import base64, hashlib, zipfile

def _line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "needs_backend-1.0-py3-none-any.whl"
    info = "needs_backend-1.0.dist-info"
    files = {
        "needs_backend.py": b"BUILT_BY = 'tinybackend'\\n",
        f"{info}/METADATA": b"Metadata-Version: 2.1\\nName: needs-backend\\nVersion: 1.0\\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }
    record = [*(_line(path, data) for path, data in files.items()), f"{info}/RECORD,,"]
    with zipfile.ZipFile(f"{wheel_directory}/{name}", "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{info}/RECORD", "\\n".join(record) + "\\n")
    return name
"""


def test_build_wheel_isolates_a_build_whose_requirement_this_environment_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    write_wheel(index, "tinybackend", "1.0", {"tinybackend.py": BACKEND})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["tinybackend>=1"]\nbuild-backend = "tinybackend"\n'
    )
    assert missing_build_requirements(["tinybackend>=1"]) == ["tinybackend>=1 (not installed)"]
    built = build_wheel(package_source(project), tmp_path / "out")
    with zipfile.ZipFile(built) as archive:
        assert archive.read("needs_backend.py") == b"BUILT_BY = 'tinybackend'\n"


@pytest.mark.parametrize(
    ("installed", "missing"),
    [
        ({"setuptools": "65.5.0"}, ["wheel (setuptools 65.5.0 needs it to build wheels)"]),
        ({"setuptools": "65.5.0", "wheel": "0.41.0"}, []),
        ({"setuptools": "70.1.0"}, []),
        ({}, ["setuptools>=61 (not installed)"]),
        ({"setuptools": "60.0"}, ["setuptools>=61 (installed: 60.0)"]),
    ],
)
def test_missing_build_requirements_knows_setuptools_needs_wheel_before_70_1(
    monkeypatch: pytest.MonkeyPatch, installed: dict[str, str], missing: list[str]
) -> None:
    def version(name: str) -> str:
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(wheel_module.importlib.metadata, "version", version)
    assert missing_build_requirements(["setuptools>=61"]) == missing


def _repacked_setuptools(folder: Path) -> None:
    """The installed setuptools as a wheel in `folder`: an offline package index for pip."""
    dist = importlib.metadata.distribution("setuptools")
    folder.mkdir()
    with zipfile.ZipFile(folder / f"setuptools-{dist.version}-py3-none-any.whl", "w") as archive:
        for entry in dist.files or []:
            path = Path(str(dist.locate_file(entry)))
            if entry.parts[0] != ".." and "__pycache__" not in entry.parts and path.is_file():
                archive.write(path, str(entry))


@pytest.mark.slow
def test_build_wheel_works_in_a_fresh_venv_that_has_no_usable_setuptools(tmp_path: Path) -> None:
    # The venv sees pip, packaging and this library, and no setuptools: it stands for the
    # fresh venv of the README, whose setuptools 65 cannot build wheels.
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(fresh)
    deps = tmp_path / "deps"
    deps.mkdir()
    for name in ("pip", "packaging"):
        os.symlink(Path(importlib.import_module(name).__file__ or "").parent, deps / name)
    site = next((fresh / "lib").glob("python3.*")) / "site-packages"
    (site / "deps.pth").write_text(f"{deps}\n{REPO}\n")
    _repacked_setuptools(tmp_path / "index")
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from vertex_retrain.build.wheel import build_wheel, package_source\n"
        "print(build_wheel(package_source(sys.argv[1]), Path(sys.argv[2])).name)\n"
    )
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "index")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(fresh / "bin" / "python"), "-c", script, str(package), str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "mypkg-0.1.0-py3-none-any.whl"


def test_build_wheel_failure_names_the_builds_own_error_on_its_first_line(
    tmp_path: Path,
) -> None:
    project = tmp_path / "broken"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    (project / "setup.py").write_text(
        "raise SystemExit('error: the project cannot be built on a Tuesday')\n"
    )
    with pytest.raises(BuildError) as failed:
        build_wheel(package_source(project), tmp_path / "out")
    first, *rest = str(failed.value).splitlines()
    assert first.startswith(f"pip wheel failed for {project}: error: the project cannot")
    assert "without build isolation" in first
    assert any("did not run successfully" in line for line in rest)  # pip's own output follows

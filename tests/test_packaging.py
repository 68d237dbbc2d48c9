"""What the wheels hold: one namespaced package, no test doubles, and a trainer of its own.

The repository is copied to a temporary folder and built there with pip (no build isolation,
no dependencies), so the build never writes ``build/`` or ``*.egg-info`` into the checkout
that other tests read. The library's wheel is then unpacked and used on its own to compile
every component, which proves that its file set is complete.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.golden_files import normalise
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.pipelines import catalog

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
PACKAGE_ROOTS = {
    "vertex_retrain": REPO / "vertex_retrain",
    "vertex_retrain.components": REPO / "components",
    "vertex_retrain.pipelines": REPO / "pipelines",
}
"""Import name -> folder, as pyproject.toml's ``[tool.setuptools.package-dir]`` maps them."""
ANYWHERE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*_cache")
AT_TOP = {".git", ".venv", "build", "dist", ".hypothesis", ".local-vertex", "trainer-output"}
"""Not copied: caches and build outputs anywhere; the checkout's own state at its top only
(``vertex_retrain/build`` is a package, the top-level ``build/`` a setuptools output)."""


def _not_copied(folder: str, names: list[str]) -> set[str]:
    top = {name for name in names if name in AT_TOP} if Path(folder) == REPO else set()
    return set(ANYWHERE(folder, names)) | top


def _build_wheel(source: Path, out: Path) -> Path:
    """Builds the distribution in `source` with pip and returns the one wheel it made."""
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("checkout") / "repo"
    shutil.copytree(REPO, copy, ignore=_not_copied)
    return copy


@pytest.fixture(scope="module")
def library_wheel(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(checkout, tmp_path_factory.mktemp("library-wheel"))


@pytest.fixture(scope="module")
def trainer_wheel(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(
        checkout / "examples" / "drink_shops" / "trainer", tmp_path_factory.mktemp("trainer-wheel")
    )


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _import_names(wheel: Path) -> set[str]:
    """Top-level names a wheel installs into site-packages (metadata folders aside)."""
    tops = {name.split("/")[0] for name in _names(wheel)}
    return {top.removesuffix(".py") for top in tops if not top.endswith((".dist-info", ".data"))}


def test_packaging_library_wheel_installs_only_vertex_retrain(library_wheel: Path) -> None:
    assert _import_names(library_wheel) == {"vertex_retrain"}
    names = _names(library_wheel)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(library_wheel) as archive:
        scripts = archive.read(entry_points).decode()
    assert "vertex-retrain = vertex_retrain.cli.main:main" in scripts


def test_packaging_library_wheel_ships_no_test_doubles(library_wheel: Path) -> None:
    doubles = [
        name
        for name in _names(library_wheel)
        if "fake" in name.rsplit("/", 1)[-1].lower() or "/tests/" in name or "/fakes/" in name
    ]
    assert doubles == []


def test_packaging_library_wheel_holds_every_source_file(library_wheel: Path) -> None:
    # Modules, the catalog YAML and the component Dockerfile, each at its mapped path.
    expected = {
        "/".join([*package.split("."), *path.relative_to(folder).parts])
        for package, folder in PACKAGE_ROOTS.items()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert sorted(expected - set(_names(library_wheel))) == []


def test_packaging_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = {
        ".".join([package, *path.parent.relative_to(folder).parts])
        for package, folder in PACKAGE_ROOTS.items()
        for path in folder.rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert sorted(folders - listed) == [], "package folders missing from [tool.setuptools]"
    assert sorted(listed - folders) == [], "[tool.setuptools] packages with no folder"
    mapped = config["tool"]["setuptools"]["package-dir"]
    assert mapped == {
        "vertex_retrain.components": "components",
        "vertex_retrain.pipelines": "pipelines",
    }


COMPILE_FROM_WHEEL = """
import json, sys
from pathlib import Path
import vertex_retrain, vertex_retrain.components, vertex_retrain.pipelines
site = Path(sys.argv[1]).resolve()
for module in (vertex_retrain, vertex_retrain.components, vertex_retrain.pipelines):
    assert site in Path(module.__file__).resolve().parents, (module.__name__, module.__file__)
from vertex_retrain.cli.compiling import compile_all
written = compile_all(Path(sys.argv[2]))
print(json.dumps({name: str(spec.path) for name, spec in written.items()}))
"""


def test_packaging_components_compile_from_the_wheel_alone(
    library_wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(library_wheel) as archive:
        archive.extractall(site)
    # cwd outside the checkout, so only the unpacked wheel can provide `vertex_retrain`; it
    # comes first on sys.path, before the editable install's finder.
    done = subprocess.run(
        [sys.executable, "-c", COMPILE_FROM_WHEEL, str(site), str(tmp_path / "dist")],
        cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(written) == set(catalog.PIPELINES) | set(catalog.COMPONENTS)
    for name, target in catalog.COMPONENTS.items():
        from_wheel = yaml.safe_load(Path(written[name]).read_text(encoding="utf-8"))
        assert normalise(from_wheel) == normalise(compile_to_dict(catalog.load(target))), name


def test_packaging_trainer_is_its_own_wheel(trainer_wheel: Path) -> None:
    assert _import_names(trainer_wheel) == {"trainer"}
    names = set(_names(trainer_wheel))
    assert {"trainer/task.py", "trainer/evaluate.py"} <= names

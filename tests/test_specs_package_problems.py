"""What a Python package's metadata says against the executor image it will be installed on:
each problem exactly, and the environment its dependency markers are judged in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.specs.containers import load_containers
from vertex_retrain.specs.package_compat import PackageMetadata, package_problems

IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
pytestmark = pytest.mark.usefixtures("catalog_still_serving")


def _where() -> str:
    catalog = load_containers()
    return f"pytorch-gpu.2-4.py310 (containers.yaml sources T1, T2, retrieved {catalog.retrieved})"


def _problems(*requires: str, python: str | None = None, pins: Any = None) -> list[tuple]:
    package = PackageMetadata("trainer", "1.0", python, tuple(requires), "dist/t.whl")
    found = package_problems(
        package, IMAGE, "f", catalog=load_containers(),
        requires_python_of=pins or (lambda name, version: None),
    )  # fmt: skip
    return [(p.severity, p.field, p.value, p.message, p.alternatives, p.code) for p in found]


def test_package_problems_refuse_a_requires_python_the_image_lacks(
    catalog_still_serving: Path,
) -> None:
    assert _problems(python=">=3.12") == [
        ("error", "f", "trainer 1.0",
         f"trainer 1.0 requires Python >=3.12, but {_where()} runs Python 3.10: pip on the "
         "replica refuses to install it.",
         ('requires-python = ">=3.10" if the code runs on Python 3.10',
          "a custom container (containerSpec) with a newer Python"),
         "package-python"),
    ]  # fmt: skip
    assert _problems(python=">=3.10") == [] and _problems(python="not a specifier") == []


def test_package_problems_refuse_a_requirement_pip_cannot_read() -> None:
    assert _problems("not a req !!") == [
        ("error", "f", "not a req !!", "Not a valid requirement (PEP 508).", (),
         "package-requirement"),
    ]  # fmt: skip


def test_package_problems_refuse_a_framework_pin_the_image_does_not_provide() -> None:
    assert _problems("Torch==2.3") == [
        ("error", "f", "Torch==2.3",
         f"trainer 1.0 requires Torch==2.3, but {_where()} provides torch 2.4 (built for its "
         "CUDA): pip would replace it with a PyPI build (gigabytes, another CUDA) or find no "
         "match.",
         ("leave torch out of the package's dependencies (the image provides it)",
          "torch>=2.4 if a minimum is needed", "an executor image with torch matching ==2.3"),
         "package-framework"),
    ]  # fmt: skip
    assert _problems("torch>=2.4,<3") == [] and _problems("torch") == []


def test_package_problems_refuse_a_pin_whose_release_needs_a_newer_python() -> None:
    needs = {("numpy", "2.3.0"): ">=3.11", ("numpy", "2.0.0"): ">=3.9"}
    pins = lambda name, version: needs.get((name, version))  # noqa: E731
    assert _problems("numpy==2.3.0", pins=pins) == [
        ("error", "f", "numpy==2.3.0",
         f"trainer 1.0 pins numpy==2.3.0, which requires Python >=3.11; {_where()} runs Python "
         "3.10, so pip finds no matching distribution.",
         ("a range that fits Python 3.10, e.g. numpy>=LOWER,<2.3.0",
          "no pin, if the image already provides it"),
         "package-pin-python"),
    ]  # fmt: skip
    assert _problems("numpy==2.0.0", pins=pins) == []
    assert _problems("numpy==2.*", "numpy>=2.3.0", pins=pins) == []  # not pins of one release
    assert _problems("numpy===2.3.0", pins=pins)[0][-1] == "package-pin-python"


def test_package_problems_warn_of_replacing_what_the_image_ships() -> None:
    assert _problems("Pandas>=2.3") == [
        ("warning", "f", "Pandas>=2.3",
         f"{_where()} ships Pandas 2.2.3; Pandas>=2.3 makes pip replace it on every replica "
         "start.",
         ("a range that admits 2.2.3", "leave it out (the image provides it)"),
         "package-replaces"),
    ]  # fmt: skip
    assert _problems("pandas>=2.2", "absl_py<3", "cloudml-hypertune>=0.1") == []


@pytest.mark.parametrize(
    ("marker", "applies"),
    [
        ('python_version >= "3.10"', True), ('python_version < "3.10"', False),
        ('python_full_version == "3.10.0"', True), ('sys_platform == "linux"', True),
        ('sys_platform == "win32"', False), ('platform_system == "Linux"', True),
        ('platform_machine == "x86_64"', True), ('platform_machine == "arm64"', False),
        ('os_name == "posix"', True), ('implementation_name == "cpython"', True),
        ('platform_python_implementation == "CPython"', True), ('extra == "test"', False),
    ],
)  # fmt: skip
def test_package_problems_judge_markers_as_on_the_image_s_linux_replica(
    marker: str, applies: bool
) -> None:
    codes = [p[-1] for p in _problems(f"pandas>=2.3; {marker}")]
    assert codes == (["package-replaces"] if applies else [])


def test_package_problems_of_an_image_whose_python_is_unknown_say_so(tmp_path: Path) -> None:
    from tests.test_specs_container_catalog import CATALOG

    path = tmp_path / "containers.yaml"
    path.write_text(CATALOG, encoding="utf-8")  # its pytorch-cpu.2-4.py310 names no Python
    catalog = load_containers(path)
    package = PackageMetadata("trainer", "1.0", ">=3.12", ("torch==1.0",), "dist/t.whl")
    image = "us-docker.pkg.dev/vertex-ai/training/pytorch-cpu.2-4.py310:latest"
    assert [(p.severity, p.field, p.value, p.message, p.alternatives, p.code)
            for p in package_problems(package, image, "f", catalog=catalog)] == [
        ("warning", "f", "trainer 1.0",
         "The catalog does not know the Python of pytorch-cpu.2-4.py310 (containers.yaml "
         "sources T1, retrieved 2026-11-30), so trainer 1.0's Requires-Python and pins are not "
         "checked.", (), "package-python-unknown"),
    ]  # fmt: skip
    assert package_problems(package, "europe-docker.pkg.dev/p/r/t:1", "f", catalog=catalog) == []


def test_package_problems_match_names_in_any_spelling() -> None:
    # The image ships absl-py 2.1.0: absl_py and ABSL.py name it too.
    for spelling in ("absl_py", "ABSL.py", "absl-py"):
        assert [p[-1] for p in _problems(f"{spelling}>=3")] == ["package-replaces"]


def test_installed_requires_python_reads_an_installed_release_only() -> None:
    import importlib.metadata

    from packaging.specifiers import SpecifierSet

    from vertex_retrain.specs.package_compat import installed_requires_python

    version = importlib.metadata.version("pyarrow")
    declared = installed_requires_python("pyarrow", version)
    assert declared and SpecifierSet(declared).contains("3.11.0")
    assert installed_requires_python("PyArrow", version) == declared  # names in any case
    assert installed_requires_python("pyarrow", "0.0.1") is None  # another release
    assert installed_requires_python("pyarrow", "not a version") is None
    assert installed_requires_python("no-such-distribution-here", "1.0") is None

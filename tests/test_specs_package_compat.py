"""The container catalog, package metadata, and the one checker both backends use."""

from __future__ import annotations

import datetime as dt
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.examples import DRINK_SHOPS
from vertex_retrain.build.context import BuildError
from vertex_retrain.build.package_metadata import read_package_metadata
from vertex_retrain.specs.containers import load_containers, parse_image_name
from vertex_retrain.specs.defaults import EVALUATION, TRAINING
from vertex_retrain.specs.package_compat import (
    PackageMetadata,
    executor_image_problems,
    package_problems,
)
from vertex_retrain.specs.problems import errors_of

GPU_310 = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
PY38 = "us-docker.pkg.dev/vertex-ai/training/pytorch-tpu.2-0:latest"
FIELD = "jobSpec.workerPoolSpecs[0].pythonPackageSpec.packageUris[0]"
BEFORE_RETIREMENT = dt.date(2025, 6, 1)


def _package(*requires: str, python: str | None = None) -> PackageMetadata:
    return PackageMetadata("demo", "1.0", python, requires, "demo-1.0-py3-none-any.whl")


def _codes(problems: list) -> list[str]:
    return [p.code for p in problems]


def test_catalog_records_sources_dates_python_and_framework_for_every_image() -> None:
    catalog = load_containers()
    assert catalog.retrieved == "2026-12-01"
    for image in [*catalog.training.values(), *catalog.prediction.values()]:
        assert image.sources and set(image.sources) <= set(catalog.sources), image.name
        assert image.framework and image.version and image.accelerator
        named = parse_image_name(image.name)
        assert named is not None and named.version == image.version, image.name
        if named.python and image.python:
            assert named.python == image.python, image.name  # the name agrees with the table
    default = catalog.lookup(GPU_310)
    assert default is not None
    assert (default.python, default.framework, default.version, default.cuda) == (
        "3.10", "torch", "2.4", "12.x"
    )  # fmt: skip


def test_catalog_lookup_needs_a_google_registry_and_a_known_name() -> None:
    catalog = load_containers()
    assert catalog.lookup(GPU_310.replace("us-docker", "asia-docker")) is not None
    assert catalog.lookup("gcr.io/cloud-aiplatform/training/pytorch-gpu.2-4.py310:latest")
    assert catalog.lookup("eu.pkg.dev/me/repo/pytorch-gpu.2-4.py310:latest") is None
    assert catalog.lookup("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.9-9.py312") is None


def test_default_executor_image_is_in_the_catalog_and_the_trainer_installs_on_it() -> None:
    catalog = load_containers()
    for image in (TRAINING.executor_image_uri, EVALUATION.executor_image_uri):
        assert catalog.lookup(image) is not None, image
    source = DRINK_SHOPS / "trainer"
    problems = package_problems(read_package_metadata(source), TRAINING.executor_image_uri, FIELD)
    assert errors_of(problems) == [], [p.describe() for p in problems]


def test_python_38_executor_image_is_refused_for_the_reference_package() -> None:
    source = DRINK_SHOPS / "trainer"
    # Before the catalog's images ended: an available one is recommended in its place.
    problems = package_problems(read_package_metadata(source), PY38, FIELD, today=BEFORE_RETIREMENT)
    (refusal,) = errors_of(problems)
    assert refusal.code == "package-python"
    assert refusal.field == FIELD
    assert "runs Python 3.8" in refusal.message and "requires Python >=3.10" in refusal.message
    assert any("pytorch-gpu.2-4.py310" in a for a in refusal.alternatives)


def test_pin_that_replaces_the_image_framework_is_an_error() -> None:
    (problem,) = package_problems(_package("torch==2.13.0"), GPU_310, FIELD)
    assert problem.severity == "error" and problem.code == "package-framework"
    assert "pytorch-gpu.2-4.py310" in problem.message and "torch 2.4" in problem.message
    assert package_problems(_package("torch>=2.4", "torch<3"), GPU_310, FIELD) == []
    assert package_problems(_package("torch==2.4.1"), GPU_310, FIELD) == []


def test_pinned_release_needing_a_newer_python_is_an_error_when_its_metadata_is_known() -> None:
    table = {("numpy", "2.4.6"): ">=3.11", ("pyarrow", "14.0.2"): ">=3.8"}
    problems = package_problems(
        _package("numpy==2.4.6", "pyarrow==14.0.2", "unknown-lib==1.0"),
        GPU_310,
        FIELD,
        requires_python_of=lambda name, version: table.get((name, version)),
    )
    assert _codes(problems) == ["package-pin-python"]
    assert problems[0].value == "numpy==2.4.6"


def test_requires_python_and_markers_are_judged_with_the_image_python() -> None:
    assert _codes(package_problems(_package(python=">=3.11"), GPU_310, FIELD)) == ["package-python"]
    skipped = _package('torch==9.9 ; python_version >= "3.11"', 'torch==9.9 ; extra == "gpu"')
    assert package_problems(skipped, GPU_310, FIELD) == []


def test_requirement_replacing_a_package_the_image_ships_is_a_warning() -> None:
    (problem,) = package_problems(_package("pandas<2"), GPU_310, FIELD)
    assert problem.severity == "warning" and problem.code == "package-replaces"
    assert "pandas 2.2.3" in problem.message


def test_executor_image_must_be_a_prebuilt_training_image() -> None:
    (problem,) = executor_image_problems(
        "europe-west4-docker.pkg.dev/p/r/trainer:1", "executorImageUri", today=BEFORE_RETIREMENT
    )
    assert problem.severity == "error" and problem.code == "executor-image"
    assert "You must use an image from this list" in problem.message
    unknown = executor_image_problems(
        "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.3-1.py313:latest",
        "executorImageUri",
        today=BEFORE_RETIREMENT,
    )
    assert _codes(unknown) == ["executor-image-unknown"]


def test_executor_image_past_its_end_of_patch_is_a_warning_and_past_its_availability_an_error() -> (
    None
):
    assert executor_image_problems(GPU_310, "f", today=dt.date(2025, 1, 1)) == []
    unpatched = executor_image_problems(GPU_310, "f", today=dt.date(2025, 8, 1))
    assert _codes(unpatched) == ["executor-image-unpatched"]
    (retired,) = executor_image_problems(GPU_310, "f", today=dt.date(2026, 12, 1))
    assert retired.severity == "error" and "2026-07-24" in retired.message


def _wheel(folder: Path, metadata: str) -> Path:
    path = folder / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo-1.0.dist-info/METADATA", metadata)
        archive.writestr("demo/__init__.py", "")
    return path


def test_read_package_metadata_from_a_wheel_an_sdist_and_a_project(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path,
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Python: >=3.11\n"
        'Requires-Dist: numpy==2.4.6\nRequires-Dist: rich ; extra == "ui"\n',
    )
    read = read_package_metadata(wheel)
    assert (read.name, read.requires_python) == ("demo", ">=3.11")
    assert read.requires_dist == ("numpy==2.4.6", 'rich ; extra == "ui"')
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "2.0"\nrequires-python = ">=3.10"\n'
        'dependencies = ["pyarrow>=14"]\n[project.optional-dependencies]\nx = ["torch"]\n'
    )
    from_project = read_package_metadata(project)
    assert from_project.requires_dist == ("pyarrow>=14", 'torch ; extra == "x"')
    sdist = tmp_path / "demo-2.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(project / "pyproject.toml", arcname="demo-2.0/pyproject.toml")
    assert read_package_metadata(sdist).requires_python == ">=3.10"
    with pytest.raises(BuildError, match="not a wheel"):
        read_package_metadata(tmp_path / "notes.txt")


def test_read_package_metadata_joins_an_extras_own_marker_with_the_extra(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "2.0"\n[project.optional-dependencies]\n'
        "serve = [\"uvloop>=0.19; sys_platform != 'win32'\"]\n"
    )
    metadata = read_package_metadata(project)
    assert metadata.requires_dist == (
        "uvloop>=0.19 ; (sys_platform != 'win32') and extra == \"serve\"",
    )
    assert package_problems(metadata, TRAINING.executor_image_uri, FIELD) == []


def test_package_compat_alternatives_name_no_example_file() -> None:
    # The advice reaches every team's preflight: it may not point at one example's Dockerfile.
    sklearn = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-6:latest"
    problems = [
        *executor_image_problems(sklearn, "f", today=dt.date(2026, 1, 1)),  # unpatched
        *executor_image_problems(sklearn, "f", today=dt.date(2026, 12, 1)),  # retired
        *package_problems(_package(python=">=3.11"), sklearn, FIELD),
    ]
    assert _codes(problems) == [
        "executor-image-unpatched",
        "executor-image-retired",
        "package-python",
    ]
    for problem in problems:
        assert any("custom container (containerSpec)" in a for a in problem.alternatives)
        assert not any("trainer" in a for a in problem.alternatives), problem.alternatives

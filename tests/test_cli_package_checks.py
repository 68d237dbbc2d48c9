"""Which code's modules preflight checks: the source a run builds its package from, or whose
Dockerfile installs it, read where it is or where a local run keeps Cloud Storage files;
nothing for a package built elsewhere (``package_uri``) or an image that keeps its code its
own way."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, example_module
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.package_checks import module_problems
from vertex_retrain.cli.preflight_checks import Settings, local_run_problems, pipeline_problems

SOURCE = str(DRINK_SHOPS / "trainer")
MISSPELT = {"training_code": "python_package", "source_uri": SOURCE,
            "training_module": "trainer.task", "evaluation_module": "trainer.evalute"}  # fmt: skip


def _fields(problems: list) -> list[str]:
    return [p.field for p in problems]


def test_module_problems_check_every_module_parameter_of_a_package_run() -> None:
    assert _fields(module_problems(MISSPELT)) == ["--param evaluation_module"]
    both = {**MISSPELT, "training_module": "trainer.tsk"}
    assert _fields(module_problems(both)) == [
        "--param evaluation_module",
        "--param training_module",
    ]


@pytest.mark.parametrize(
    "change",
    [{"training_code": "custom"}, {"package_uri": "gs://b/t-1.0-py3-none-any.whl"},
     {"source_uri": ""}, {"source_uri": str(DRINK_SHOPS / "trainer" / "task.py")},
     {"source_uri": "gs://nobody-has-this-bucket/src"}],
    ids=["unknown-code", "built-package", "no-source", "source-is-a-file", "source-not-here"],
)  # fmt: skip
def test_module_problems_say_nothing_without_the_source_the_jobs_run(
    root: Path, change: dict[str, Any]
) -> None:
    assert module_problems({**MISSPELT, **change}) == []


def test_module_problems_read_a_gs_source_where_local_runs_keep_it(root: Path) -> None:
    kept = root / "gcs" / "b" / "src"
    shutil.copytree(DRINK_SHOPS / "trainer", kept, ignore=shutil.ignore_patterns("*.egg-info"))
    assert _fields(module_problems({**MISSPELT, "source_uri": "gs://b/src"})) == [
        "--param evaluation_module"
    ]


def _source(tmp_path: Path, **dockerfiles: str) -> str:
    """A copy of the drink shops' trainer with `dockerfiles` (file name -> text) in it."""
    copy = tmp_path / "trainer"
    shutil.copytree(DRINK_SHOPS / "trainer", copy, ignore=shutil.ignore_patterns("*.egg-info"))
    for name, text in dockerfiles.items():
        (copy / name).write_text(text, encoding="utf-8")
    return str(copy)


INSTALLS = 'FROM python:3.12-slim\nCOPY . /src/t\nRUN pip install "/src/t[framework]"\n'
ON_PATH = 'FROM python:3.12-slim\nCOPY . /app\nWORKDIR /app\nENTRYPOINT ["python"]\n'


def test_module_problems_check_a_container_whose_dockerfile_installs_the_source(
    tmp_path: Path,
) -> None:
    container = {**MISSPELT, "training_code": "container"}
    assert _fields(module_problems(container)) == ["--param evaluation_module"]  # the examples'
    source = _source(tmp_path, Dockerfile=ON_PATH, **{"Dockerfile.pkg": INSTALLS})
    # An image that keeps the source on its own path: where python -m looks is its business.
    assert module_problems({**container, "source_uri": source}) == []
    chosen = {**container, "source_uri": source, "dockerfile": "Dockerfile.pkg"}
    assert _fields(module_problems(chosen)) == ["--param evaluation_module"]


@pytest.mark.parametrize("dockerfile", ["../Dockerfile", "Dockerfile.missing", "Dockerfile.big"])
def test_module_problems_say_nothing_of_a_dockerfile_they_do_not_read(
    tmp_path: Path, dockerfile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.cli import package_checks

    (tmp_path / "Dockerfile").write_text(INSTALLS, encoding="utf-8")  # outside the source
    source = _source(tmp_path, **{"Dockerfile.big": INSTALLS})
    monkeypatch.setattr(package_checks, "_DOCKERFILE_BYTES", len(INSTALLS) - 1)
    arguments = {**MISSPELT, "training_code": "container", "source_uri": source}
    assert module_problems({**arguments, "dockerfile": dockerfile}) == []
    monkeypatch.setattr(package_checks, "_DOCKERFILE_BYTES", len(INSTALLS))
    assert bool(module_problems({**arguments, "dockerfile": "Dockerfile.big"}))


@pytest.fixture(scope="module")
def weekly() -> dict[str, Any]:
    return compile_to_dict(example_module(DRINK_SHOPS, "pipelines").weekly)


@pytest.mark.parametrize(
    "check", [local_run_problems, lambda s, a: pipeline_problems(s, a, Settings())]
)
def test_preflight_and_local_run_checks_include_the_module_check(
    weekly: dict[str, Any], check: Any
) -> None:
    arguments = {**default_arguments(weekly), **MISSPELT}
    assert "--param evaluation_module" in _fields(check(weekly, arguments))
    right = {**arguments, "evaluation_module": "trainer.evaluate"}
    assert "--param evaluation_module" not in _fields(check(weekly, right))

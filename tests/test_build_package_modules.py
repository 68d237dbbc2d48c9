"""``python -m MODULE`` checked against a package's source before any step runs: refused when
the source holds MODULE's top-level package but not the rest of its path, warned when the
top-level name is not in the source, passed for each layout the build packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.examples import DAILY_DEMAND, DRINK_SHOPS, example_module
from vertex_retrain.build.package_modules import module_problems

FIELD = "--param evaluation_module"


def _project(root: Path, pyproject: str, *files: str) -> Path:
    """A project folder with `pyproject` and empty `files` (posix paths)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")
    return root


MAPPED = '[project]\nname = "t"\n[tool.setuptools]\npackage-dir = { "trainer" = "." }\n'
"""The examples' layout: the project folder is the package ``trainer``."""


def _codes(problems: list) -> list[tuple[str, str]]:
    return [(p.severity, p.code) for p in problems]


@pytest.mark.parametrize(
    ("example", "source"), [(DRINK_SHOPS, "trainer"), (DAILY_DEMAND, "demand_forecast")]
)
def test_module_problems_pass_both_examples_modules(example: Path, source: str) -> None:
    common = example_module(example, "pipelines").COMMON
    for name in ("training_module", "evaluation_module"):
        assert module_problems(example / source, common[name], name) == []


def test_module_problems_refuse_a_misspelt_module_of_a_mapped_package(tmp_path: Path) -> None:
    source = _project(tmp_path / "t", MAPPED, "__init__.py", "task.py", "evaluate.py")
    assert module_problems(source, "trainer.evaluate", FIELD) == []
    (problem,) = module_problems(source, "trainer.evalute", FIELD)
    assert (problem.severity, problem.code) == ("error", "module-missing")
    assert (problem.field, problem.value) == (FIELD, "trainer.evalute")
    assert str(source / "evalute.py") in problem.message
    assert problem.alternatives == ("trainer.evaluate",)


def test_module_problems_follow_the_src_layout(tmp_path: Path) -> None:
    source = _project(tmp_path / "p", '[project]\nname = "p"\n', "src/pkg/__init__.py",
                      "src/pkg/jobs/__init__.py", "src/pkg/jobs/train.py")  # fmt: skip
    assert module_problems(source, "pkg.jobs.train", FIELD) == []
    (problem,) = module_problems(source, "pkg.job.train", FIELD)
    assert problem.code == "module-missing"
    assert f"{source / 'src' / 'pkg' / 'job'} is not a folder" in problem.message
    assert problem.alternatives == ("pkg.jobs",)


def test_module_problems_follow_a_root_package_dir(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "p"\n[tool.setuptools]\npackage-dir = { "" = "lib" }\n'
    source = _project(tmp_path / "p", pyproject, "lib/pkg/__init__.py", "lib/pkg/task.py",
                      "pkg/__init__.py")  # fmt: skip
    assert module_problems(source, "pkg.task", FIELD) == []
    # The same name at the root is not what the build packages.
    (problem,) = module_problems(
        _project(tmp_path / "q", pyproject, "pkg/task.py"), "pkg.task", FIELD
    )
    assert (problem.severity, problem.code) == ("warning", "module-not-in-source")


def test_module_problems_take_a_flat_layout_module_and_a_package_with_main(tmp_path: Path) -> None:
    source = _project(tmp_path / "p", '[project]\nname = "p"\n', "task.py",
                      "pkg/__init__.py", "pkg/cli/__main__.py", "pkg/lib/__init__.py")  # fmt: skip
    assert module_problems(source, "task", FIELD) == []
    assert module_problems(source, "pkg.cli", FIELD) == []
    # A package without __main__.py cannot be run with -m, at the top level or below it.
    (top,) = module_problems(source, "pkg", FIELD)
    assert top.code == "module-missing" and "__main__.py" in top.message
    (below,) = module_problems(source, "pkg.lib", FIELD)
    assert below.code == "module-missing"
    assert below.alternatives == ("pkg.cli",)  # the only thing -m can run there


def test_module_problems_warn_of_a_top_level_name_the_source_lacks(tmp_path: Path) -> None:
    source = _project(tmp_path / "t", MAPPED, "__init__.py", "task.py")
    (problem,) = module_problems(source, "traner.task", FIELD)
    assert (problem.severity, problem.code) == ("warning", "module-not-in-source")
    assert "dependencies" in problem.message


def test_module_problems_offer_close_top_level_names(tmp_path: Path) -> None:
    source = _project(tmp_path / "p", '[project]\nname = "p"\n', "trainer/__init__.py",
                      "tools/__init__.py", "setup_helpers.py")  # fmt: skip
    (problem,) = module_problems(source, "trainr.task", FIELD)
    assert problem.alternatives == ("trainer",)


def test_module_problems_take_a_bare_package_folder_by_its_name(tmp_path: Path) -> None:
    # No pyproject: the build packages the folder as the package named after it.
    source = tmp_path / "mytrainer"
    source.mkdir()
    (source / "__init__.py").write_text("")
    (source / "task.py").write_text("")
    assert module_problems(source, "mytrainer.task", FIELD) == []
    assert module_problems(source, "mytrainer.tsk", FIELD)[0].code == "module-missing"
    assert module_problems(source, "other.task", FIELD)[0].code == "module-not-in-source"


@pytest.mark.parametrize("name", ["trainer..task", "trainer-x.task", "trainer.task.py", ""])
def test_module_problems_refuse_what_is_not_a_module_name(tmp_path: Path, name: str) -> None:
    source = _project(tmp_path / "t", MAPPED, "__init__.py", "task.py")
    (problem,) = module_problems(source, name, FIELD)
    assert (problem.severity, problem.code) == ("error", "module-name")
    assert problem.alternatives == (
        ("trainer.task",) if name.endswith(".py") else ("mypackage.task",)
    )


def test_module_problems_read_a_bounded_part_of_a_huge_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.build import package_modules

    monkeypatch.setattr(package_modules, "_LISTED", 3)
    source = _project(tmp_path / "t", MAPPED, *[f"m{i:02}.py" for i in range(10)])
    (problem,) = module_problems(source, "trainer.zz", FIELD)
    # Only the first three entries read are offered; without the bound, all ten would be.
    assert len(problem.alternatives) <= 3
    monkeypatch.setattr(package_modules, "_LISTED", 100)
    (unbounded,) = module_problems(source, "trainer.zz", FIELD)
    assert len(unbounded.alternatives) == package_modules._SHOWN


def test_module_problems_ignore_an_unreadable_pyproject(tmp_path: Path) -> None:
    # The build reports a broken pyproject.toml; here the flat layout is assumed.
    source = _project(tmp_path / "p", "[project\n", "pkg/__init__.py", "pkg/task.py")
    assert module_problems(source, "pkg.task", FIELD) == []


def test_module_problems_do_not_read_an_oversized_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.build import package_modules

    source = _project(tmp_path / "t", MAPPED, "__init__.py", "task.py")
    monkeypatch.setattr(package_modules, "_PYPROJECT_BYTES", len(MAPPED))
    assert module_problems(source, "trainer.task", FIELD) == []  # read: at the bound
    monkeypatch.setattr(package_modules, "_PYPROJECT_BYTES", len(MAPPED) - 1)
    # Not read: no package-dir, so 'trainer' is not found in the source.
    assert module_problems(source, "trainer.task", FIELD)[0].code == "module-not-in-source"

"""Tests that start kfp.local themselves leave nothing in the machine's temporary directory
(tests/kfp_local_session.py)."""

# No `from __future__ import annotations`: kfp reads the component's annotations as types.

import ast
import os
import tempfile
from pathlib import Path

import pytest
from kfp import dsl
from kfp.local.config import LocalExecutionConfig

from tests.kfp_local_session import init_kfp_local, task_temp_files_in

TESTS = Path(__file__).resolve().parent


def test_init_kfp_local_keeps_its_workspace_beside_the_pipeline_root_not_in_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine_tmp = tmp_path / "machine-tmp"
    machine_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(machine_tmp))
    workspace = init_kfp_local(tmp_path / "run" / "pipeline-root")
    config = LocalExecutionConfig.instance
    assert config is not None
    assert workspace == tmp_path / "run" / "kfp-workspace" and workspace.is_dir()
    assert config.workspace_root == str(workspace)
    assert config.pipeline_root == str(tmp_path / "run" / "pipeline-root")
    # kfp.local given no workspace makes a kfp-workspace-* folder here.
    assert list(machine_tmp.iterdir()) == []


@pytest.mark.parametrize("raise_on_error", [True, False])
def test_init_kfp_local_passes_raise_on_error(tmp_path: Path, raise_on_error: bool) -> None:
    init_kfp_local(tmp_path / "pipeline-root", raise_on_error=raise_on_error)
    assert LocalExecutionConfig.instance is not None
    assert LocalExecutionConfig.instance.raise_on_error is raise_on_error


def test_init_kfp_local_raises_on_error_by_default(tmp_path: Path) -> None:
    init_kfp_local(tmp_path / "pipeline-root", raise_on_error=False)
    init_kfp_local(tmp_path / "pipeline-root")
    assert LocalExecutionConfig.instance is not None
    assert LocalExecutionConfig.instance.raise_on_error is True


def _test_sources() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in sorted(TESTS.rglob("*.py"))]


def test_tests_start_kfp_local_only_through_init_kfp_local() -> None:
    direct = [
        f"{path.name}:{node.lineno}"
        for path, text in _test_sources()
        if path.name != "kfp_local_session.py" and ".init(" in text
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "init"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "local"
    ]
    assert direct == [], "start kfp.local with tests.kfp_local_session.init_kfp_local"


def test_task_temp_files_in_points_every_temp_variable_and_keeps_this_process_s_own(
    tmp_path: Path,
) -> None:
    own = tempfile.gettempdir()
    with pytest.MonkeyPatch.context() as env:
        folder = task_temp_files_in(env, tmp_path / "tasks-tmp")
        assert folder.is_dir()
        assert os.environ["TMPDIR"] == os.environ["TMP"] == os.environ["TEMP"] == str(folder)
        assert tempfile.gettempdir() == own
    assert os.environ.get("TMPDIR") != str(folder)  # restored with the monkeypatch


@dsl.component(base_image="python:3.11")
def _double(number: int) -> int:
    return 2 * number


def test_kfp_local_task_leaves_nothing_in_the_machine_s_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine_tmp = tmp_path / "machine-tmp"  # stands in for /tmp, for this process and tasks
    machine_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(machine_tmp))
    monkeypatch.setenv("TMPDIR", str(machine_tmp))
    task_temp_files_in(monkeypatch, tmp_path / "tmp")
    init_kfp_local(tmp_path / "pipeline-root")
    assert _double(number=2).output == 4
    assert list(machine_tmp.iterdir()) == []
    # The task's program folder (kfp's `mktemp -d`) went where the test put it.
    (program,) = (tmp_path / "tmp").iterdir()
    assert program.name.startswith("tmp."), program

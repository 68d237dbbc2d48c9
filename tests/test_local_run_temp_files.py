"""A local run leaves no temporary files: kfp.local's per-task ``mktemp -d`` folder (with its
``ephemeral_component.py``) lands in the run's own folder under the root, removed at the end."""

# No `from __future__ import annotations`: kfp reads the component's annotations as types.

import io
import os
from pathlib import Path

import pytest
from kfp import dsl

from vertex_retrain import run_local
from vertex_retrain.backends.local.kfp_adapter.task_temp import tasks_temp_dir
from vertex_retrain.backends.local.lifeline import identity


@dsl.component(base_image="python:3.11")
def double(number: int) -> int:
    return 2 * number


@dsl.pipeline(name="temp-files")
def two_tasks(number: int = 2) -> None:
    double(number=double(number=number).output)


def test_local_run_leaves_nothing_in_the_temporary_directory(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_tmp = tmp_path / "system-tmp"  # what the tasks would use as the machine's /tmp
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    outcome = run_local(two_tasks, {}, cache=False, console=io.StringIO())
    assert outcome.succeeded, outcome.log_path.read_text()
    assert list(system_tmp.iterdir()) == []
    assert list((root / "tmp").iterdir()) == []
    assert os.environ["TMPDIR"] == str(system_tmp)  # restored


def test_tasks_temp_dir_removes_a_killed_run_s_folder_and_keeps_a_live_one(root: Path) -> None:
    dead = root / "tmp" / "run-999999999-1-abc"  # no such pid
    dead.mkdir(parents=True)
    (dead / "ephemeral_component.py").write_text("x = 1\n")
    me = identity()
    live = root / "tmp" / f"run-{me['pid']}-{me['start_time']}-other"
    live.mkdir()
    with tasks_temp_dir(root) as folder:
        assert os.environ["TMPDIR"] == os.environ["TMP"] == os.environ["TEMP"] == str(folder)
        (folder / "left.txt").write_text("by a task\n")
    assert not dead.exists() and live.is_dir() and not folder.exists()


def test_local_run_keeps_kfp_s_workspace_under_the_local_root(root: Path) -> None:
    from kfp.local.config import LocalExecutionConfig

    outcome = run_local(two_tasks, {}, cache=False, console=io.StringIO())
    assert outcome.succeeded, outcome.log_path.read_text()
    # Without one, kfp.local makes an empty kfp-workspace-* folder in the machine's /tmp.
    workspace = Path(LocalExecutionConfig.instance.workspace_root)  # type: ignore[union-attr]
    assert workspace == root / "kfp-workspace"

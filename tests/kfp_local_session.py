"""kfp.local sessions for tests that run components through kfp's own ``local.init``, leaving
nothing in the machine's temporary directory.

kfp.local given no workspace makes a ``kfp-workspace-*`` folder there, and each task it starts
writes its program into a ``mktemp -d`` folder of ``TMPDIR``; nothing removes either. The
product's local runner keeps both under the local root; a test keeps them beside its pipeline
root, under its own temporary folder.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from kfp import local

from vertex_retrain.backends.local.jobs.job_sandbox import TEMP_VARIABLES


def init_kfp_local(pipeline_root: Path, raise_on_error: bool = True) -> Path:
    """Starts a kfp.local session (subprocess runner, no venv) writing under ``pipeline_root``.

    Args:
        pipeline_root: Where the tasks' outputs go; the workspace is made beside it.
        raise_on_error: Whether a failed task raises (kfp's own default: yes).

    Returns:
        The session's workspace folder, ``<pipeline_root's parent>/kfp-workspace``.
    """
    workspace = pipeline_root.parent / "kfp-workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    local.init(
        runner=local.SubprocessRunner(use_venv=False),
        pipeline_root=str(pipeline_root),
        workspace_root=str(workspace),
        raise_on_error=raise_on_error,
    )
    return workspace


def task_temp_files_in(env: pytest.MonkeyPatch, folder: Path) -> Path:
    """Points the ``TMPDIR`` (``TMP``, ``TEMP``) of the tasks started from now on at ``folder``.

    Args:
        env: The monkeypatch that restores the variables when the test (or module) ends.
        folder: The tasks' temporary directory, made if missing.

    Returns:
        ``folder``.
    """
    tempfile.gettempdir()  # fixes this process's own choice before TMPDIR changes
    folder.mkdir(parents=True, exist_ok=True)
    for name in TEMP_VARIABLES:
        env.setenv(name, str(folder))
    return folder

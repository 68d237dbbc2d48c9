"""A newcomer's first command: `compile.py run train-only --local` with every default.

Nothing exists under the local root: the command generates the sample data (smaller here, to
keep the test short), builds the training package, runs, prints where everything is, writes
nothing outside the local root, leaves no process behind, and writes files the umask allows.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from test_cli_processes import processes_mentioning

from vertex_retrain.cli import local_setup
from vertex_retrain.cli.console import ANSI
from vertex_retrain.cli.main import main

SMALL = {"members": 400, "stores": 8, "weeks": 8, "seed": 3}


@pytest.mark.slow
def test_run_train_only_local_works_on_a_fresh_clone_with_every_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(root))
    monkeypatch.delenv("GCS_FUSE_ROOT", raising=False)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(local_setup, "SAMPLE_SCALE", SMALL)
    gcs_existed = Path("/gcs").exists()
    previous_umask = os.umask(0o022)
    try:
        code = main(["run", "train-only", "--local"])
    finally:
        os.umask(previous_umask)
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("sample data generated at gs://drink-shops-ml/transactions")
    assert lines[1].startswith("training package built from")
    assert "✓ step train-custom-job: done in" in out
    assert "run train-only succeeded in" in out
    run_dir = next((root / "pipeline-root").glob("train-only-*"))
    assert f"pipeline root  {run_dir}" in out
    assert "model          guess-your-order version 1 (aliases challenger, default)" in out
    assert not ANSI.search(out) and "{'" not in out  # no colour codes, no dict reprs
    # Nothing outside the local root; nothing still running; modes follow the umask.
    assert Path("/gcs").exists() == gcs_existed
    assert list(cwd.iterdir()) == []
    assert processes_mentioning(str(root)) == []
    for path in root.rglob("*"):
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o044 == 0o044, f"{path} is {oct(mode)}"
    # A second run finds the data and the package; --json: the summary alone on stdout.
    assert main(["run", "train-only", "--local", "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["state"] == "SUCCEEDED" and summary["model"]["version"] == "2"
    assert summary["pipeline_root"].startswith(str(root / "pipeline-root"))
    assert "sample data generated" not in captured.err and "✓ step" in captured.err

"""A newcomer's first commands on the drink shops' example, as its README gives them.

Nothing exists under the local root: the example's generator writes the sample data into the
chain's local bucket (smaller here, to keep the test short), then `run
examples/drink_shops/pipelines.py:weekly --local` builds the training package, runs, prints
where everything is, writes nothing outside the local root, leaves no process behind, and
writes files the umask allows. The bare template, given none of its team's parameters, is
refused in one line before anything runs.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_processes import processes_mentioning

from tests.examples import DRINK_SHOPS
from vertex_retrain.cli.console import ANSI
from vertex_retrain.cli.main import main

SMALL = ["--members=400", "--stores=8", "--weeks=8", "--seed=3"]
WEEKLY = [
    "run",
    f"{DRINK_SHOPS / 'pipelines.py'}:weekly",
    "--local",
    "--param",
    f"source_uri={DRINK_SHOPS / 'trainer'}",
    "--param",
    'training_args=["--epochs", "1", "--batch_size", "256"]',
]


@pytest.mark.slow
def test_run_the_examples_weekly_pipeline_locally_on_a_fresh_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(root))
    monkeypatch.delenv("GCS_FUSE_ROOT", raising=False)
    monkeypatch.chdir(cwd)
    gcs_existed = Path("/gcs").exists()
    previous_umask = os.umask(0o022)
    try:
        generate = [sys.executable, "-m", "trainer.data", "generate", *SMALL]
        subprocess.run([*generate, "--out=gs://drink-shops-ml/transactions"], check=True)
        code = main(WEEKLY)
    finally:
        os.umask(previous_umask)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "✓ step build: done in" in out
    assert "✓ step train: done in" in out
    assert "run drink-shops-weekly succeeded in" in out
    run_dir = next((root / "pipeline-root").glob("drink-shops-weekly-*"))
    rows = {
        line.split("  ")[0]: line.split("  ", 1)[1].strip()
        for line in out.splitlines()
        if "  " in line
    }
    assert rows["pipeline root"] == str(run_dir), out
    # Registered either way; whether one epoch beats the chain's references is the gate's
    # call (tests/test_pipelines_weekly_local.py), not this plumbing test's.
    assert re.fullmatch(
        r"guess-your-order version 1 \(aliases (champion|challenger), default\)", rows["model"]
    ), rows["model"]
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
    # A second run reuses the cached steps; --json: the summary alone on stdout.
    assert main([*WEEKLY, "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["state"] == "SUCCEEDED"
    assert summary["pipeline_root"].startswith(str(root / "pipeline-root"))
    assert "↺ step build: cached from run" in captured.err


def test_run_of_the_bare_template_names_what_it_needs_and_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    assert main(["run", "weekly-retraining", "--local", "--param", "data_uri=gs://b/d"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "weekly-retraining needs a value for 9 parameter(s) without a default:" in captured.err
    assert "dataset_declaration, evaluation_declaration" in captured.err
    assert "data_uri," not in captured.err  # given
    assert not (tmp_path / "root").exists()

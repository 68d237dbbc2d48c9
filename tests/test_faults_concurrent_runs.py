"""The run lock: one local run per model and root; a killed holder leaves no stale lock.

A second weekly run started beside a working one is refused at once, and the first completes
alone: tests/test_faults_killed_runs.py checks that on its last run (a whole pipeline run,
shared with the killed runs' reconciliation).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vertex_retrain.cli.local_run import RunConflictError, exclusive_model_run

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent


def test_run_lock_is_released_when_its_holder_is_killed(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path\n"
            "from vertex_retrain.cli.local_run import exclusive_model_run\n"
            "with exclusive_model_run(Path(sys.argv[1]), 'recs'):\n"
            "    print('held', flush=True); time.sleep(600)\n",
            str(tmp_path),
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        conflict = pytest.raises(RunConflictError, match=rf"pid {holder.pid}, started")
        with conflict, exclusive_model_run(tmp_path, "recs"):
            pass
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its stdout pipe
    with exclusive_model_run(tmp_path, "recs"):  # no stale lock after a SIGKILL
        assert (tmp_path / "locks" / "run-recs.lock").read_text().startswith(f"pid {os.getpid()}")

"""The leftover-process guard of tests/conftest.py finds what a module leaves running."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.leftover_processes import kill, leftovers, live_processes

SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]


def test_leftover_processes_finds_children_and_orphans_by_local_root(tmp_path: Path) -> None:
    before = live_processes(os.getpid(), tmp_path)
    child = subprocess.Popen(SLEEP)
    # An orphan: started by a short-lived shell, so pytest is not its ancestor; only the
    # local root in its environment ties it to this session.
    orphan_pid = int(
        subprocess.run(
            ["sh", "-c", f"{' '.join(SLEEP[:2])} '{SLEEP[2]}' >/dev/null 2>&1 & echo $!"],
            env={**os.environ, "VERTEX_LOCAL_ROOT": str(tmp_path / "root")},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    try:
        found = leftovers(before, os.getpid(), tmp_path, wait_s=0)
        assert {child.pid, orphan_pid} <= set(found)
        assert "time.sleep(120)" in found[child.pid]
    finally:
        kill({child.pid: "", orphan_pid: ""})
        child.wait()
    assert leftovers(before, os.getpid(), tmp_path, wait_s=10) == {}


def test_leftover_processes_ignores_what_ran_before_and_what_exited(tmp_path: Path) -> None:
    with subprocess.Popen(SLEEP) as earlier:
        before = live_processes(os.getpid(), tmp_path)
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        assert leftovers(before, os.getpid(), tmp_path, wait_s=0) == {}
        earlier.kill()

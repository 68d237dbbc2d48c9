"""The test run's temporary folder (tests/conftest.py) is removed even when the run is
terminated: a SIGTERM ends it as an interrupted run, which still unconfigures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import RUN_TEMP_VARIABLE

REPO = Path(__file__).resolve().parents[1]
WAITING_TEST = """
import os, pathlib, time

def test_waits():
    pathlib.Path(os.environ["REPORT"]).write_text(os.environ["{variable}"])
    time.sleep(120)
"""


def test_conftest_removes_the_run_folder_of_a_terminated_run(tmp_path: Path) -> None:
    (tmp_path / "test_waiting.py").write_text(WAITING_TEST.format(variable=RUN_TEMP_VARIABLE))
    report = tmp_path / "folder.txt"
    env = {k: v for k, v in os.environ.items() if k != RUN_TEMP_VARIABLE}
    env["REPORT"] = str(report)
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), str(tmp_path / "test_waiting.py")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not report.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        folder = Path(report.read_text())
        assert folder.is_dir()  # the run's folder, while the test runs
        run.send_signal(signal.SIGTERM)
        output = run.communicate(timeout=60)[0].decode()
    finally:
        run.kill()
    assert not folder.exists(), output
    assert run.returncode != 0  # interrupted, not passed

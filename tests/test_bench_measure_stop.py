"""bench.measure: a benchmark stopped by SIGTERM stops the command it measures and removes its
temporary folders (a default SIGTERM ended the benchmark at once and left both behind)."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import sys, tempfile
sys.path.insert(0, {root!r})
from bench.measure import exit_on_sigterm, run_measured
if {handler}:
    exit_on_sigterm()
with tempfile.TemporaryDirectory(dir={scratch!r}) as folder:
    hold = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    run_measured([sys.executable, "-c", hold, {pidfile!r}], timeout=120)
"""


def _stopped(tmp_path: Path, handler: bool) -> tuple[int, int, list[Path]]:
    """Starts a benchmark-like process, SIGTERMs it once its command runs; returns its exit
    code, the command's pid and what is left in its scratch folder."""
    scratch, pidfile = tmp_path / "scratch", tmp_path / "pid"
    scratch.mkdir()
    code = SCRIPT.format(
        root=str(ROOT), handler=handler, scratch=str(scratch), pidfile=str(pidfile)
    )
    bench = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not (pidfile.is_file() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    bench.send_signal(signal.SIGTERM)
    returncode = bench.wait(timeout=30)
    return returncode, child, sorted(scratch.iterdir())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_exit_on_sigterm_stops_the_measured_command_and_removes_the_folders(
    tmp_path: Path,
) -> None:
    returncode, child, left = _stopped(tmp_path, handler=True)
    assert returncode == 128 + signal.SIGTERM
    assert not _alive(child)
    assert left == []


def test_without_the_handler_sigterm_leaves_the_folder_and_the_command_behind(
    tmp_path: Path,
) -> None:
    returncode, child, left = _stopped(tmp_path, handler=False)
    try:
        assert returncode == -signal.SIGTERM
        assert _alive(child)  # what the handler is for
        assert len(left) == 1
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def _main_block(tree: ast.Module) -> list[ast.stmt]:
    """The body of the module's ``if __name__ == "__main__":`` block (empty without one)."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return node.body
    return []


def test_every_benchmark_script_stops_its_commands_on_sigterm() -> None:
    scripts = {}
    for path in sorted((ROOT / "bench").glob("bench_*.py")):
        block = _main_block(ast.parse(path.read_text(encoding="utf-8")))
        if block:
            scripts[path.name] = ast.unparse(block[0])
    assert len(scripts) >= 15  # every benchmark runs as `python -m bench.NAME`
    # First, before any command starts: a default SIGTERM left the measured command running
    # on alone and its temporary folders behind (a seed-scale training, 1.6 GB).
    assert {name: first for name, first in scripts.items() if first != "exit_on_sigterm()"} == {}


def test_report_stopped_stops_its_benchmark_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from bench import report
hold = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
report._run_child = (lambda run: lambda argv, timeout: run(
    [sys.executable, "-c", hold, {str(pidfile)!r}], timeout))(report._run_child)
sys.exit(report.main(["--only", "bench_cli", "--out", {str(tmp_path / "b.md")!r}]))
"""
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not (pidfile.is_file() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)  # a default SIGTERM left the benchmark process running
    assert not (tmp_path / "b.md").exists()  # and nothing half-done was written


_IGNORES_SIGINT = (
    "import signal, sys, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(60)"
)


def test_stop_command_ends_a_command_that_ignores_sigint_with_sigterm() -> None:
    from bench.measure import stop_command

    # A command started in the background ignores SIGINT; SIGTERM still ends it, at once.
    proc = subprocess.Popen([sys.executable, "-c", _IGNORES_SIGINT], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    began = time.monotonic()
    stop_command(proc, grace=30)
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - began < 20


def test_stop_command_kills_a_command_that_outlives_its_grace() -> None:
    from bench.measure import stop_command

    stubborn = _IGNORES_SIGINT.replace("signal.SIGINT", "signal.SIGTERM")
    proc = subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    stop_command(proc, grace=0.5)
    assert proc.returncode == -signal.SIGKILL

"""Processes that die with their starter, and the next run's reconciliation, one by one.

Each test starts real processes (`sleep`, small Python programs), kills the process in the
middle with SIGKILL and waits, bounded, for the condition it expects. The whole-run versions
are in test_faults_killed_runs.py and test_faults_deploy.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vertex_retrain.backends.local import lifeline
from vertex_retrain.backends.local.reconcile import reconcile_root

WAIT_S = 30.0


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if lifeline.start_time(pid) is None:
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Pids a test started outside Popen's reach; killed at the end if still there."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if lifeline.start_time(pid) is not None:
            os.kill(pid, signal.SIGKILL)


def _middle(code: str, *args: str) -> tuple[subprocess.Popen[str], list[int]]:
    """Runs `code` in a Python process that prints pids on one line, then waits forever."""
    program = (
        "import os, subprocess, sys, time\nfrom vertex_retrain.backends.local import lifeline\n"
    )
    middle = subprocess.Popen(
        [sys.executable, "-c", program + textwrap.dedent(code) + "\ntime.sleep(300)\n", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert middle.stdout is not None
    return middle, [int(pid) for pid in middle.stdout.readline().split()]


def _kill(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate()


@pytest.mark.parametrize("gcs_namespace", [False, True])
def test_replica_dies_with_the_process_that_started_it(
    started: list[int], tmp_path: Path, gcs_namespace: bool
) -> None:
    # In its /gcs namespace too: the set-up between the wrapper and the program keeps the
    # parent-death signal (and the pid).
    middle, (replica,) = _middle(
        """
        from pathlib import Path
        from vertex_retrain.backends.local.jobs.gcs_namespace import in_gcs_namespace
        argv = ["sleep", "300"]
        if sys.argv[1]:
            argv = in_gcs_namespace(argv, Path(sys.argv[1]))
        argv = lifeline.die_with_parent_argv(argv, os.environ)
        replica = subprocess.Popen(argv, start_new_session=True)
        print(replica.pid, flush=True)
        """,
        str(tmp_path / "root") if gcs_namespace else "",
    )
    started.append(replica)
    try:
        deadline = time.monotonic() + WAIT_S
        while _cmdline(replica) != b"sleep\x00300\x00" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _cmdline(replica) == b"sleep\x00300\x00"  # the wrapper exec'd: same pid
    finally:
        _kill(middle)
    assert _gone(replica)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_die_with_parent_refuses_a_missing_program_up_front() -> None:
    with pytest.raises(FileNotFoundError, match="no-such-program"):
        lifeline.die_with_parent_argv(["no-such-program"], {"PATH": "/usr/bin"})


KEEPER_START = """
launch = lifeline.KeeperLaunch.create(["sleep", "300"], os.environ)
keeper = subprocess.Popen(
    launch.argv, pass_fds=launch.pass_fds, start_new_session=True,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
launch.started(keeper.pid)
if sys.argv[1] == "release":
    lifeline.release(keeper.pid)
print(keeper.pid, flush=True)
"""


def _children(pid: int) -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == pid]


def _pipes(pid: int) -> int:
    fds = Path(f"/proc/{pid}/fd")
    return sum(os.readlink(fd).startswith("pipe:") for fd in fds.iterdir())


@pytest.mark.parametrize("released", [False, True])
def test_leased_server_dies_with_its_deployer_until_released(
    started: list[int], released: bool
) -> None:
    middle, (keeper,) = _middle(KEEPER_START, "release" if released else "keep")
    started.append(keeper)
    _kill(middle)
    if not released:
        assert _gone(keeper), "the keeper outlived its deployer"
        return
    deadline = time.monotonic() + WAIT_S
    while (_pipes(keeper) or not _children(keeper)) and time.monotonic() < deadline:
        time.sleep(0.02)  # until the keeper read the release and started the server
    assert _pipes(keeper) == 0 and _children(keeper), "the keeper never took its release"
    server = _children(keeper)[0]
    started.append(server)
    assert lifeline.alive(keeper, None) and lifeline.alive(server, None)
    os.killpg(keeper, signal.SIGTERM)  # what stop_server does
    assert _gone(server) and _gone(keeper)


def test_keeper_passes_the_server_s_exit_code_and_takes_it_down_when_killed(
    started: list[int],
) -> None:
    exits = lifeline.KeeperLaunch.create([sys.executable, "-c", "raise SystemExit(3)"], os.environ)
    keeper = subprocess.Popen(exits.argv, pass_fds=exits.pass_fds)
    exits.started(keeper.pid)
    try:
        assert keeper.wait() == 3
    finally:
        lifeline.drop_lease(keeper.pid)
    launch = lifeline.KeeperLaunch.create(["sleep", "300"], os.environ)
    keeper = subprocess.Popen(launch.argv, pass_fds=launch.pass_fds)
    launch.started(keeper.pid)
    try:
        deadline = time.monotonic() + WAIT_S
        while not _children(keeper.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        children = _children(keeper.pid)
        assert children, "the keeper never started its server"
        started.extend(children)
        keeper.kill()  # SIGKILL: the keeper cannot pass anything on
    finally:
        keeper.wait()
        lifeline.drop_lease(keeper.pid)
    assert _gone(children[0])


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def test_task_follows_its_run_even_through_a_shell(tmp_path: Path) -> None:
    """kfp.local starts tasks through `sh -c`: the run is the task's grandparent."""
    marker = tmp_path / "got-sigterm"
    task = (
        "import pathlib, signal, sys, time\n"
        "from vertex_retrain.backends.local import lifeline\n"
        f"signal.signal(signal.SIGTERM, lambda *_: (pathlib.Path({str(marker)!r}).touch(),"
        " sys.exit(0)))\n"
        "assert lifeline.bind_to_run()\n"
        "print('bound', flush=True)\n"
        "time.sleep(300)\n"
    )
    run_code = (
        "import os, subprocess, sys, time\n"
        "from pathlib import Path\n"
        "from vertex_retrain.backends.local import lifeline\n"
        f"with lifeline.run_scope(Path({str(tmp_path)!r})):\n"
        f"    subprocess.Popen(['sh', '-c', '{sys.executable} -c \"$0\"; true', {task!r}])\n"
        "time.sleep(300)\n"
    )
    run = subprocess.Popen([sys.executable, "-c", run_code], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stdout.readline().strip() == "bound"
    _kill(run)
    deadline = time.monotonic() + WAIT_S
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker.exists(), "the task did not get SIGTERM when its run died"


def _dead_identity() -> tuple[int, str]:
    """A pid that ran and exited, with a start time no live process can have."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid, "1"


def _sleeper(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "300"], env={**os.environ, **env})


def test_reconcile_stops_leftovers_of_dead_runs_and_ends_their_jobs(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    dead_pid, dead_start = _dead_identity()
    dead_run = f"{dead_pid}:{dead_start}:{root}"
    live_run = lifeline.run_marker(root)
    jobs = {
        "killed-run": {"owner": {"pid": dead_pid, "start_time": dead_start}, "run": dead_run},
        "dead-task": {"owner": {"pid": dead_pid, "start_time": dead_start}, "run": None},
        "running": {"owner": lifeline.identity(), "run": live_run},
        "finished": {"owner": {"pid": dead_pid, "start_time": dead_start}, "run": dead_run},
    }
    for job, fields in jobs.items():
        folder = root / "jobs" / job
        folder.mkdir(parents=True)
        state = "JOB_STATE_SUCCEEDED" if job == "finished" else "JOB_STATE_RUNNING"
        (folder / "state.json").write_text(json.dumps({"job_id": job, "state": state, **fields}))
    doomed = [
        _sleeper({lifeline.RUN_ENV: dead_run}),
        _sleeper({lifeline.JOB_ENV: str(root / "jobs" / "dead-task")}),
    ]
    spared = [
        _sleeper({lifeline.RUN_ENV: live_run}),
        _sleeper({lifeline.RUN_ENV: f"{dead_pid}:{dead_start}:{root / 'other-root'}"}),
        _sleeper({lifeline.JOB_ENV: str(root / "jobs" / "running")}),
    ]
    try:
        done = reconcile_root(root, grace_s=5.0)
        assert all(p.poll() is not None for p in doomed)  # stopped and reaped before it returns
        assert all(p.poll() is None for p in spared)
    finally:
        for process in doomed + spared:
            process.kill()
            process.wait()
    assert sorted(done.processes) == sorted(p.pid for p in doomed)
    assert done.jobs == {"killed-run": "JOB_STATE_CANCELLED", "dead-task": "JOB_STATE_FAILED"}
    states = {j: json.loads((root / "jobs" / j / "state.json").read_text()) for j in jobs}
    assert states["killed-run"]["state"] == "JOB_STATE_CANCELLED"
    assert f"pipeline run (pid {dead_pid}) was killed" in states["killed-run"]["error"]
    assert "died without recording an end" in states["dead-task"]["error"]
    assert states["running"]["state"] == "JOB_STATE_RUNNING"
    assert states["finished"]["state"] == "JOB_STATE_SUCCEEDED"
    assert done.line() == (
        "reconciled: 2 job(s) left RUNNING by a killed run ended (dead-task -> "
        "JOB_STATE_FAILED, killed-run -> JOB_STATE_CANCELLED); 2 leftover process(es) stopped"
    )
    assert reconcile_root(root).line() == ""  # nothing twice

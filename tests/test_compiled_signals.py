"""Cancelling a task reaches the launcher: the compiled command ``exec``s Python.

The compiled command of a lightweight component is run for real under dash, the ``/bin/sh`` of
Debian-based images, and only the shell is sent SIGTERM (what Vertex does when a pipeline is
cancelled): the component's Python process must get it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.data.components.signal_components import wait_for_sigterm, write_marker
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.components.exec_launch import exec_script, with_exec_launcher
from vertex_retrain.pipelines import catalog

VENV_BIN = str(Path(sys.executable).parent)


def _dash() -> str:
    """dash itself: /bin/sh when it is dash (Debian, the component images), else `dash`."""
    if Path(os.path.realpath("/bin/sh")).name == "dash":
        return "/bin/sh"
    found = shutil.which("dash")
    if found is None:
        pytest.fail("this test needs dash, the /bin/sh of Debian images: apt-get install -y dash")
    return found


def _command(spec: dict[str, Any], tmp_path: Path) -> tuple[list[str], Path]:
    """The compiled command and args of the one executor, with its placeholders filled in."""
    (executor,) = spec["deploymentSpec"]["executors"].values()
    container = executor["container"]
    marker = tmp_path / "sigterm.txt"
    executor_input = {
        "inputs": {"parameterValues": {"marker": str(marker)}},
        "outputs": {"outputFile": str(tmp_path / "executor_output.json")},
    }
    args = [json.dumps(executor_input) if a == "{{$}}" else a for a in container["args"]]
    command = list(container["command"])
    assert command[0] == "sh"
    return [_dash(), *command[1:], *args], marker


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> str:
    while not path.exists():
        if process.poll() is not None:
            out = process.stdout.read().decode() if process.stdout else ""
            pytest.fail(f"the component exited ({process.returncode}) early:\n{out}")
        time.sleep(0.05)
    # Written then read: wait until the writer has put the whole pid there.
    while not (text := path.read_text()):
        time.sleep(0.05)
    return text


def _start(argv: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_compiled_component_under_dash_passes_sigterm_to_python(tmp_path: Path) -> None:
    argv, marker = _command(compile_to_dict(wait_for_sigterm), tmp_path)
    process = _start(argv)
    try:
        python_pid = int(_wait_for(Path(f"{marker}.ready"), process))
        # exec: Python is the process that was started (the shell's pid), not its child.
        assert python_pid == process.pid
        os.kill(process.pid, signal.SIGTERM)  # the shell's pid, nothing else
        assert process.wait(timeout=60) == 0
        assert marker.read_text() == f"SIGTERM in {process.pid}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_kfp_command_without_exec_leaves_python_deaf_to_the_shells_sigterm(
    tmp_path: Path,
) -> None:
    """The fault being fixed: KFP's own command under dash loses the signal."""
    spec = compile_to_dict(wait_for_sigterm)
    (executor,) = spec["deploymentSpec"]["executors"].values()
    script = executor["container"]["command"][2]
    executor["container"]["command"][2] = script.replace("exec python3", "python3")
    argv, marker = _command(spec, tmp_path)
    process = _start(argv)
    python_pid = 0
    try:
        python_pid = int(_wait_for(Path(f"{marker}.ready"), process))
        assert python_pid != process.pid  # Python runs as the shell's child
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=60)  # the shell goes...
        os.kill(python_pid, 0)  # ...and Python is still running, never told
        assert not marker.exists()
    finally:
        if python_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(python_pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
            process.wait()


def test_exec_launcher_rewrites_every_lightweight_component_of_the_pipelines() -> None:
    for name in catalog.PIPELINES:
        spec = compile_to_dict(catalog.pipeline_by_name(name))
        for executor_name, executor in spec["deploymentSpec"]["executors"].items():
            command = executor["container"].get("command", [])
            if "kfp.dsl.executor_main" in " ".join(command):
                assert "exec python3 -m kfp.dsl.executor_main" in command[2], executor_name


def test_components_exec_their_executor_when_compiled_with_plain_kfp(tmp_path: Path) -> None:
    # Another team compiles its own pipeline from our Python components with KFP's compiler,
    # not ours: the exec form must already be in the components themselves.
    import yaml
    from kfp import compiler, dsl

    from vertex_retrain.components.fixed_hyperparameters import fixed_hyperparameters

    @dsl.pipeline(name="theirs")
    def theirs():  # no annotation: this module postpones them, KFP would read "None"
        fixed_hyperparameters(values={"lr": 0.1})

    path = tmp_path / "theirs.yaml"
    compiler.Compiler().compile(theirs, str(path))
    spec = yaml.safe_load(path.read_text())
    (executor,) = spec["deploymentSpec"]["executors"].values()
    assert "exec python3 -m kfp.dsl.executor_main" in executor["container"]["command"][2]


def test_exec_script_execs_the_pip_hand_over_and_is_idempotent() -> None:
    script = 'pip install kfp && "$0" "$@"\n'
    assert exec_script(script) == 'pip install kfp && exec "$0" "$@"\n'
    launch = '\n_KFP_RUNTIME=true python3 -m kfp.dsl.executor_main --x "$@"\n'
    once = exec_script(launch)
    assert once == '\n_KFP_RUNTIME=true exec python3 -m kfp.dsl.executor_main --x "$@"\n'
    assert exec_script(once) == once


def test_with_exec_launcher_leaves_container_components_and_the_input_alone() -> None:
    spec = {
        "deploymentSpec": {
            "executors": {
                "gcpc": {"container": {"command": ["python3", "-u", "-m", "gcpc.launcher"]}},
                "light": {
                    "container": {
                        "command": ["sh", "-ec", "python3 -m kfp.dsl.executor_main", "src"]
                    }
                },
            }
        }
    }
    updated = with_exec_launcher(spec)
    assert (
        updated["deploymentSpec"]["executors"]["gcpc"]
        == spec["deploymentSpec"]["executors"]["gcpc"]
    )
    assert updated["deploymentSpec"]["executors"]["light"]["container"]["command"][2] == (
        "exec python3 -m kfp.dsl.executor_main"
    )
    assert spec["deploymentSpec"]["executors"]["light"]["container"]["command"][2] == (
        "python3 -m kfp.dsl.executor_main"
    )


def test_kfp_local_subprocess_runner_runs_the_exec_command(tmp_path: Path) -> None:
    """kfp.local's SubprocessRunner accepts the rewritten command and runs it to the end."""
    from kfp.local import subprocess_task_handler as handler

    spec = compile_to_dict(write_marker)
    (executor,) = spec["deploymentSpec"]["executors"].values()
    marker = tmp_path / "ran.txt"
    executor_input = {
        "inputs": {"parameterValues": {"marker": str(marker)}},
        "outputs": {"outputFile": str(tmp_path / "out.json")},
    }
    args = [
        json.dumps(executor_input) if a == "{{$}}" else a for a in executor["container"]["args"]
    ]
    full = [*executor["container"]["command"], *args]
    runner = handler.SubprocessTaskHandler.__new__(handler.SubprocessTaskHandler)
    runner.validate_not_container_component(full)
    runner.validate_not_containerized_python_component(full)
    command = handler.replace_python_executable(full, sys.executable)
    assert f"exec {sys.executable} -m kfp.dsl.executor_main" in command[2]
    assert handler.run_local_subprocess(command) == 0
    assert marker.read_text() == "ran"

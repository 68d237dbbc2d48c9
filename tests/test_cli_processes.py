"""Nothing a command starts outlives it: `run --local` (even on SIGTERM) and `serve` (SIGTERM,
Ctrl-C); `endpoints stop` and `endpoints undeploy` stop and remove what a run left deployed."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from data.serving.support import register_echo

from tests.examples import DRINK_SHOPS
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.cli import processes
from vertex_retrain.cli.registry_commands import cli_endpoints

REPO = Path(__file__).resolve().parent.parent


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line or environment mentions ``text`` (a tmp root)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        if int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text()
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if state[state.rfind(")") + 2 :].startswith("Z"):
            continue
        if text.encode() in blob:
            found.append(int(entry.name))
    return found


def _wait_until(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "root"
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(root))
    return root


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "VERTEX_LOCAL_ROOT": str(root), "PYTHONPATH": str(REPO)}


def test_descendants_lists_children_and_grandchildren_and_stop_ends_them() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
         "time.sleep(60)"],
    )  # fmt: skip
    spare = frozenset(processes.descendants()) - {child.pid}
    try:
        assert _wait_until(lambda: len(set(processes.descendants()) - spare) == 2, 20)
        tree = set(processes.descendants()) - spare
        assert child.pid in tree
        assert processes.stop_descendants(grace_s=5, spare=spare) == 2
        assert not set(processes.descendants()) & tree
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


@pytest.mark.slow
def test_run_local_leaves_no_process_when_sigterm_arrives_during_training(
    root: Path, tmp_path: Path
) -> None:
    from trainer.data import WorldConfig, generate

    generate(WorldConfig(members=400, stores=8, weeks=8, seed=3), str(
        root / "gcs" / "drink-shops-ml" / "transactions"))  # fmt: skip
    run = subprocess.Popen(
        [sys.executable, str(REPO / "compile.py"), "run", f"{DRINK_SHOPS / 'pipelines.py'}:weekly",
         "--local", "--param", f"source_uri={DRINK_SHOPS / 'trainer'}",
         "--param", 'training_args=["--epochs", "100000"]'],
        cwd=tmp_path, env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert run.stdout is not None
        for line in run.stdout:
            if "step train: running" in line:
                break
        # The replica is a grandchild of the command: wait until it runs, then stop the command.
        assert _wait_until(lambda: len(processes_mentioning(str(root))) >= 3, 120)
        run.send_signal(signal.SIGTERM)
        rest = run.communicate(timeout=60)[0]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 130, rest
    assert "run: interrupted" in rest and "Traceback" not in rest
    assert processes_mentioning(str(root)) == []


def _deployed_endpoint() -> None:
    registry = ModelRegistry()
    register_echo(registry, "a", 5)
    register_echo(registry, "b", 7)
    endpoints = LocalEndpoints()
    endpoints.get_or_create("ep")
    endpoints.deploy("ep", "recs", "1")
    endpoints.deploy("ep", "recs", "2", traffic_percentage=50)


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_its_model_servers_on_sigterm_and_ctrl_c(
    root: Path, tmp_path: Path, stop_signal: signal.Signals
) -> None:
    _deployed_endpoint()
    cli_endpoints(argparse.Namespace(action="stop", endpoint=None, all=True), out=io.StringIO())
    assert processes_mentioning(str(root)) == []
    serve = subprocess.Popen(
        [sys.executable, str(REPO / "compile.py"), "serve", "ep", "--port", "0"],
        cwd=tmp_path, env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        banner = serve.stdout.readline()
        assert "serving endpoint 'ep'" in banner, banner
        assert len(processes_mentioning(str(root))) >= 3  # serve and two model servers
        serve.send_signal(stop_signal)
        rest = serve.communicate(timeout=30)[0]
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    assert serve.returncode == 0, rest
    assert "stopped 2 model server(s) of ep" in rest and "Traceback" not in rest
    assert processes_mentioning(str(root)) == []
    assert [d.running for d in LocalEndpoints().get("ep").deployed_models] == [False, False]


@pytest.mark.slow
def test_serve_model_servers_die_with_serve_on_sigkill(root: Path, tmp_path: Path) -> None:
    _deployed_endpoint()
    cli_endpoints(argparse.Namespace(action="stop", endpoint=None, all=True), out=io.StringIO())
    serve = subprocess.Popen(
        [sys.executable, str(REPO / "compile.py"), "serve", "ep", "--port", "0"],
        cwd=tmp_path, env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        banner = serve.stdout.readline()
        assert "serving endpoint 'ep'" in banner, banner
        assert "deployed model 1: 50%" in banner and "{" not in banner, banner
        servers = set(processes_mentioning(str(root))) - {serve.pid}
        assert len(servers) >= 2  # two model servers (and their keepers)
        serve.kill()
        serve.wait(timeout=30)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    # No `finally:` ran in serve: only the servers' lease can have stopped them.
    assert _wait_until(lambda: processes_mentioning(str(root)) == [], 30), [
        (pid, Path(f"/proc/{pid}/cmdline").read_bytes()[:200])
        for pid in processes_mentioning(str(root))
    ]


@pytest.mark.slow
def test_endpoints_stop_and_undeploy_commands(root: Path) -> None:
    _deployed_endpoint()
    out = io.StringIO()
    assert cli_endpoints(argparse.Namespace(action="stop", endpoint="ep", all=False), out) == 0
    assert "endpoint ep: 2 model server(s) stopped" in out.getvalue()
    assert "vertex-retrain serve ep" in out.getvalue()  # the command as invoked (main)
    assert processes_mentioning(str(root)) == []
    bad = argparse.Namespace(action="undeploy", endpoint="ep", model="recs@9")
    assert cli_endpoints(bad, io.StringIO()) == 2
    out = io.StringIO()
    undeploy = argparse.Namespace(action="undeploy", endpoint="ep", model="recs@1")
    assert cli_endpoints(undeploy, out) == 0
    assert out.getvalue().startswith(
        "endpoint ep: undeployed recs@1 (deployed model id 1, version 1); traffic now 100% to "
        "deployed model id 2 (version 2)"
    ), out.getvalue()
    listing = io.StringIO()
    assert cli_endpoints(argparse.Namespace(action=None, json=True), listing) == 0
    records = json.loads(listing.getvalue())
    assert [(r["model"], r["version"], r["traffic_percentage"]) for r in records] == [
        ("recs", "2", 100)
    ]
    neither = argparse.Namespace(action="stop", endpoint=None, all=False)
    assert cli_endpoints(neither, io.StringIO()) == 2
    history = io.StringIO()
    assert cli_endpoints(argparse.Namespace(action="history", endpoint="ep"), history) == 0
    assert history.getvalue().splitlines()[0].split()[:3] == ["#", "ACTION", "TRAFFIC"]
    assert "undeploy 1" in history.getvalue() and "2=100" in history.getvalue()

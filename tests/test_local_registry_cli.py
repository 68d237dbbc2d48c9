"""Command-line handlers for the registry: tables on stdout, clear one-line errors."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from data.serving.support import register_echo

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.cli.registry_commands import cli_endpoints, cli_models

REPO = Path(__file__).resolve().parent.parent


def test_registry_cli_models_prints_models_and_versions(
    registry: ModelRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    register_echo(registry, "a", 0)
    assert cli_models(argparse.Namespace(model=None)) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["MODEL", "VERSIONS", "DEFAULT"]
    assert row.split()[:3] == ["recs", "1", "1"]
    assert cli_models(argparse.Namespace(model="recs", wide=True)) == 0
    assert "gs://test-bucket/models/recs/a" in capsys.readouterr().out


def test_registry_cli_unknown_model_is_one_clear_line(
    registry: ModelRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_models(argparse.Namespace(model="nope")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no model named 'nope'" in err
    assert cli_endpoints(argparse.Namespace()) == 0
    assert "(none)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["endpoints", "stop", "nope"],
        ["endpoints", "undeploy", "nope", "--model", "recs@1"],
        ["endpoints", "history", "nope"],
    ],
)
def test_registry_cli_unknown_endpoint_is_one_line_exit_2(
    registry: ModelRegistry, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    from vertex_retrain.cli import main as cli

    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no endpoint named 'nope'" in err, err


@pytest.mark.slow
def test_registry_cli_serve_restarts_servers_and_stops_on_sigterm(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    register_echo(registry, "a", 5)
    endpoints = LocalEndpoints()
    endpoints.get_or_create("ep")
    deployed = endpoints.deploy("ep", "recs", "1")
    os.kill(deployed.pid or 0, signal.SIGKILL)  # stale record: serve must restart it
    while deployed.running:  # reaps it (this process started it); SIGKILL cannot be ignored
        time.sleep(0.05)
    code = (
        "import argparse, sys\n"
        "from vertex_retrain.cli.registry_commands import cli_serve\n"
        "sys.exit(cli_serve(argparse.Namespace(endpoint='ep', host=None, port=None, seed=1)))\n"
    )
    serve = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        banner = serve.stdout.readline()
        url = banner.split(" at ")[1].split()[0]
        request = urllib.request.Request(f"{url}/predict", data=b'{"instances": [1]}')
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.read() == b'{"predictions": [{"model": "a", "value": 6}]}'
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=15) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        serve.stdout.close()
        restarted = endpoints.get("ep").deployed_models[0]
        stop_servers("ep")
    assert restarted.pid != deployed.pid and not restarted.running

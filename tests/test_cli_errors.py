"""Errors a user can act on: bad input is one line and exit 2, a failure exit 1, never a
traceback unless --verbose; hints name commands and parameters, not Python functions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vertex_retrain.cli import main as cli

REPO = Path(__file__).resolve().parent.parent


def test_bad_input_is_one_line_naming_help_and_exit_2() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "compile.py"), "run"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "python compile.py run: error: the following arguments are required: PIPELINE "
        "(`python compile.py run --help` lists the options)"
    ]


def test_unknown_pipeline_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "no-such-pipeline", "--local"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no-such-pipeline" in err


def _failing_handler(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    def handler(args: object) -> int:
        raise error

    monkeypatch.setattr(cli, "_resolve", lambda target: handler)


def test_an_unexpected_failure_is_one_line_exit_1_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing_handler(monkeypatch, OSError("disk\nfull"))
    assert cli.main(["models"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["models: error: OSError: disk full (--verbose shows the traceback)"]


def test_verbose_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing_handler(monkeypatch, OSError("disk full"))
    assert cli.main(["models", "--verbose"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and err.endswith("OSError: disk full\n")


def test_interrupt_is_exit_130_and_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing_handler(monkeypatch, KeyboardInterrupt())
    assert cli.main(["endpoints"]) == 130
    assert capsys.readouterr().err == "endpoints: interrupted\n"


def test_hints_name_commands_not_python_functions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.backends.local.environments.python_env import (
        PackageEnvError,
        prepare_package_env,
    )
    from vertex_retrain.backends.local.model_registry.registry_db import RegistryNotFoundError
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    with pytest.raises(RegistryNotFoundError) as missing_endpoint:
        LocalEndpoints().get("nope")
    with pytest.raises(PackageEnvError) as missing_package:
        prepare_package_env(["gs://b/p/absent-1.0-py3-none-any.whl"], root=tmp_path)
    for message in (str(missing_endpoint.value), str(missing_package.value)):
        assert "`vertex-retrain " in message or "`pip wheel" in message, message
        assert "get_or_create(" not in message and "build_python_package" not in message

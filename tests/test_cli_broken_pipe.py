"""Output cut short by its reader (``vertex-retrain models | head -1``) ends quietly: no
BrokenPipeError traceback, no error line, exit 0."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vertex_retrain.cli import main as cli

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("arguments", [["--help"], ["models"], ["models", "--json"]])
def test_output_into_a_closed_pipe_exits_quietly(arguments: list[str], tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, str(REPO / "compile.py"), *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "VERTEX_LOCAL_ROOT": str(tmp_path)},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line is written
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0
    assert stderr == ""


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_main_ends_quietly_when_a_handler_writes_into_a_closed_pipe(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(args: object) -> int:
        print("a long table")
        return 0

    monkeypatch.setattr(cli, "_resolve", lambda target: handler)
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert cli.main(["models"]) == 0
    assert capsys.readouterr().err == ""

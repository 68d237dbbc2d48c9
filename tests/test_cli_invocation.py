"""Help and messages name the command as it was invoked: ``vertex-retrain`` (the console
script), ``python compile.py`` (the repository's shim) or ``python -m
vertex_retrain.cli.main``; never a name the user did not type."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vertex_retrain.invocation import (
    CONSOLE_SCRIPT,
    ENVIRONMENT_VARIABLE,
    command,
    command_name,
    invoked_as,
    name_from_argv0,
)

REPO = Path(__file__).resolve().parent.parent
CONSOLE = Path(sys.executable).parent / CONSOLE_SCRIPT


def test_name_from_argv0_tells_the_three_ways_apart(tmp_path: Path) -> None:
    assert name_from_argv0(str(CONSOLE)) == "vertex-retrain"
    assert name_from_argv0("compile.py", cwd=REPO) == "python compile.py"
    assert name_from_argv0(str(REPO / "compile.py"), cwd=REPO) == "python compile.py"
    elsewhere = str(REPO / "compile.py")
    assert name_from_argv0(elsewhere, cwd=tmp_path) == f"python {elsewhere}"
    main_py = str(REPO / "vertex_retrain" / "cli" / "main.py")
    assert name_from_argv0(main_py) == "python -m vertex_retrain.cli.main"
    # Any other program (pytest, a script embedding the command line) gets the script's name.
    assert name_from_argv0("/usr/lib/python3/site-packages/pytest/__main__.py") == CONSOLE_SCRIPT


def test_invoked_as_names_the_command_for_this_process_and_its_children(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    with invoked_as("python compile.py"):
        assert command("preflight NAME") == "python compile.py preflight NAME"
        child = subprocess.run(
            [sys.executable, "-c", "from vertex_retrain.invocation import command_name as n; "
             "print(n())"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert child.stdout.strip() == "python compile.py"
    assert ENVIRONMENT_VARIABLE not in os.environ
    assert command_name() == CONSOLE_SCRIPT  # pytest's own argv[0] is no invocation of ours


def test_command_quotes_the_values_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    assert command("serve", "shop recs") == "vertex-retrain serve 'shop recs'"
    assert command("endpoints rollback", "gyo") == "vertex-retrain endpoints rollback gyo"
    assert command("endpoints rollback", "it's") == (
        "vertex-retrain endpoints rollback 'it'\"'\"'s'"
    )
    assert command("models") == "vertex-retrain models"


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        ([str(CONSOLE)], "vertex-retrain"),
        ([sys.executable, "compile.py"], "python compile.py"),
        ([sys.executable, "-m", "vertex_retrain.cli.main"], "python -m vertex_retrain.cli.main"),
    ],
)
def test_usage_errors_and_hints_name_the_command_as_invoked(argv: list[str], name: str) -> None:
    def run(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, *arguments], cwd=REPO, capture_output=True, text=True, timeout=120
        )

    usage = run("--help")
    assert usage.returncode == 0 and usage.stdout.startswith(f"usage: {name} ")
    bad = run("estimate")
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"{name} estimate: error: ")
    assert f"(`{name} estimate --help` lists the options)" in bad.stderr
    # A hint that tells the user what to run says it the same way.
    hint = run("schedule", "--schedules", "s.yaml")
    assert hint.returncode == 2
    assert f"`{name} schedule --schedules s.yaml --dry-run`" in hint.stderr
    assert (name == "python compile.py") == ("compile.py" in hint.stderr)

"""The command line's name as the user invoked it, for help text and hints that name a command.

The same command line runs as the console script ``vertex-retrain``, as the repository shim
``python compile.py`` and as ``python -m vertex_retrain.cli.main``; a hint such as "run
`vertex-retrain preflight`" must name the one the user typed, or it cannot be pasted back.
:func:`command_name` is the one place that decides. The command line records the name in
:data:`ENVIRONMENT_VARIABLE` for the length of a command (:func:`invoked_as`), so the processes
it starts (a local run's tasks, a job's replicas) name it the same way in their messages.

Only the standard library is used: every layer may import this module.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "CONSOLE_SCRIPT",
    "ENVIRONMENT_VARIABLE",
    "SHIM",
    "command",
    "command_name",
    "invoked_as",
    "name_from_argv0",
]

CONSOLE_SCRIPT = "vertex-retrain"
"""The installed console script (pyproject.toml ``[project.scripts]``); the name used when the
invocation cannot be told (an embedding program, a test calling ``main`` itself)."""

ENVIRONMENT_VARIABLE = "VERTEX_RETRAIN_COMMAND"
"""Carries the invoked name to the processes a command starts."""

SHIM = "compile.py"
"""The repository's entry-point file (``python compile.py ...`` from a clone)."""

_MODULE_MAIN = ("vertex_retrain", "cli", "main.py")


def name_from_argv0(argv0: str, cwd: Path | None = None) -> str:
    """The command a user typed, told from the program path Python saw (``sys.argv[0]``).

    Args:
        argv0: ``sys.argv[0]``: the console script's path, the shim's path as given, or the
            path of ``vertex_retrain/cli/main.py`` under ``python -m``. Any other program
            (pytest, an embedding script) gets the console script's name.
        cwd: The working folder (default: the process's), to shorten the shim's path.

    Returns:
        ``"python -m vertex_retrain.cli.main"``, ``"python PATH/compile.py"`` (the path as
        typed, or just ``compile.py`` when it is in the working folder) or
        :data:`CONSOLE_SCRIPT`.
    """
    path = Path(argv0)
    if path.parts[-3:] == _MODULE_MAIN:
        return "python -m vertex_retrain.cli.main"
    if path.name == SHIM:
        folder = cwd or Path.cwd()
        try:
            shown = path.name if path.resolve().parent == folder.resolve() else argv0
        except OSError:
            shown = argv0
        return f"python {shown}"
    return CONSOLE_SCRIPT


def command_name() -> str:
    """The invoked command: the recorded name when a command line started this process,
    else the one ``sys.argv[0]`` tells (see :func:`name_from_argv0`)."""
    recorded = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if recorded:
        return recorded
    return name_from_argv0(sys.argv[0]) if sys.argv and sys.argv[0] else CONSOLE_SCRIPT


def command(arguments: str, *values: str) -> str:
    """A command line to show the user: the invoked command followed by ``arguments``.

    Example: ``command("preflight NAME")`` is ``"vertex-retrain preflight NAME"`` under the
    console script and ``"python compile.py preflight NAME"`` under the shim.

    Args:
        arguments: The command's words, as they are shown.
        *values: Words appended shell-quoted: names the user chose (``command("serve",
            "my endpoint")`` is ``vertex-retrain serve 'my endpoint'``), so it pastes back.
    """
    quoted = " ".join(shlex.quote(value) for value in values)
    return f"{command_name()} {arguments} {quoted}".rstrip()


@contextlib.contextmanager
def invoked_as(name: str) -> Iterator[None]:
    """Records ``name`` as the invoked command for this process and the ones it starts, until
    the block ends (the previous value comes back, so nested or repeated calls are safe)."""
    previous = os.environ.get(ENVIRONMENT_VARIABLE)
    os.environ[ENVIRONMENT_VARIABLE] = name
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ENVIRONMENT_VARIABLE, None)
        else:
            os.environ[ENVIRONMENT_VARIABLE] = previous

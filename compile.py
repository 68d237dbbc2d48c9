"""Command line for the vertex-retrain library: compile, validate, run, upload, schedule, estimate.

Start-up stays cheap: only the standard library is imported here, and each subcommand imports
its implementation when it runs (``python compile.py --help`` imports neither kfp's heavy
modules, aiplatform nor torch).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

# Subcommand name -> "module:function"; the function takes the parsed arguments and returns
# the process exit code.
_HANDLERS: dict[str, str] = {
    "validate": "components.specs.lint_file:cli_validate",
}


def _add_validate(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="lint hand-written CustomJob / HyperparameterTuningJob definitions",
        description=(
            "Lint CustomJob or HyperparameterTuningJob definitions (REST resource in JSON or "
            "YAML, camelCase or snake_case, or the job-spec body of `gcloud ai custom-jobs "
            "create --config`). Exits 1 on any error, 0 otherwise; warnings are printed "
            "either way."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="job definition files")
    parser.add_argument("--json", action="store_true", help="print problems as a JSON list")


def build_parser() -> argparse.ArgumentParser:
    """Builds the argument parser for every subcommand (no heavy imports)."""
    parser = argparse.ArgumentParser(
        prog="compile.py",
        description="Compile, validate, run, upload and schedule the vertex-retrain pipelines.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_validate(subparsers)
    return parser


def _resolve(target: str) -> Callable[[argparse.Namespace], int]:
    module_name, function_name = target.split(":")
    handler: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(module_name), function_name
    )
    return handler


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return _resolve(_HANDLERS[args.command])(args)


if __name__ == "__main__":
    sys.exit(main())

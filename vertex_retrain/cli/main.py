"""Command line for the vertex-retrain library: compile, validate, run, upload, schedule, estimate.

Start-up stays cheap: only the standard library is imported here, and each subcommand imports
its implementation when it runs (``vertex-retrain --help`` imports neither kfp's heavy
modules, aiplatform nor torch). Help and messages name the command as it was invoked
(:mod:`vertex_retrain.invocation`).
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NoReturn

from vertex_retrain.cli.local_parsers import (
    add_db_option,
    add_listing_options,
    add_local_inspection,
    local_root_problem,
)
from vertex_retrain.cli.options import (
    PIPELINE_HELP,
    add_param_option,
    add_pipeline_argument,
    add_submission_options,
)
from vertex_retrain.cli.vertex_parsers import (
    add_build_image,
    add_preflight,
    add_schedule,
    add_upload,
)
from vertex_retrain.invocation import command_name, invoked_as

# Subcommand name -> "module:function"; the function takes the parsed arguments and returns
# the process exit code.
_HANDLERS: dict[str, str] = {
    "compile": "vertex_retrain.cli.compile_commands:cli_compile",
    "estimate": "vertex_retrain.cli.compile_commands:cli_estimate",
    "run": "vertex_retrain.cli.run_command:cli_run",
    "models": "vertex_retrain.cli.registry_commands:cli_models",
    "endpoints": "vertex_retrain.cli.registry_commands:cli_endpoints",
    "serve": "vertex_retrain.cli.registry_commands:cli_serve",
    "history": "vertex_retrain.cli.history_command:cli_history",
    "validate": "vertex_retrain.cli.validate_command:cli_validate",
    "upload": "vertex_retrain.cli.upload_command:cli_upload",
    "schedule": "vertex_retrain.cli.schedule_command:cli_schedule",
    "preflight": "vertex_retrain.cli.preflight:cli_preflight",
    "build-image": "vertex_retrain.cli.build_image:cli_build_image",
}


# Commands that read or write under the local root (and `run --local`).
_LOCAL_ROOT_COMMANDS = frozenset({"models", "endpoints", "serve", "history"})


class _Parser(argparse.ArgumentParser):
    """Bad input is one line on stderr and exit 2, naming the command's --help."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def _add_common_options(parser: argparse.ArgumentParser, *, subcommand: bool) -> None:
    # Given before or after the subcommand alike (see _add_compile_options).
    parser.add_argument(
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS if subcommand else False,
        help="show tracebacks of unexpected errors (and, for run --local, every task's output)",
    )


def _add_compile(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compile",
        help="compile pipelines (default: the library's templates and components) to dist/",
        description=(
            "Compile each PIPELINE to DIR/pipelines/NAME.yaml (without one: the library's "
            "templates, and every component to DIR/components), check the jobs it would "
            "submit with its defaults, and print its steps, parameters and the estimated cost "
            f"of one run on Vertex (on-demand and Spot). {PIPELINE_HELP}"
        ),
    )
    parser.add_argument(
        "pipelines", nargs="*", metavar="PIPELINE", help="pipelines to compile (see above)"
    )
    _add_compile_options(parser, subcommand=True)


def _add_compile_options(parser: argparse.ArgumentParser, *, subcommand: bool) -> None:
    # Given before or after the subcommand alike: the subcommand's copies have no default of
    # their own, so they never overwrite what the top-level parser read.
    parser.add_argument(
        "--out",
        default=argparse.SUPPRESS if subcommand else "dist",
        metavar="DIR",
        help="output folder (dist)",
    )
    parser.add_argument(
        "--component-image",
        default=argparse.SUPPRESS if subcommand else None,
        metavar="URI",
        help="image the components run in on Vertex (built from components/Dockerfile)",
    )


def _add_run(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a pipeline locally (--local) or submit it to Vertex AI Pipelines",
        description=(
            "Run PIPELINE on this machine with kfp.local and the local backend (--local), or "
            "submit it to Vertex AI Pipelines (--project, --location, --pipeline-root). "
            + PIPELINE_HELP
        ),
    )
    add_pipeline_argument(parser)
    parser.add_argument("--local", action="store_true", help="run on this machine")
    add_submission_options(
        parser,
        project_help="Google Cloud project (Vertex)",
        location_help="Vertex AI region, e.g. asia-east1 (Vertex)",
        service_account_help="runtime service account (Vertex)",
    )
    parser.add_argument(
        "--component-image",
        default=argparse.SUPPRESS,
        metavar="URI",
        help="component image (Vertex)",
    )
    add_param_option(parser)
    parser.add_argument("--no-wait", action="store_true", help="submit and return (Vertex)")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help=(
            "run every task, reusing no earlier outputs (a run caches as Vertex does: the "
            "same component with the same inputs reuses its outputs; on Vertex this submits "
            "with enable_caching=False)"
        ),
    )
    parser.add_argument(
        "--retries",
        action="store_true",
        help=(
            "with --local: run a failed task again as its retry policy says, as Vertex does "
            "(by default a local task runs once, so a failure shows at once)"
        ),
    )
    parser.add_argument(
        "--json", action="store_true", help="print the final summary as JSON (progress on stderr)"
    )


# Regions of vertex_retrain/specs/prices.yaml, repeated here so --help reads no file
# (tests/test_specs_prices.py keeps the two equal).
PRICE_LOCATIONS = ("asia-east1", "europe-west4", "us-central1")


def _hours(text: str) -> float:
    """``--training-hours``: a finite number of hours, 0 or more."""
    try:
        hours = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hours") from None
    if not math.isfinite(hours) or hours < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of hours: pass 0 or more")
    return hours


def _add_estimate(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help="cost breakdown of one run on Vertex, per step, on-demand against Spot",
        description=(
            "Price every training and tuning job PIPELINE would submit with its defaults and "
            f"the --param overrides, on-demand against Spot. {PIPELINE_HELP}"
        ),
    )
    add_pipeline_argument(parser)
    add_param_option(parser)
    parser.add_argument(
        "--training-hours",
        type=_hours,
        default=None,
        metavar="H",
        help=(
            "expected hours of one training job on one GPU, or on its machine when it holds "
            "none (default: the pipeline's "
            "expected_training_hours, else the library's)"
        ),
    )
    parser.add_argument(
        "--location",
        default=None,
        metavar="REGION",
        help=(
            "region whose prices to use (default: the pipeline's location parameter when it "
            "names a region, else us-central1); prices are recorded for "
            f"{', '.join(PRICE_LOCATIONS)}"
        ),
    )
    parser.add_argument(
        "--json", action="store_true", help="print the estimate as JSON (labels and sources too)"
    )
    parser.add_argument("--wide", action="store_true", help="show cut table cells whole")


def _add_history(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "history",
        help="the weeks on record: each local run's window, data, metrics, decision and cost",
        description=(
            "Print the recorded runs of MODEL (every model without it), oldest week first: "
            "window, data gate, decision, the candidate's, champion's and baseline's metric, "
            "goodput, cost and any Spot fallback; and plot the metrics over the weeks to a PNG "
            "($VERTEX_LOCAL_ROOT/history/MODEL.png unless --plot)."
        ),
    )
    parser.add_argument("model", nargs="?", metavar="MODEL", help="a model's display name")
    parser.add_argument(
        "--metric",
        metavar="NAME",
        help="the metric in the table (default: each run's primary metric)",
    )
    parser.add_argument("--plot", metavar="PATH", help="write the plot here (a .png file)")
    parser.add_argument("--no-plot", action="store_true", help="write no plot")
    parser.add_argument(
        "--all-runs",
        action="store_true",
        help=(
            "every run of a week, each its own row (by default a week re-run shows the run "
            "that decided it, and later re-runs that promoted nothing as notes)"
        ),
    )
    add_listing_options(parser)
    add_db_option(parser, create=False)  # history only reads


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
    parser = _Parser(
        prog=command_name(),
        description=(
            "Compile, check, run, upload and schedule Kubeflow pipelines on Vertex AI or on "
            "this machine: the library's templates or your own. Without a command, compiles "
            "(see `compile --help`)."
        ),
    )
    _add_compile_options(parser, subcommand=False)
    _add_common_options(parser, subcommand=False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_compile(subparsers)
    _add_run(subparsers)
    _add_estimate(subparsers)
    _add_validate(subparsers)
    add_upload(subparsers)
    add_schedule(subparsers)
    add_preflight(subparsers)
    add_build_image(subparsers)
    add_local_inspection(subparsers)
    _add_history(subparsers)
    for subparser in subparsers.choices.values():
        _add_common_options(subparser, subcommand=True)
    return parser


def _resolve(target: str) -> Callable[[argparse.Namespace], int]:
    module_name, function_name = target.split(":")
    handler: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(module_name), function_name
    )
    return handler


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns its exit code.

    Exit codes: 0 success, 1 a failure (one line on stderr), 2 bad input (one line), 130
    interrupted. A traceback is shown only with ``--verbose``. Output cut short by its reader
    (``vertex-retrain models | head -1``) ends quietly with 0.
    """
    name = command_name()
    try:
        with invoked_as(name):
            code = _main(argv)
            sys.stdout.flush()  # a closed pipe shows here, not at exit where it would be noise
            return code
    except BrokenPipeError:
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Points standard output at /dev/null, so the interpreter's last flush finds no pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's capture)
        pass


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args.command = "compile"
    if args.command in _LOCAL_ROOT_COMMANDS or getattr(args, "local", False):
        problem = local_root_problem(os.environ.get("VERTEX_LOCAL_ROOT"))
        if problem:
            print(f"{args.command}: error: {problem}", file=sys.stderr)
            return 2
    try:
        handler = _resolve(_HANDLERS[args.command])
    except ValueError as error:
        # Modules validate what is declared in code (schedules, catalogs) when imported.
        print(f"{args.command}: {error}", file=sys.stderr)
        return 2
    try:
        return handler(args)
    except KeyboardInterrupt:
        print(f"{args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise  # the reader went away: main ends quietly
    except Exception as error:  # the last line of defence: one line, not a traceback
        if args.verbose:
            traceback.print_exc()
        summary = " ".join(str(error).split()) or "(no message)"
        print(
            f"{args.command}: error: {type(error).__name__}: {summary}"
            + ("" if args.verbose else " (--verbose shows the traceback)"),
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())

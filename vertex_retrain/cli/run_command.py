"""``compile.py run NAME``: locally with kfp.local, or submitted to Vertex AI Pipelines."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from vertex_retrain.pipelines import catalog


def cli_run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Runs or submits a pipeline; exit 0 on success, 1 on failure, 2 on bad input."""
    from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
    from vertex_retrain.cli.params import ParameterError, parameter_definitions, parse_overrides

    try:
        pipeline = catalog.pipeline_by_name(args.name)
    except KeyError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    spec = compile_to_dict(pipeline, component_image=args.component_image)
    try:
        overrides = parse_overrides(args.param, parameter_definitions(spec))
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if "backend" in overrides:
        print(
            "error: the backend follows from the command: --local runs on this machine, "
            "--project/--location/--pipeline-root submit to Vertex; drop --param backend=...",
            file=sys.stderr,
        )
        return 2
    if args.local:
        return _run_local(pipeline, default_arguments(spec), overrides, args.verbose, out)
    missing = [
        flag
        for flag, value in [
            ("--project", args.project),
            ("--location", args.location),
            ("--pipeline-root", args.pipeline_root),
        ]
        if not value
    ]
    if missing:
        print(
            f"error: submitting to Vertex needs {', '.join(missing)}; or pass --local to run "
            "on this machine",
            file=sys.stderr,
        )
        return 2
    return _submit(args, spec, overrides, out)


def _run_local(
    pipeline: object, defaults: dict, overrides: dict, verbose: bool, out: TextIO
) -> int:
    from vertex_retrain.cli.local_run import local_arguments, run_pipeline_locally
    from vertex_retrain.steps.summary import render_markdown

    from vertex_retrain.cli.local_setup import LocalSetupError, prepare_local_run

    try:
        arguments = prepare_local_run(local_arguments(defaults, overrides), out)
    except LocalSetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    outcome = run_pipeline_locally(pipeline, arguments, console=out, verbose=verbose)
    if outcome.summary is not None:
        print(render_markdown(outcome.summary), file=out)
    state = "succeeded" if outcome.succeeded else "FAILED"
    print(f"run {state} in {outcome.wall_seconds:.0f} s; full log: {outcome.log_path}", file=out)
    return 0 if outcome.succeeded else 1


def _submit(args: argparse.Namespace, spec: dict, overrides: dict, out: TextIO) -> int:
    from vertex_retrain.cli.compiling import write_spec
    from vertex_retrain.cli.vertex_submit import build_pipeline_job, submit

    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / f"{args.name}.yaml"
        write_spec(spec, template)
        job = build_pipeline_job(
            str(template),
            project=args.project,
            location=args.location,
            pipeline_root=args.pipeline_root,
            parameter_values={"backend": "vertex", **overrides},
        )
        resource_name = submit(job, service_account=args.service_account)
    print(f"submitted {resource_name}", file=out)
    if args.no_wait:
        return 0
    try:
        job.wait()
    except RuntimeError as error:  # aiplatform raises when the run fails
        print(f"failed: {error}", file=sys.stderr)
        return 1
    state = getattr(job.state, "name", str(job.state))
    print(f"finished: {state}", file=out)
    return 0 if state == "PIPELINE_STATE_SUCCEEDED" else 1

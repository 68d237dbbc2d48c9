"""``vertex-retrain run PIPELINE``: locally with kfp.local, or submitted to Vertex AI Pipelines.

PIPELINE is any pipeline :mod:`vertex_retrain.cli.pipeline_source` resolves: a library
template, a compiled file, or ``module:attr`` / ``file.py:attr`` in the user's code.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from vertex_retrain.cli.pipeline_source import PipelineSource


def cli_run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Runs or submits a pipeline; exit 0 on success, 1 on failure, 2 on bad input."""
    out = out or sys.stdout
    from vertex_retrain.cli.compiling import default_arguments
    from vertex_retrain.cli.param_defaults import check_defaults
    from vertex_retrain.cli.params import (
        ParameterError,
        missing_problem,
        parameter_definitions,
        parse_overrides,
        required_without_value,
    )
    from vertex_retrain.cli.pipeline_source import PipelineReferenceError, resolve_pipeline

    try:
        source = resolve_pipeline(args.name)
        spec = source.spec(component_image=args.component_image)
        overrides = parse_overrides(args.param, parameter_definitions(spec))
        # A configured default --param would refuse fails the same way, before any step.
        check_defaults(spec, given=overrides)
    except (PipelineReferenceError, ParameterError) as error:
        for line in str(error).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    if "backend" in overrides:
        print(
            "error: the backend follows from the command: --local runs on this machine, "
            "--project/--location/--pipeline-root submit to Vertex; drop --param backend=...",
            file=sys.stderr,
        )
        return 2
    from vertex_retrain.cli.run_window import as_of_problem
    from vertex_retrain.specs.display_names import display_name_problems, evaluates

    problem = as_of_problem({**default_arguments(spec), **overrides})
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    # A name Vertex refuses would fail the run at register-model, after training.
    names = display_name_problems(
        {**default_arguments(spec), **overrides}, evaluation_job=evaluates(spec)
    )
    for name_problem in names:
        print(f"run: {name_problem.describe()}", file=sys.stderr)
    if names:
        return 2
    missing_values = required_without_value(parameter_definitions(spec), overrides)
    if args.local:
        if missing_values:
            print(f"error: {missing_problem(source.name, missing_values)}", file=sys.stderr)
            return 2
        refused = _local_preflight(spec, {**default_arguments(spec), **overrides})
        if refused is not None:
            return refused
        takes_backend = any(
            "backend" in component.get("inputDefinitions", {}).get("parameters", {})
            for component in spec.get("components", {}).values()
        )
        return _run_local(source, args, default_arguments(spec), overrides, out, takes_backend)
    if getattr(args, "retries", False):
        print(
            "error: --retries applies to --local runs; Vertex runs each task's retry policy "
            "itself; drop --retries",
            file=sys.stderr,
        )
        return 2
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
    if missing_values:
        print(f"error: {missing_problem(source.name, missing_values)}", file=sys.stderr)
        return 2
    refused = _preflight(args, spec, {**default_arguments(spec), **overrides})
    if refused is not None:
        return refused
    return _submit(args, source.name, spec, overrides, out)


def _preflight(args: argparse.Namespace, spec: dict, arguments: dict) -> int | None:
    """The offline preflight: 2 (with one line per problem) when Vertex would fail the run;
    nothing has touched the network yet (the ``preflight`` command)."""
    from vertex_retrain.cli.preflight import refusal
    from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems

    settings = Settings(
        project=args.project,
        location=args.location,
        pipeline_root=args.pipeline_root,
        service_account=args.service_account,
        submission=True,
    )
    return refusal("run", pipeline_problems(spec, arguments, settings))


def _local_preflight(spec: dict, arguments: dict) -> int | None:
    """2 (with one line per problem) when the run would fail for a reason seen here; the
    warnings are printed and the run goes on."""
    from vertex_retrain.cli.preflight import refusal
    from vertex_retrain.cli.preflight_checks import local_run_problems

    return refusal("run", local_run_problems(spec, arguments), spared="no step ran")


def _run_local(
    source: PipelineSource,
    args: argparse.Namespace,
    defaults: dict[str, Any],
    overrides: dict[str, Any],
    out: TextIO,
    takes_backend: bool,
) -> int:
    """Runs here; afterwards nothing it started keeps running, whatever ended it.

    ``takes_backend``: a task of the pipeline has a ``backend`` input (a library component).
    """
    from vertex_retrain.cli.console import print_json
    from vertex_retrain.cli.local_run import (
        endpoint_of,
        local_arguments,
        run_pipeline_locally,
        stop_endpoint_servers,
    )
    from vertex_retrain.cli.processes import descendants, sigterm_as_interrupt, stop_descendants
    from vertex_retrain.cli.run_report import build_report
    from vertex_retrain.cli.run_window import as_of_problem

    # With --json, stdout carries only the JSON summary; progress goes to stderr.
    as_json = getattr(args, "json", False)
    progress = sys.stderr if as_json else out
    declared = source.parameter_names()
    arguments = local_arguments(defaults, overrides, declared=declared)
    if takes_backend and "backend" not in declared:
        print(
            f"note: {source.name} has no `backend` parameter, so its components run on the "
            "backend the pipeline gives them, which may not be this machine",
            file=progress,
        )
    endpoint = endpoint_of(arguments)
    with sigterm_as_interrupt():
        spare = frozenset(descendants())
        try:
            problem = as_of_problem(arguments, local=True)
            if problem:
                print(f"error: {problem}", file=sys.stderr)
                return 2
            outcome = run_pipeline_locally(
                source.component(),
                arguments,
                console=progress,
                verbose=getattr(args, "verbose", False),
                cache=not args.no_cache,
                retries=getattr(args, "retries", False),
            )
        finally:
            stop_descendants(spare=spare)
            if endpoint:
                stop_endpoint_servers(str(endpoint))
    if outcome.refused:
        return 1
    report = build_report(
        source.name,
        succeeded=outcome.succeeded,
        wall_seconds=outcome.wall_seconds,
        log_path=outcome.log_path,
        run_dir=outcome.run_dir,
        arguments=arguments,
        summary=outcome.summary,
    )
    if as_json:
        print_json(out, report.to_json())
    else:
        report.render(out)
    return 0 if outcome.succeeded else 1


def _submit(
    args: argparse.Namespace,
    name: str,
    spec: dict[str, Any],
    overrides: dict[str, Any],
    out: TextIO,
) -> int:
    from vertex_retrain.cli.params import parameter_definitions
    from vertex_retrain.cli.vertex_submit import submit_spec

    declared = parameter_definitions(spec)
    job, resource_name = submit_spec(
        spec,
        name,
        service_account=args.service_account,
        project=args.project,
        location=args.location,
        pipeline_root=args.pipeline_root,
        parameter_values={**({"backend": "vertex"} if "backend" in declared else {}), **overrides},
        # None keeps each task's compiled caching; --no-cache turns it off for every task.
        enable_caching=False if args.no_cache else None,
    )
    progress = sys.stderr if getattr(args, "json", False) else out
    print(f"submitted {resource_name}", file=progress)
    state = "PIPELINE_STATE_PENDING"
    failure = ""
    if not args.no_wait:
        try:
            job.wait()
        except RuntimeError as error:  # aiplatform raises when the run fails
            failure = " ".join(str(error).split())
        state = getattr(job.state, "name", str(job.state))
    if getattr(args, "json", False):
        from vertex_retrain.cli.console import print_json

        print_json(out, {"pipeline_job": resource_name, "state": state, "error": failure or None})
    elif failure:
        print(f"failed: {failure}", file=sys.stderr)
    elif not args.no_wait:
        print(f"finished: {state}", file=out)
    if args.no_wait:
        return 0
    return 0 if state == "PIPELINE_STATE_SUCCEEDED" and not failure else 1

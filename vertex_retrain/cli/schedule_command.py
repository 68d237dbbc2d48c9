"""``vertex-retrain schedule --schedules FILE_OR_REF``: the user's schedules, on Vertex.

The schedules come from the user's repository (:mod:`vertex_retrain.cli.schedule_source`);
planning and applying is :mod:`vertex_retrain.cli.schedule_reconcile`, through a
:class:`~vertex_retrain.schedules.ScheduleClient`. Each scheduled pipeline is compiled from its
source and its declared parameter values are checked as ``run --param`` checks them, dry run or
not; before anything is changed, it also gets the offline preflight with those values. The dry
run refuses what that preflight would refuse (the jobs the runs would submit, checked without
a region), so a dry run that passes is not refused by the real schedule for its values.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from vertex_retrain.cli.schedule_reconcile import DeploymentTarget, format_plans, reconcile
from vertex_retrain.cli.schedule_source import DeclaredSchedules, load_schedules
from vertex_retrain.cli.template_ref import TemplateRefError, parse_template_version
from vertex_retrain.invocation import command
from vertex_retrain.schedules import ScheduleClient, ScheduleDeclaration, ScheduleError

__all__ = ["cli_schedule"]


def cli_schedule(args: argparse.Namespace, *, client: ScheduleClient | None = None) -> int:
    """Reconciles the declared schedules and prints the diff.

    ``--dry-run`` needs no flag nor credentials (:mod:`vertex_retrain.cli.schedule_offline`);
    the diff is added when every flag is given and Vertex answers.

    Args:
        args: Parsed arguments (schedules, project, location, service_account,
            pipeline_root, template_version, repository, dry_run).
        client: The Vertex boundary; default ``VertexScheduleClient`` (tests pass a fake).

    Returns:
        0 on success, 1 when Vertex cannot be reached to apply, 2 on invalid input.
    """
    from vertex_retrain.cli.schedule_offline import format_declared, missing_vertex_flags

    if not getattr(args, "schedules", None):
        print(
            "schedule: which schedules? pass --schedules FILE.yaml (a list of declarations) "
            "or --schedules MODULE:ATTR / path/to/file.py:ATTR (a tuple of "
            "ScheduleDeclaration); the library declares none",
            file=sys.stderr,
        )
        return 2
    versions = list(getattr(args, "template_version", None) or [])
    missing = missing_vertex_flags(
        args.project, args.location, args.service_account, args.pipeline_root, versions
    )
    if missing and not args.dry_run:
        print(
            f"schedule: reconciling with Vertex needs {', '.join(missing)}; "
            f"`{command('schedule --schedules ' + args.schedules + ' --dry-run')}` shows the "
            "declared schedules without them",
            file=sys.stderr,
        )
        return 2
    try:
        declared = load_schedules(args.schedules)
        declarations = declared.declarations
        template_uris = _pinned_versions(args, declarations) if versions else {}
        scheduled = _scheduled_pipelines(declared)
        if args.dry_run:
            # What the real schedule's preflight would refuse (the jobs a run would submit,
            # with the declared values); its region's checks only warn, and need the flags.
            refused = _preflight(scheduled, None)
            if refused is not None:
                return refused
        if missing:
            sys.stdout.write(format_declared(declarations, template_uris))
            print(f"diff against Vertex: not shown; it needs {', '.join(missing)} and credentials")
            return 0
        if not args.pipeline_root.startswith("gs://"):
            raise ScheduleError(
                f"--pipeline-root {args.pipeline_root!r}: expected gs://BUCKET/PATH"
            )
        target = DeploymentTarget(
            args.project, args.location, args.service_account, args.pipeline_root
        )
        if not args.dry_run:
            refused = _preflight(scheduled, target)
            if refused is not None:
                return refused
        try:
            if client is None:
                from vertex_retrain.cli.vertex_schedule_client import VertexScheduleClient

                client = VertexScheduleClient(project=args.project, location=args.location)
            plans = reconcile(declarations, target, template_uris, client, dry_run=args.dry_run)
        except Exception as error:  # credentials, network, permissions: Vertex is unreachable
            if isinstance(error, ScheduleError):
                raise
            reason = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
            if not args.dry_run:
                print(f"schedule: Vertex could not be reached ({reason})", file=sys.stderr)
                return 1
            sys.stdout.write(format_declared(declarations, template_uris))
            print(
                f"diff against Vertex: not shown; Vertex could not be reached ({reason}); "
                "`gcloud auth application-default login` sets up credentials"
            )
            return 0
    except (ScheduleError, TemplateRefError) as error:
        for line in str(error).splitlines():  # one line per problem
            print(f"schedule: {line}", file=sys.stderr)
        return 2
    sys.stdout.write(format_plans(plans, dry_run=args.dry_run))
    return 0


def _pinned_versions(
    args: argparse.Namespace, declarations: Sequence[ScheduleDeclaration]
) -> dict[str, str]:
    pipelines = sorted({declaration.pipeline_name for declaration in declarations})
    pinned: dict[str, str] = {}
    for text in args.template_version:
        # A bare digest can only mean the one declared pipeline.
        only = pipelines[0] if len(pipelines) == 1 else None
        is_uri = text.startswith("https://")
        version = parse_template_version(
            text,
            pipeline_name=None if is_uri else only,
            project=args.project,
            location=args.location,
            repository=args.repository,
        )
        if version.pipeline_name not in pipelines:
            raise ScheduleError(
                f"--template-version {text!r} is for pipeline {version.pipeline_name!r}, which "
                f"no schedule runs (scheduled: {', '.join(pipelines) or 'none'})"
            )
        pinned[version.pipeline_name] = version.uri
    return pinned


def _scheduled_pipelines(
    declared: DeclaredSchedules,
) -> list[tuple[ScheduleDeclaration, dict[str, Any]]]:
    """Each declaration with its pipeline compiled from its source, its parameter values
    checked against the pipeline's parameters as ``run --param`` checks them (names with a
    "did you mean", types, ranges: :func:`vertex_retrain.cli.params.check_values`), and so
    are the defaults the runs use (:mod:`vertex_retrain.cli.param_defaults`).

    Raises:
        ScheduleError: A declaration's pipeline cannot be found, or is another pipeline than
            the one its ``pipeline_name`` names (one line); or parameter values that the
            scheduled runs would be refused for (one line per problem, naming the schedule).
    """
    from vertex_retrain.cli.param_defaults import default_problems
    from vertex_retrain.cli.params import ParameterError, check_values, parameter_definitions
    from vertex_retrain.cli.pipeline_source import PipelineReferenceError, resolve_pipeline

    scheduled = []
    problems: list[str] = []
    for declaration in declared.declarations:
        reference = declaration.pipeline or declaration.pipeline_name
        try:
            source = resolve_pipeline(reference, base=declared.base)
        except PipelineReferenceError as error:
            raise ScheduleError(
                f"{declaration.display_name}: the pipeline to check before scheduling: {error}"
                + ("" if declaration.pipeline else "; declare its source as `pipeline`")
            ) from None
        if source.name != declaration.pipeline_name:
            raise ScheduleError(
                f"{declaration.display_name}: pipeline {reference!r} is named "
                f"{source.name!r}, but pipeline_name is {declaration.pipeline_name!r}; make "
                "them agree (pipeline_name is the uploaded template's name)"
            )
        spec = source.spec()
        try:
            values = dict(declaration.parameter_values)
            # A run submitted without a value for a parameter that has no default is refused
            # by Vertex every week: refuse the schedule now instead.
            check_values(
                values,
                parameter_definitions(spec),
                given_as="parameter_values: {{{name}: {example}}}",
            )
        except ParameterError as error:
            problems += [
                f"{declaration.display_name}: parameter_values: {problem}"
                for problem in error.problems
            ]
        # The defaults the runs use where the declaration gives no value, checked alike.
        problems += [
            f"{declaration.display_name}: {problem}"
            for problem in default_problems(
                spec,
                given=declaration.parameter_values,
                override="declare parameter_values: {{{name}: VALUE}}",
            )
        ]
        scheduled.append((declaration, spec))
    if problems:
        raise ScheduleError("\n".join(problems))
    return scheduled


def _preflight(
    scheduled: Sequence[tuple[ScheduleDeclaration, dict[str, Any]]],
    target: DeploymentTarget | None,
) -> int | None:
    """The offline preflight of each scheduled pipeline, with the declared parameter values,
    before Vertex is called (the ``preflight`` command): 2, with one line per problem, when
    the scheduled runs would fail. The component image is not checked here: the pinned
    template carries its own, checked by ``upload``.

    ``target`` None (the dry run): the checks without a deployment target, and only their
    errors (the warnings are the real schedule's to show, with every flag).
    """
    from vertex_retrain.cli.compiling import default_arguments
    from vertex_retrain.cli.preflight import refusal
    from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems
    from vertex_retrain.specs.problems import errors_of

    settings = Settings(component_image=False)
    if target is not None:
        settings = Settings(
            project=target.project,
            location=target.location,
            pipeline_root=target.pipeline_root,
            service_account=target.service_account,
            submission=True,
            component_image=False,
        )
    problems = []
    for declaration, spec in scheduled:
        arguments = {**default_arguments(spec), **dict(declaration.parameter_values)}
        problems += pipeline_problems(spec, arguments, settings)
    return refusal("schedule", problems if target is not None else errors_of(problems))

"""``vertex-retrain preflight``: every check that can be done before a submission.

Offline always (:mod:`vertex_retrain.cli.preflight_checks`); with ``--project`` and
``--location`` also with credentials (:mod:`vertex_retrain.backends.vertex.preflight_online`):
the images exist, the pipeline root's bucket and its region, the service account. ``run
--project``, ``upload`` and ``schedule`` run the offline checks first (:func:`refusal`) and
refuse on an error before any network call.

Exit codes: 0 no error, 1 an error found, 2 bad input (one line).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from vertex_retrain.cli.preflight_checks import Settings, executor_images, pipeline_problems
from vertex_retrain.invocation import command as invoked
from vertex_retrain.specs.problems import Problem, errors_of, warnings_of

__all__ = ["PreflightTarget", "cli_preflight", "load_targets", "refusal", "report"]

CheckerFactory = Callable[[str], Any]
"""``project -> CloudChecker``; the default builds the Google one (credentials needed)."""


class PreflightInputError(ValueError):
    """Bad input: not a compiled pipeline, an unknown pipeline, a malformed --param, a default
    --param would refuse; ``lines`` holds one line per mistake."""

    def __init__(self, *lines: str) -> None:
        self.lines = [" ".join(line.split()) for line in lines]
        super().__init__("\n".join(self.lines))


@dataclass(frozen=True)
class PreflightTarget:
    """One pipeline to check: its name, compiled spec and arguments."""

    name: str
    spec: dict[str, Any]
    arguments: dict[str, Any]


def load_targets(
    names: Sequence[str], *, component_image: str | None = None, params: Sequence[str] = ()
) -> list[PreflightTarget]:
    """Compiles (or reads) the pipelines to check, with ``--param`` overrides applied.

    Args:
        names: Pipeline references (:func:`vertex_retrain.cli.pipeline_source.resolve_pipeline`:
            template names, compiled files, ``module:attr``, ``file.py:attr``); empty: the
            library's templates.
        component_image: Compile with this component image (a compiled file has its
            executors' images replaced by it).
        params: ``NAME=VALUE`` overrides.

    Raises:
        PreflightInputError: A reference that names no pipeline, a malformed override (the
            message is one line), or defaults ``--param`` would refuse (one line each).
    """
    from vertex_retrain.cli.compiling import default_arguments
    from vertex_retrain.cli.param_defaults import default_problems
    from vertex_retrain.cli.params import ParameterError, parameter_definitions, parse_overrides
    from vertex_retrain.cli.pipeline_source import PipelineReferenceError, resolve_pipeline
    from vertex_retrain.pipelines import catalog

    targets = []
    for name in names or list(catalog.PIPELINES):
        try:
            source = resolve_pipeline(name)
        except PipelineReferenceError as error:
            raise PreflightInputError(str(error)) from None
        spec = source.spec(component_image)
        try:
            overrides = parse_overrides(list(params), parameter_definitions(spec))
        except ParameterError as error:
            raise PreflightInputError("; ".join(error.problems)) from None
        # A default --param would refuse: bad input as that --param is, one line each.
        problems = default_problems(spec, given=overrides)
        if problems:
            raise PreflightInputError(*problems)
        targets.append(PreflightTarget(source.name, spec, {**default_arguments(spec), **overrides}))
    return targets


def refusal(
    command: str,
    problems: Sequence[Problem],
    err: TextIO | None = None,
    *,
    spared: str = "nothing was sent",
) -> int | None:
    """Prints the problems one line each; returns 2 when one is an error (the caller refuses).

    Args:
        command: The command's name for the lines (``run``, ``upload``...).
        problems: The preflight's problems.
        err: Where the lines go.
        spared: What the refusal line says did not happen.

    Returns:
        2 to refuse, or None to go on (warnings printed).
    """
    err = err or sys.stderr
    refused = bool(errors_of(problems))
    for problem in _split_run_time(problems)[0]:
        print(f"{command}: {problem.describe()}", file=err)
    if refused:
        print(
            f"{command}: refused by preflight ({len(errors_of(problems))} error(s)); {spared}. "
            f"`{invoked('preflight PIPELINE')}` shows the same checks",
            file=err,
        )
        return 2
    return None


CHECKED_AT_RUN_TIME = frozenset({"inputs-unchecked"})
"""Codes of what preflight could not check because the pipeline sets it as it runs (job fields
from earlier tasks' outputs): a limit of the check, not a risk of the pipeline. Listed apart,
after the problems, neither counted as a warning nor repeated by ``run`` and ``upload``."""

SUBMISSION_SETTINGS = frozenset({"service-account", "pipeline-root"})
"""Codes of the settings a submission needs, which preflight requires as ``run`` does."""


def report(name: str, problems: Sequence[Problem], out: TextIO) -> None:
    """Writes one pipeline's result: a summary line, one line per problem, then what is
    checked only when the pipeline runs (:data:`CHECKED_AT_RUN_TIME`), one ``not checked``
    line per task group."""
    from vertex_retrain.specs.executor_images import COMPATIBILITY_UNKNOWN

    problems, later = _split_run_time(problems)
    errors, warnings = errors_of(problems), warnings_of(problems)
    unknown = [p for p in warnings if p.code in COMPATIBILITY_UNKNOWN]
    unset = [p.field for p in errors if p.code in SUBMISSION_SETTINGS and p.value is None]
    if errors and len(unset) == len(errors):
        # Nothing wrong with the pipeline: `run` would refuse to submit it without these.
        verdict = f"not ready: {' and '.join(unset)} not given"
    elif errors:
        verdict = "would fail on Vertex"
    elif unknown:
        # Whether the package installs on its image is not known: never "ready".
        verdict = "not ready: whether the package installs on its executor image is unknown"
    else:
        verdict = "ready to submit"
    print(
        f"preflight {name}: {len(errors)} error(s), {len(warnings)} warning(s): {verdict}", file=out
    )
    for problem in problems:
        print(f"  {problem.describe()}", file=out)
    for limit in later:
        print(f"  not checked here: {limit.field}: {limit.message}", file=out)


def _split_run_time(problems: Sequence[Problem]) -> tuple[list[Problem], list[Problem]]:
    """The problems, and the limits of the check (:data:`CHECKED_AT_RUN_TIME`)."""
    limits = [p for p in problems if p.code in CHECKED_AT_RUN_TIME]
    return [p for p in problems if p.code not in CHECKED_AT_RUN_TIME], limits


def _online(target: PreflightTarget, settings: Settings, factory: CheckerFactory) -> list[Problem]:
    from vertex_retrain.backends.vertex.preflight_online import online_problems
    from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
    from vertex_retrain.specs.problems import warning

    assert settings.project and settings.location
    try:
        checker = factory(settings.project)
    except Exception as failure:  # no credentials: say so, the offline result stands
        return [
            warning(
                "--project",
                settings.project,
                f"Online checks skipped: {type(failure).__name__}: "
                f"{' '.join(str(failure).split())[:200]}.",
                ["gcloud auth application-default login"],
                code="online-skipped",
            )
        ]
    images = [(w, i) for w, i in executor_images(target.spec) if i != DEFAULT_COMPONENT_IMAGE]
    # The executor image, the serving image and any other image a parameter names.
    images += _named(target.arguments, lambda name: name.endswith("image_uri"))
    problems = online_problems(
        checker,
        images=images,
        region=settings.location,
        pipeline_root=settings.pipeline_root,
        service_account=settings.service_account,
        readable=_named(target.arguments, READ_PARAMETERS.__contains__),
        writable=_named(target.arguments, WRITE_PARAMETERS.__contains__),
    )
    declaration = target.arguments.get("dataset_declaration")
    if isinstance(declaration, Mapping) and declaration:
        from vertex_retrain.backends.vertex.preflight_warehouse import warehouse_problems

        problems += warehouse_problems(checker, declaration, settings.location, settings.project)
    return problems


READ_PARAMETERS = frozenset({"data_uri", "source_uri", "package_uri", "package_uris"})
"""Template parameters that name Cloud Storage the run reads."""

WRITE_PARAMETERS = frozenset({"package_destination", "output_root"})
"""Template parameters that name Cloud Storage the run writes."""


def _named(arguments: Mapping[str, Any], wanted: Callable[[str], bool]) -> list[tuple[str, str]]:
    """``(--param NAME, value)`` of the string values (list items too) of wanted parameters."""
    found = []
    for name, value in sorted(arguments.items()):
        values = value if isinstance(value, list) else [value]
        if wanted(name):
            found += [(f"--param {name}", v) for v in values if isinstance(v, str) and v]
    return found


def _default_factory(project: str) -> Any:
    from vertex_retrain.backends.vertex.preflight_online import GoogleCloudChecker

    return GoogleCloudChecker(project)


def cli_preflight(
    args: argparse.Namespace,
    out: TextIO | None = None,
    *,
    checker_factory: CheckerFactory | None = None,
) -> int:
    """Runs preflight on the named pipelines (default: all) and prints the problems.

    Args:
        args: Parsed arguments (pipelines, component_image, param, project, location,
            pipeline_root, service_account, json).
        out: Where the report goes.
        checker_factory: Builds the online checker (tests pass a fake).

    Returns:
        0 when no pipeline has an error, 1 when one has, 2 on bad input.
    """
    out = out or sys.stdout
    try:
        targets = load_targets(
            list(args.pipelines),
            component_image=getattr(args, "component_image", None),
            params=list(args.param),
        )
    except (PreflightInputError, ValueError) as error:
        lines = error.lines if isinstance(error, PreflightInputError) else [str(error)]
        for line in lines:
            print(f"preflight: error: {' '.join(line.split())}", file=sys.stderr)
        return 2
    # What `run` would refuse to submit without (a service account and a pipeline root),
    # preflight never calls ready, with or without --project.
    settings = Settings(
        project=args.project,
        location=args.location,
        pipeline_root=args.pipeline_root,
        service_account=args.service_account,
        submission=True,
    )
    results: dict[str, list[Problem]] = {}
    for target in targets:
        problems = pipeline_problems(target.spec, target.arguments, settings)
        if args.project and args.location:
            problems += _online(target, settings, checker_factory or _default_factory)
        results[target.name] = sorted(problems, key=lambda p: p.severity != "error")
    if getattr(args, "json", False):
        from vertex_retrain.cli.console import print_json

        print_json(out, _as_json(results))
    else:
        for name, problems in results.items():
            report(name, problems, out)
    return 1 if any(errors_of(problems) for problems in results.values()) else 0


def _as_json(results: Mapping[str, list[Problem]]) -> list[dict[str, Any]]:
    rows = []
    for name, found in results.items():
        problems, later = _split_run_time(found)
        rows.append({
            "pipeline": name,
            "errors": len(errors_of(problems)),
            "warnings": len(warnings_of(problems)),
            "problems": [problem.to_dict() for problem in problems],
            "checked_at_run_time": [limit.to_dict() for limit in later],
        })  # fmt: skip
    return rows

"""A pipeline's own parameter defaults, checked as a ``--param`` value of the same parameter is.

``vertex_retrain.pipelines.configure`` checks a default's type only, and a compiled pipeline
file can carry any default, so a value that ``run --param`` refuses up front (a number outside
its range: :data:`vertex_retrain.pipelines.ranges.PARAMETER_RANGES`) would otherwise reach the
step that uses it and fail there, after the steps before it ran (on Vertex: were paid for).
``run`` (locally and before a submission), ``vertex_retrain.run_local``, ``estimate``,
``preflight``, ``compile``, ``upload`` and ``schedule`` refuse such a default before anything
is run, written or sent, with one line per default, through the same check as ``--param``
(:func:`vertex_retrain.cli.params.check_values`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vertex_retrain.cli.params import ParameterError, check_values, parameter_definitions
from vertex_retrain.rules.numbers import whole_numbers

__all__ = ["check_defaults", "default_problems"]


OVERRIDE = "pass --param {name}=VALUE"
"""How a run gives a parameter a value of its own, for the problem lines."""


def default_problems(
    spec: Mapping[str, Any], *, given: Iterable[str] = (), override: str | None = OVERRIDE
) -> list[str]:
    """One line per default of a compiled pipeline that ``--param`` would refuse as a value.

    Args:
        spec: The compiled pipeline (its ``root.inputDefinitions.parameters``).
        given: Parameters the run gives a value of its own: their defaults are not used.
        override: How the caller's user gives a value instead (``{name}`` is filled), or
            None where the default itself must change (a template to upload or compile).

    Returns:
        The problems, in parameter name order; each names the pipeline, the parameter, the
        value and what is allowed, and how to give another value.
    """
    definitions = parameter_definitions(spec)
    pipeline = spec.get("pipelineInfo", {}).get("name", "pipeline")
    skipped = set(given)
    problems: list[str] = []
    for name, definition in sorted(definitions.items()):
        if name in skipped or definition.get("defaultValue") is None:
            continue
        value = _typed(definition["defaultValue"], definition)
        try:
            check_values({name: value}, {name: definition}, require_all=False)
        except ParameterError as error:
            instead = f" or {override.format(name=name)}" if override else ""
            problems += [
                f"the default of pipeline {pipeline!r}: {problem}; configure another value "
                f"(vertex_retrain.pipelines.configure){instead}"
                for problem in error.problems
            ]
    return problems


def check_defaults(
    spec: Mapping[str, Any], *, given: Iterable[str] = (), override: str | None = OVERRIDE
) -> None:
    """Raises when a default the run would use is one ``--param`` would refuse.

    Args:
        spec: The compiled pipeline.
        given: Parameters given a value of their own.
        override: See :func:`default_problems`.

    Raises:
        ParameterError: One problem per such default (:func:`default_problems`).
    """
    problems = default_problems(spec, given=given, override=override)
    if problems:
        raise ParameterError(problems)


def _typed(value: Any, definition: Mapping[str, Any]) -> Any:
    """The default as a run gets it: the spec stores every number as a double, and an integer
    parameter's whole-number double is that integer (said as ``5``, not ``5.0``)."""
    integer = (definition.get("parameterType") or definition.get("type")) in (
        "NUMBER_INTEGER",
        "INT",
    )
    return whole_numbers(value) if integer else value

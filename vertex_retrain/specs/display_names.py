"""Vertex's limit on resource display names, checked on a run's arguments before it starts.

Models, endpoints, jobs and schedules take a display name of 1 to 128 characters. A run whose
``model_display_name`` is longer trains and evaluates and is refused only at register-model,
so the names a run gives its resources are checked with the other arguments, before any task
runs (``vertex-retrain run``, ``preflight``, ``vertex_retrain.run_local``). A pipeline that
evaluates with the library's ``evaluate_model`` also names its evaluation job
``<model_display_name>-evaluation`` (:data:`EVALUATION_JOB_SUFFIX`), which must fit too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.problems import Problem, error

__all__ = [
    "EVALUATION_JOB_SUFFIX",
    "MAX_DISPLAY_NAME",
    "RUN_DISPLAY_NAMES",
    "display_name_problems",
    "evaluates",
]

MAX_DISPLAY_NAME = 128
"""The most characters Vertex takes in a resource's display name."""

EVALUATION_JOB_SUFFIX = "-evaluation"
"""The evaluation job's display name is the model's with this after it (unless the step is
given one of its own)."""

RUN_DISPLAY_NAMES = {
    "model_display_name": True,
    "endpoint_display_name": False,
}
"""The run parameters that name a Vertex resource -> whether it may not be empty (an empty
endpoint name means no deployment)."""


def evaluates(spec: Mapping[str, Any]) -> bool:
    """Whether a compiled pipeline runs the library's ``evaluate_model`` component."""
    components = spec.get("components")
    return isinstance(components, Mapping) and any(
        str(name).startswith("comp-evaluate-model") for name in components
    )


def display_name_problems(
    arguments: Mapping[str, Any], *, evaluation_job: bool = False
) -> list[Problem]:
    """Each display name among a run's arguments that Vertex would refuse.

    Args:
        arguments: The run's parameter values (defaults with its overrides); names the
            pipeline does not take are not there and not checked.
        evaluation_job: The run names an evaluation job after its model
            (:func:`evaluates`): the model's name leaves room for the suffix.

    Returns:
        One error per name, naming the parameter, its length and the limit.
    """
    problems = []
    for name, required in RUN_DISPLAY_NAMES.items():
        if name not in arguments:
            continue
        value = arguments[name]
        field = f"--param {name}"
        suffix = EVALUATION_JOB_SUFFIX if evaluation_job and name == "model_display_name" else ""
        if not isinstance(value, str) or (required and not value.strip()):
            problems.append(
                error(field, value, "Vertex needs a display name here.", ["my-model"], "name")
            )
        elif len(value) > MAX_DISPLAY_NAME:
            problems.append(_too_long(field, value, "display name", MAX_DISPLAY_NAME))
        elif len(value + suffix) > MAX_DISPLAY_NAME:
            limit = MAX_DISPLAY_NAME - len(suffix)
            what = f"display name (its evaluation job is named {value[:8]}...{suffix})"
            problems.append(_too_long(field, value, what, limit))
    return problems


def _too_long(field: str, value: str, what: str, limit: int) -> Problem:
    return error(
        field,
        value,
        f"{len(value)} characters; Vertex takes at most {limit} in this {what}.",
        [f"a name of 1 to {limit} characters"],
        "name",
    )

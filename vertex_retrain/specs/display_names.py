"""Vertex's limit on resource display names, checked on a run's arguments before it starts.

Models, endpoints, jobs and schedules take a display name of 1 to 128 characters. A run whose
``model_display_name`` is longer trains and evaluates and is refused only at register-model,
so the names a run gives its resources are checked with the other arguments, before any task
runs (``vertex-retrain run``, ``preflight``, ``vertex_retrain.run_local``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.problems import Problem, error

__all__ = ["MAX_DISPLAY_NAME", "RUN_DISPLAY_NAMES", "display_name_problems"]

MAX_DISPLAY_NAME = 128
"""The most characters Vertex takes in a resource's display name."""

RUN_DISPLAY_NAMES = {
    "model_display_name": True,
    "endpoint_display_name": False,
}
"""The run parameters that name a Vertex resource -> whether it may not be empty (an empty
endpoint name means no deployment)."""


def display_name_problems(arguments: Mapping[str, Any]) -> list[Problem]:
    """Each display name among a run's arguments that Vertex would refuse.

    Args:
        arguments: The run's parameter values (defaults with its overrides); names the
            pipeline does not take are not there and not checked.

    Returns:
        One error per name, naming the parameter, its length and the limit.
    """
    problems = []
    for name, required in RUN_DISPLAY_NAMES.items():
        if name not in arguments:
            continue
        value = arguments[name]
        field = f"--param {name}"
        if not isinstance(value, str) or (required and not value.strip()):
            problems.append(
                error(field, value, "Vertex needs a display name here.", ["my-model"], "name")
            )
        elif len(value) > MAX_DISPLAY_NAME:
            problems.append(
                error(
                    field,
                    value,
                    f"{len(value)} characters; Vertex takes at most {MAX_DISPLAY_NAME} in a "
                    "display name.",
                    [f"a name of 1 to {MAX_DISPLAY_NAME} characters"],
                    "name",
                )
            )
    return problems

"""No compiled pipeline nests a pipeline channel inside a list or struct constant.

``package_uris=[channel]`` compiles to a list constant holding
``{{$.inputs.parameters['pipelinechannel--...']}}``. kfp.local resolves it, but Vertex's
support for placeholders nested in constants is unverified and reported failing in similar
cases (kubeflow/pipelines#12204), so pipelines pass a channel as a plain input
(``package_uri=channel``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.examples import shipped_pipelines
from vertex_retrain.cli.compiling import compile_to_dict

PLACEHOLDER = "{{$.inputs"

SHIPPED = shipped_pipelines()


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a constant, at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def nested_placeholders(spec: dict[str, Any]) -> set[tuple[str, str]]:
    """(task, input) of every list or struct constant that holds a ``{{$.inputs`` placeholder.

    Args:
        spec: A compiled pipeline spec; the root DAG and every component's DAG are walked.
    """
    found = set()
    for component in [spec["root"], *spec.get("components", {}).values()]:
        for task_name, task in component.get("dag", {}).get("tasks", {}).items():
            for name, parameter in task.get("inputs", {}).get("parameters", {}).items():
                constant = parameter.get("runtimeValue", {}).get("constant")
                if isinstance(constant, (dict, list)) and any(
                    PLACEHOLDER in text for text in _strings(constant)
                ):
                    found.add((task_name, name))
    return found


def _all_nested() -> set[tuple[str, str, str]]:
    return {
        (name, task, parameter)
        for name, pipeline in sorted(SHIPPED.items())
        for task, parameter in nested_placeholders(compile_to_dict(pipeline))
    }


def test_nested_placeholders_finds_a_channel_inside_a_list_constant() -> None:
    spec = {
        "root": {
            "dag": {
                "tasks": {
                    "train": {
                        "inputs": {
                            "parameters": {
                                "package_uris": {
                                    "runtimeValue": {
                                        "constant": [
                                            {"uri": "{{$.inputs.parameters['pipelinechannel--p']}}"}
                                        ]
                                    }
                                },
                                "package_uri": {"componentInputParameter": "p"},
                                "args": {"runtimeValue": {"constant": ["--epochs", "3"]}},
                            }
                        }
                    }
                }
            }
        }
    }
    assert nested_placeholders(spec) == {("train", "package_uris")}


def test_pipelines_nest_no_placeholder_in_list_or_struct_constants() -> None:
    found = _all_nested()
    assert not found, (
        f"pipeline channels nested inside list/struct constants: {sorted(found)}; pass the "
        "channel as a plain input (e.g. package_uri=channel, not package_uris=[channel]; "
        "training_args=parameter, not args=['--epochs', parameter])"
    )


@pytest.mark.parametrize("pipeline", sorted(SHIPPED))
def test_pipelines_pass_the_training_package_as_a_string_channel(pipeline: str) -> None:
    spec = compile_to_dict(SHIPPED[pipeline])
    package_inputs = [
        parameter
        for component in [spec["root"], *spec.get("components", {}).values()]
        for task in component.get("dag", {}).get("tasks", {}).values()
        for name, parameter in task.get("inputs", {}).get("parameters", {}).items()
        if name in {"package_uri", "package_uris"}
    ]
    assert package_inputs, f"{pipeline} passes no training package"
    assert all(
        "componentInputParameter" in parameter or "taskOutputParameter" in parameter
        for parameter in package_inputs
    ), package_inputs

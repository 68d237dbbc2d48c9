"""Component defaults come from vertex_retrain.specs.defaults, never from a literal copy."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from types import SimpleNamespace
from typing import Any

import pytest

import vertex_retrain.components as components
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import EVALUATION, RUN_PLACEHOLDERS, TRAINING, TUNING

DEFINED = [
    (field.name, getattr(definition, field.name))
    for definition in (TRAINING, TUNING, EVALUATION, RUN_PLACEHOLDERS)
    for field in dataclasses.fields(definition)
]
"""Every (name, value) vertex_retrain.specs.defaults defines; a literal default with both is a
copy (a serving ``machine_type`` of its own is not)."""


def _value(node: ast.expr) -> Any:
    """A default's value where it is a literal (or literals joined with +), else the node."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = _value(node.left), _value(node.right)
            if isinstance(left, str) and isinstance(right, str):
                return left + right
        return ast.dump(node)


def test_defaults_from_fills_ellipsis_from_the_first_source_that_has_the_name() -> None:
    @defaults_from(SimpleNamespace(size=3), SimpleNamespace(size=9, kind="a"))
    def func(name: str, size: int = ..., kind: str = ..., note: str = "kept") -> Any:
        return name, size, kind, note

    assert func("n") == ("n", 3, "a", "kept")
    assert inspect.signature(func).parameters["size"].default == 3


def test_defaults_from_fills_keyword_only_defaults_too() -> None:
    @defaults_from(SimpleNamespace(size=3))
    def func(*, size: int = ...) -> int:
        return size

    assert func() == 3


def test_defaults_from_refuses_an_ellipsis_no_source_defines() -> None:
    with pytest.raises(TypeError, match=r"func: input 'colour' defaults to \.\.\. but none of"):

        @defaults_from(SimpleNamespace(size=3))
        def func(size: int = ..., colour: str = ...) -> None:
            pass


@pytest.mark.parametrize(
    "component", [name for name in components.__all__ if name != "set_component_image"]
)
def test_component_source_leaves_every_defined_default_to_the_definition(component: str) -> None:
    func = getattr(components, component)
    tree = ast.parse(textwrap.dedent(inspect.getsource(func.python_func)))
    (definition,) = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    arguments = definition.args
    with_defaults = arguments.args[len(arguments.args) - len(arguments.defaults) :]
    literal = {
        argument.arg: default
        for argument, default in zip(with_defaults, arguments.defaults, strict=True)
        if not (isinstance(default, ast.Constant) and default.value is Ellipsis)
    }
    copies = {
        name: value
        for name, value in ((name, _value(default)) for name, default in literal.items())
        if (name, value) in DEFINED
    }
    assert copies == {}, f"{component} repeats defaults of specs.defaults: {copies}"
    shipped = inspect.signature(func.python_func).parameters
    assert all(parameter.default is not ... for parameter in shipped.values())


def test_component_placeholder_defaults_are_the_runs_own() -> None:
    shipped = inspect.signature(components.train_custom_job.python_func).parameters
    assert shipped["project"].default == "{{$.pipeline_google_cloud_project_id}}"
    assert shipped["location"].default == "{{$.pipeline_google_cloud_location}}"
    assert shipped["service_account"].default == "{{$.pipeline_service_account}}"

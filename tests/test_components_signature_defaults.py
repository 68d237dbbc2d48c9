"""Component defaults come from vertex_retrain.specs.defaults, never from a literal copy."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from types import SimpleNamespace
from typing import Any

import pytest

from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import EVALUATION, TRAINING, TUNING

DEFINED = {
    field.name
    for definition in (TRAINING, TUNING, EVALUATION)
    for field in dataclasses.fields(definition)
}
"""Every name vertex_retrain.specs.defaults gives a default."""


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
    "component", ["train_custom_job", "hp_tune", "evaluate_model", "run_summary"]
)
def test_component_source_leaves_every_defined_default_to_the_definition(component: str) -> None:
    import importlib

    func = getattr(importlib.import_module(f"vertex_retrain.components.{component}"), component)
    tree = ast.parse(textwrap.dedent(inspect.getsource(func.python_func)))
    (definition,) = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    arguments = definition.args
    with_defaults = arguments.args[len(arguments.args) - len(arguments.defaults) :]
    literal = {
        argument.arg: ast.literal_eval(default)
        for argument, default in zip(with_defaults, arguments.defaults, strict=True)
        if argument.arg in DEFINED
        and not (isinstance(default, ast.Constant) and default.value is Ellipsis)
    }
    assert literal == {}, f"{component} repeats defaults of specs.defaults: {literal}"
    shipped = inspect.signature(func.python_func).parameters
    filled = {name: shipped[name].default for name in shipped if name in DEFINED}
    assert filled and all(value is not ... for value in filled.values()), filled

"""The declaration a pipeline parameter holds, by its name, for any pipeline.

A parameter named ``dataset_declaration`` or ``evaluation_declaration`` holds that declaration
whatever pipeline declares it, as the components that take it read it. Its value is parsed by
the library's own parser wherever a value is given: :func:`configure` for a default, and every
command for a ``--param`` value, a schedule's ``parameter_values``, a compiled default and
``vertex_retrain.run_local``'s arguments (:mod:`vertex_retrain.cli.params`). A malformed one
would otherwise pass a run's first steps and fail only at the step that reads it (on Vertex:
after the steps before it were paid for).

Standard library only: the command line reads it at start; the parsers load on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["DECLARATION_PARSERS", "declaration_parser", "declaration_problem"]

DECLARATION_PARSERS: dict[str, str] = {
    "dataset_declaration": "vertex_retrain.contracts.dataset:parse_dataset_declaration",
    "evaluation_declaration": (
        "vertex_retrain.contracts.evaluation_declaration:parse_evaluation_declaration"
    ),
}
"""Parameter name -> ``module:function`` that parses its value (raising ``ValueError``)."""


def declaration_parser(name: str) -> Callable[[Any], Any] | None:
    """The parser of the declaration a parameter of this name holds, or None when it holds
    none."""
    target = DECLARATION_PARSERS.get(name)
    if target is None:
        return None
    module, attribute = target.split(":")
    parser: Callable[[Any], Any] = getattr(importlib.import_module(module), attribute)
    return parser


def declaration_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is not a valid declaration for parameter ``name``, or None.

    Returns:
        One line naming the parameter, with the parser's message (the field, the value and
        what is allowed); None when the value parses or the parameter holds no declaration.
    """
    parser = declaration_parser(name)
    if parser is None:
        return None
    try:
        parser(value)
    except ValueError as error:
        return f"parameter {name!r}: {' '.join(str(error).split())}"
    return None

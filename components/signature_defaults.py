"""Component defaults from their one definition, :mod:`vertex_retrain.specs.defaults`.

KFP embeds a lightweight component's source and runs it on its own, so a default written as
``TRAINING.machine_type`` in the signature would be a ``NameError`` there. A component writes
``...`` instead, and :func:`defaults_from` sets the defined value on the function before KFP
reads its signature: the compiled spec, Vertex's console and direct calls get the value, with
no literal copy. The embedded source keeps ``...``; KFP always calls it with every input (a
backend fills a missing one from the compiled spec's default), and the request builders
(:func:`vertex_retrain.steps.job_request.request_fields`) would take a ``...`` as unset all
the same.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

Function = TypeVar("Function", bound=Callable[..., Any])


def defaults_from(*sources: object) -> Callable[[Function], Function]:
    """Sets each ``...`` default of a function to the attribute of that name in ``sources``.

    Args:
        sources: Objects holding defaults as attributes (``TUNING, TRAINING``); the first
            that has the name wins.

    Returns:
        A decorator that changes the function's defaults in place and returns it.

    Raises:
        TypeError: A parameter defaults to ``...`` and no source defines it (at import, so a
            component never ships a ``...``).
    """

    def fill(func: Function) -> Function:
        def value(name: str, default: Any) -> Any:
            if default is not ...:
                return default
            for source in sources:
                if hasattr(source, name):
                    return getattr(source, name)
            where = ", ".join(type(source).__name__ for source in sources)
            raise TypeError(
                f"{func.__name__}: input {name!r} defaults to ... but none of {where} "
                "defines it; add it there or write the default"
            )

        parameters = inspect.signature(func).parameters.values()
        with_default = [
            p
            for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is not p.empty
        ]
        if with_default:
            func.__defaults__ = tuple(value(p.name, p.default) for p in with_default)
        if func.__kwdefaults__:
            func.__kwdefaults__ = {
                name: value(name, default) for name, default in func.__kwdefaults__.items()
            }
        return func

    return fill

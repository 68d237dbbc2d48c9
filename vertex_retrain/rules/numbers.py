"""Whole-number doubles are integers.

A compiled pipeline spec stores every number as a double (a protobuf ``Struct``), and Vertex
returns numbers so: a declared ``32`` comes back as ``32.0``, also inside a dict or list
parameter. Wherever such a value is shown, compared or sent on as an integer, it goes through
:func:`whole_numbers` first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def whole_numbers(value: Any) -> Any:
    """``value`` with each finite whole-number float, at any depth, made an int.

    Args:
        value: A scalar, or dicts and lists (tuples read as lists) holding them.

    Returns:
        ``32`` for ``32.0``, ``{"dim": 32}`` for ``{"dim": 32.0}``; ``0.5``, ``inf``, ``nan``,
        booleans, strings and ints unchanged.
    """
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [whole_numbers(item) for item in value]
    return value

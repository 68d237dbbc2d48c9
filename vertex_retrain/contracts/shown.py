"""How a contract error shows the value it refuses: its ``repr``, cut to a line's share.

``repr`` escapes control characters, so a hostile value cannot move a terminal's cursor, and
80 characters keep an error message on one line however large the value was.
"""

from __future__ import annotations

from typing import Any

__all__ = ["shown"]

_LIMIT = 80


def shown(value: Any) -> str:
    """``repr(value)``, cut to 80 characters (the cut marked ``...``)."""
    text = repr(value)
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."

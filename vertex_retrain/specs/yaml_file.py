"""Reads the YAML tables shipped with the package (machine, container and price catalogs).

Each table has its own parser; this module gives them one way to read the file and one way
to fail: a single ``ValueError`` that names the file and, when it is malformed, the packaged
file to compare it with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

__all__ = ["load_yaml_table"]

T = TypeVar("T")


def load_yaml_table(path: Path, *, what: str, default: Path, parse: Callable[[Any], T]) -> T:
    """Reads ``path`` as YAML and returns what ``parse`` makes of it.

    Args:
        path: The YAML file.
        what: The table's name in messages, e.g. ``"machine catalog"``.
        default: The packaged file of the same table, named when ``path`` is malformed.
        parse: Builds the table from the loaded YAML; a KeyError, TypeError, ValueError,
            AttributeError or IndexError from it means the file is malformed.

    Raises:
        ValueError: The file cannot be read, is not YAML, or does not have the expected
            structure.
    """
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read {what} {path}: {exc}") from exc
    try:
        return parse(raw)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ValueError(
            f"{what} {path} is malformed ({type(exc).__name__}: {exc}); compare it with {default}"
        ) from exc

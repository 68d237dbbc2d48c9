"""A LIST or STRUCT pipeline parameter given as ``--param NAME=@FILE``: its value from a file.

A dataset declaration or a list of tuning parameters is too long to type as JSON on the
command line; it lives in the user's repository as JSON or YAML. The file is read through
:mod:`vertex_retrain.specs.safe_load` (a regular file, bounded size, depth and alias
expansion), like every other file the command line reads.
"""

from __future__ import annotations

from typing import Any

from vertex_retrain.specs.safe_load import JOB_FILE_LIMITS, LoadError, load_file

__all__ = ["value_from_file"]


def value_from_file(path: str, expected: type[list[Any]] | type[dict[str, Any]]) -> Any:
    """The list or dict a JSON (``.json``) or YAML file holds.

    Args:
        path: The file, as given after ``@``.
        expected: ``list`` for a LIST parameter, ``dict`` for a STRUCT one.

    Returns:
        The value.

    Raises:
        ValueError: No path, a file that cannot be read or parsed, or one holding another
            type; the message is one line, without the parameter's name.
    """
    kind = "a JSON list" if expected is list else "a JSON object"
    if not path:
        raise ValueError("no file after '@' (write @PATH of a JSON or YAML file)")
    try:
        value = load_file(path, limits=JOB_FILE_LIMITS)
    except LoadError as error:
        raise ValueError(
            f"cannot read {kind} from {path}: {' '.join(str(error).split())}"
        ) from None
    if not isinstance(value, expected):
        raise ValueError(f"{path} holds a {type(value).__name__}, not {kind}")
    return value

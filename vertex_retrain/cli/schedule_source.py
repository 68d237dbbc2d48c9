"""The schedules a ``schedule --schedules`` argument names, declared in the user's repository.

``--schedules FILE.yaml`` reads a list of declarations
(:func:`vertex_retrain.schedules.load_declarations`); ``--schedules module:ATTR`` or
``path/to/file.py:ATTR`` names a tuple of
:class:`~vertex_retrain.schedules.ScheduleDeclaration` in Python code. The library itself
declares none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.cli.python_refs import (
    PythonReferenceError,
    load_attribute,
    parse_python_reference,
)
from vertex_retrain.schedules import ScheduleDeclaration, ScheduleError, load_declarations

__all__ = ["DeclaredSchedules", "load_schedules"]


@dataclass(frozen=True)
class DeclaredSchedules:
    """Schedules, and where the pipelines they name are found.

    Attributes:
        declarations: The schedules, in declared order.
        base: The folder relative ``pipeline`` paths start from: the YAML file's folder; None
            (the working folder) for declarations in Python.
    """

    declarations: tuple[ScheduleDeclaration, ...]
    base: Path | None


def _is_declarations(value: Any) -> bool:
    return isinstance(value, tuple | list) and all(
        isinstance(item, ScheduleDeclaration) for item in value
    )


def load_schedules(reference: str) -> DeclaredSchedules:
    """Reads the schedules ``reference`` names.

    Args:
        reference: A YAML or JSON file of declarations, or ``module:ATTR`` /
            ``path/to/file.py:ATTR`` naming a tuple of ``ScheduleDeclaration``.

    Raises:
        ScheduleError: Nothing usable is named, or a declaration is invalid, or two share a
            display name (one line).
    """
    try:
        parsed = parse_python_reference(reference)
        if parsed is None:
            return DeclaredSchedules(load_declarations(reference), Path(reference).parent)
        found = load_attribute(
            parsed,
            shown=reference,
            what="tuple of ScheduleDeclaration",
            accept=_is_declarations,
        )
    except PythonReferenceError as error:
        raise ScheduleError(str(error)) from None
    declarations = tuple(found)
    names = [declaration.display_name for declaration in declarations]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ScheduleError(
            f"{reference}: display names declared more than once: {', '.join(repeated)}"
        )
    return DeclaredSchedules(declarations, None)

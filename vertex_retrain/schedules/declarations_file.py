"""Schedules declared in a YAML (or JSON) file of the user's repository.

The file is a list with one mapping per schedule, whose keys are the fields of
:class:`~vertex_retrain.schedules.declaration.ScheduleDeclaration`::

    - display_name: nightly-demand-forecast      # the key on Vertex
      pipeline_name: demand-weekly                # the uploaded template it runs
      pipeline: pipelines.py:weekly               # its source, for the checks before a change
      cron: "0 2 * * *"
      time_zone: Europe/Amsterdam
      parameter_values: {gate_periods: 7}   # optional: {} takes the template's defaults
      max_concurrent_run_count: 1                 # optional (1)
      paused: false                               # optional (false)

It is read through :mod:`vertex_retrain.specs.safe_load` (a regular file, bounded), and every
declaration is checked as it is built; a mistake is one :class:`ScheduleError` naming the file,
the schedule and the field.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vertex_retrain.schedules.cron import ScheduleError
from vertex_retrain.schedules.declaration import ScheduleDeclaration

__all__ = ["load_declarations"]

_FIELDS = {f.name: f for f in dataclasses.fields(ScheduleDeclaration)}
_REQUIRED = tuple(
    name
    for name, f in _FIELDS.items()
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
)
_TEXT = ("display_name", "pipeline_name", "cron", "time_zone", "pipeline")


def load_declarations(path: str | Path) -> tuple[ScheduleDeclaration, ...]:
    """Reads and checks the schedules declared in a file.

    Args:
        path: A YAML file (or ``.json``) holding a list of declarations.

    Returns:
        The declarations, in file order.

    Raises:
        ScheduleError: The file cannot be read, is not a list of mappings, or a declaration
            has an unknown or missing field, a value of the wrong type, an invalid cron or
            time zone, or a display name used twice (one line).
    """
    from vertex_retrain.specs.safe_load import LoadError, load_file

    try:
        document = load_file(path)
    except LoadError as error:
        raise ScheduleError(f"{path}: {' '.join(str(error).split())}") from None
    if not isinstance(document, list):
        raise ScheduleError(
            f"{path}: expected a list of schedules (- display_name: ...), got a "
            f"{type(document).__name__}"
        )
    declarations = tuple(_declaration(path, index, item) for index, item in enumerate(document))
    names = [declaration.display_name for declaration in declarations]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ScheduleError(f"{path}: display names declared more than once: {', '.join(repeated)}")
    return declarations


def _declaration(path: str | Path, index: int, item: Any) -> ScheduleDeclaration:
    position = f"{path}: schedule {index + 1}"
    if not isinstance(item, Mapping):
        raise ScheduleError(f"{position}: expected a mapping of fields, got {item!r}")
    name = item.get("display_name")
    where = f"{position} ({name})" if isinstance(name, str) else position
    for key in item:
        if key not in _FIELDS:
            close = difflib.get_close_matches(str(key), list(_FIELDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ScheduleError(
                f"{where}: unknown field {key!r}{hint}; fields: {', '.join(_FIELDS)}"
            )
    missing = [name for name in _REQUIRED if name not in item]
    if missing:
        raise ScheduleError(f"{where}: missing {', '.join(missing)}")
    for name in _TEXT:
        if name in item and not isinstance(item[name], str):
            raise ScheduleError(f"{where}: {name} must be text, got {item[name]!r}")
    if "parameter_values" in item and not isinstance(item["parameter_values"], Mapping):
        raise ScheduleError(
            f"{where}: parameter_values must be a mapping of parameter names to values, got "
            f"{item['parameter_values']!r}"
        )
    try:
        return ScheduleDeclaration(**item)
    except ScheduleError as error:  # its message starts with the display name
        raise ScheduleError(f"{position}: {error}") from None

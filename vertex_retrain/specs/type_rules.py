"""Type rule: every field holds the JSON type its ``aiplatform_v1`` field takes.

The other rules read fields as the proto says they are (``imageUri`` a string, ``strategy``
an enum name, ``values`` a list of numbers). A value of another type (``imageUri: 42``,
``strategy: [SPOT]``) is reported here, with its path and the type expected, and the field
is taken out of the copy the other rules read, so no rule ever meets a value of the wrong
type. Problems those rules would report at or below a field taken out are dropped
(:func:`below_removed`): the type error already says what is wrong there.

Types follow the proto JSON mapping: integers may be written as decimal strings, floats as
numbers or numeric strings, enums as names or numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.specs.payload_io import as_float, as_int
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.proto_fields import FieldTable, ProtoField

WRONG_TYPE = "wrong-type"

_EXPECTED = {
    "string": "a string",
    "int": "an integer (a number or a decimal string)",
    "float": "a number",
    "bool": "true or false",
    "enum": "an enum name (a string)",
    "any": "any JSON value",
    "message": "an object of fields",
    "list": "a list",
    "map": "an object of keys and values",
}


def _fits(value: Any, json_type: str) -> bool:
    # Any other type ("any", or "" where the table names none) takes every JSON value.
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "bool":
        return isinstance(value, bool)
    if json_type == "int":
        return as_int(value) is not None
    if json_type == "float":
        return as_float(value) is not None
    if json_type == "enum":
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    return True


def _shown(value: Any) -> Any:
    # Small values as written; a large subtree only by its shape.
    if isinstance(value, Mapping | list | tuple):
        try:
            small = len(json.dumps(value, default=str)) <= 60
        except ValueError:  # a structure that contains itself
            small = False
        if small:
            return value
        if isinstance(value, Mapping):
            return "{" + ", ".join(str(k) for k in list(value)[:8]) + "}"
        return f"[{len(value)} item(s)]"
    return value


@dataclass
class _Walk:
    table: FieldTable
    problems: list[Problem] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def _wrong(self, path: str, value: Any, expected: str, field_name: str) -> None:
        self.removed.append(path)
        self.problems.append(
            error(
                path,
                _shown(value),
                f"{field_name} must be {_EXPECTED[expected]}, not {_kind(value)}; Vertex "
                "refuses the payload.",
                [_EXPECTED[expected]],
                code=WRONG_TYPE,
            )
        )

    def message(self, value: Mapping[str, Any], message_name: str, path: str) -> dict[str, Any]:
        """Returns a copy of ``value`` without the fields of the wrong type."""
        message = self.table[message_name]
        kept: dict[str, Any] = {}
        for key, item in value.items():
            found = message.lookup(str(key))
            child = f"{path}.{key}" if path else str(key)
            if found is None or item is None:
                kept[key] = item  # unknown keys are the field rule's; null is "not set"
                continue
            checked = self._field(item, found, child)
            if checked is not _REMOVED:
                kept[key] = checked
        return kept

    def _field(self, item: Any, found: ProtoField, path: str) -> Any:
        if found.repeated:
            if not isinstance(item, list):
                self._wrong(path, item, "list", found.json_name)
                return _REMOVED
            elements = [self._single(e, found, f"{path}[{i}]") for i, e in enumerate(item)]
            if any(e is _REMOVED for e in elements):
                self.removed.append(path)  # rules index the list: take it out whole
                return _REMOVED
            return elements
        return self._single(item, found, path)

    def _single(self, item: Any, found: ProtoField, path: str) -> Any:
        if found.kind == "message":
            if not isinstance(item, Mapping):
                self._wrong(path, item, "message", found.json_name)
                return _REMOVED
            return self.message(item, found.message, path)
        if found.kind == "map":
            if not isinstance(item, Mapping):
                self._wrong(path, item, "map", found.json_name)
                return _REMOVED
            return self._map(item, found, path)
        if not _fits(item, found.json_type):
            self._wrong(path, item, found.json_type, found.json_name)
            return _REMOVED
        return item

    def _map(self, item: Mapping[str, Any], found: ProtoField, path: str) -> Any:
        kept: dict[str, Any] = {}
        for key, element in item.items():
            child = f"{path}[{key!r}]"
            if found.message:
                if not isinstance(element, Mapping):
                    self._wrong(child, element, "message", f"{found.json_name}[{key!r}]")
                    continue
                kept[key] = self.message(element, found.message, child)
            elif _fits(element, found.json_type):
                kept[key] = element
            else:
                self._wrong(child, element, found.json_type, f"{found.json_name}[{key!r}]")
        return kept


_REMOVED: Any = object()


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"[:80]
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def check_field_types(
    resource: Mapping[str, Any], message_name: str, table: FieldTable
) -> tuple[list[Problem], dict[str, Any], tuple[str, ...]]:
    """Reports every field whose value has the wrong JSON type, and removes it.

    Args:
        resource: The camelCase resource (``NormalizedJob.resource``).
        message_name: Full name of its message, e.g. ``google.cloud.aiplatform.v1.CustomJob``.
        table: Field table (:func:`vertex_retrain.specs.proto_fields.job_field_table`).

    Returns:
        One ``wrong-type`` error per wrong value, a copy of ``resource`` without those
        fields, and the paths removed.
    """
    walk = _Walk(table)
    kept = walk.message(resource, message_name, "")
    return walk.problems, kept, tuple(walk.removed)


def below_removed(problems: Iterable[Problem], removed: tuple[str, ...]) -> list[Problem]:
    """Drops problems at or below a removed field (the type error covers them).

    Args:
        problems: Problems of the other rules.
        removed: Paths from :func:`check_field_types`.

    Returns:
        ``problems`` without those whose field is a removed path or lies below one.
    """
    if not removed:
        return list(problems)
    return [
        p
        for p in problems
        if not any(p.field == r or p.field.startswith((f"{r}.", f"{r}[")) for r in removed)
    ]

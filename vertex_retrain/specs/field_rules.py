"""Field-name rule: every key of a payload must be a field of its ``aiplatform_v1`` message.

The payload is walked as the user wrote it (camelCase or snake_case), message by message,
against the field table of :mod:`vertex_retrain.specs.proto_fields`. An unknown key is an
error that names its path, its value and the closest field names ("did you mean"), in the
user's own spelling. Keys of map fields (``labels``) and free-form JSON (``Struct``,
``Value``) belong to the user and are never checked.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.specs.payload_io import snake_to_camel
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.proto_fields import FieldTable, MessageFields

UNKNOWN_FIELD = "unknown-field"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(value: Any) -> Any:
    # The unknown key is the point, not a whole subtree under it.
    if isinstance(value, Mapping):
        return "{" + ", ".join(str(k) for k in value) + "}"
    if isinstance(value, list | tuple):
        return f"[{len(value)} item(s)]"
    return value


def _suggestions(key: str, message: MessageFields) -> list[str]:
    """Closest field names, best first, in the spelling of ``key``; one per field."""
    snake = "_" in key
    own = message.spellings(snake=snake)
    other = message.spellings(snake=not snake)
    by_spelling = dict(zip(own + other, own + own, strict=True))
    matches = difflib.get_close_matches(key, own + other, n=6, cutoff=0.6)
    folded = [n for n in own if n.lower().replace("_", "") == key.lower().replace("_", "")]
    return list(dict.fromkeys(folded + [by_spelling[m] for m in matches]))[:3]


def _unknown(key: str, value: Any, path: str, message: MessageFields) -> tuple[Problem, str]:
    close = _suggestions(key, message)
    spelling = "snake_case" if "_" in key else "camelCase"
    if close:
        hint = f" Did you mean {close[0]!r}?"
        alternatives = close
    else:
        hint = f" Fields of {message.name} ({spelling}) are listed as alternatives."
        alternatives = message.spellings(snake="_" in key)
    problem = error(
        path,
        _shown(value),
        f"Unknown field {key!r}: aiplatform_v1.{message.name} has no such field, and Vertex "
        f"refuses the payload.{hint}",
        alternatives,
        code=UNKNOWN_FIELD,
    )
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    return problem, _join(parent, snake_to_camel(close[0])) if close else ""


@dataclass
class _Walk:
    table: FieldTable
    problems: list[Problem] = field(default_factory=list)
    meant: set[str] = field(default_factory=set)

    def message(self, value: Any, message_name: str, path: str) -> None:
        if not isinstance(value, Mapping):
            return  # a type problem, reported by the rules that read the field
        message = self.table[message_name]
        for raw_key, item in value.items():
            key = str(raw_key)
            child = _join(path, snake_to_camel(key))
            found = message.lookup(key)
            if found is None:
                problem, meant = _unknown(key, item, child, message)
                self.problems.append(problem)
                self.meant.add(meant)
            elif found.kind == "message" and found.repeated:
                if isinstance(item, list):
                    for index, element in enumerate(item):
                        self.message(element, found.message, f"{child}[{index}]")
            elif found.kind == "message":
                self.message(item, found.message, child)
            elif found.kind == "map" and found.message and isinstance(item, Mapping):
                for map_key, element in item.items():
                    self.message(element, found.message, f"{child}[{map_key!r}]")


def check_field_names(
    document: Any, message_name: str, table: FieldTable, *, path: str = ""
) -> tuple[list[Problem], frozenset[str]]:
    """Reports every key of ``document`` that is not a field of its message.

    Args:
        document: The payload as written (camelCase or snake_case keys).
        message_name: Full name of the payload's message, e.g.
            ``google.cloud.aiplatform.v1.CustomJob``.
        table: Field table (:func:`vertex_retrain.specs.proto_fields.job_field_table`).
        path: Field path of ``document`` itself (``jobSpec`` for a bare job-spec body).

    Returns:
        One ``unknown-field`` error per unknown key (camelCase paths, like every other
        problem's), and the paths the misspelt keys most likely meant.
    """
    walk = _Walk(table)
    walk.message(document, message_name, path)
    return walk.problems, frozenset(walk.meant - {""})


def superseded(problems: Iterable[Problem], meant: frozenset[str]) -> list[Problem]:
    """Drops "missing field" problems that a misspelt key explains.

    ``acceleratorTyp`` makes ``acceleratorType`` look missing; the unknown-field error
    already says what to write, so the missing-field one would only mislead.

    Args:
        problems: Problems of the other rules.
        meant: Paths the misspelt keys most likely meant (from :func:`check_field_names`).

    Returns:
        ``problems`` without those reporting a missing value at one of the ``meant`` paths.
    """
    return [p for p in problems if not (p.value is None and p.field in meant)]

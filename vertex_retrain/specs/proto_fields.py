"""The field names of the ``aiplatform_v1`` job messages, read from their proto descriptors.

The descriptors of ``CustomJob`` and ``HyperparameterTuningJob`` (and every message under
them) are the truth for which fields a payload may hold, in both spellings the proto JSON
parser accepts: the JSON name (camelCase) and the proto name (snake_case). Walking them
gives a plain table (:class:`MessageFields` per message) that the field rule
(:mod:`vertex_retrain.specs.field_rules`) checks payloads against.

``google.cloud.aiplatform_v1`` is heavy, so it is imported only when :func:`job_field_table`
first runs (validation), never when this module is imported.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

FieldKind = Literal["message", "map", "opaque", "scalar"]

CUSTOM_JOB = "google.cloud.aiplatform.v1.CustomJob"
CUSTOM_JOB_SPEC = "google.cloud.aiplatform.v1.CustomJobSpec"
TUNING_JOB = "google.cloud.aiplatform.v1.HyperparameterTuningJob"

# Messages whose JSON form is not an object of named fields (Struct, Value, Duration "3600s",
# Timestamp, wrappers, Any): their content is the user's, never checked for field names.
_OPAQUE_PACKAGES = ("google.protobuf.",)


@dataclass(frozen=True)
class ProtoField:
    """One field of a message.

    Attributes:
        name: Proto (snake_case) name, e.g. ``accelerator_type``.
        json_name: JSON (camelCase) name, e.g. ``acceleratorType``.
        kind: ``message`` (named fields below), ``map`` (user keys; values are ``message``
            when it is set), ``opaque`` (free-form JSON) or ``scalar``.
        message: Full name of the message below (``message`` kind, or a map of messages).
        repeated: True for a list.
        json_type: The JSON value a ``scalar`` or ``opaque`` field (or a map's values) takes:
            ``string``, ``int`` (a number or a decimal string), ``float`` (the same, or
            ``"NaN"``...), ``bool``, ``enum`` (a name or a number) or ``any``; empty for
            messages.
    """

    name: str
    json_name: str
    kind: FieldKind
    message: str = ""
    repeated: bool = False
    json_type: str = ""


@dataclass(frozen=True)
class MessageFields:
    """The fields of one message, found by either spelling.

    Attributes:
        name: Short message name, e.g. ``MachineSpec``.
        fields: Proto name and JSON name -> field.
    """

    name: str
    fields: Mapping[str, ProtoField]

    def lookup(self, key: str) -> ProtoField | None:
        """Returns the field spelt ``key`` (exactly, in either spelling), or None."""
        return self.fields.get(key)

    def spellings(self, *, snake: bool) -> list[str]:
        """Every field name in one spelling, in declaration order."""
        unique = dict.fromkeys(self.fields.values())
        return [f.name if snake else f.json_name for f in unique]


FieldTable = Mapping[str, MessageFields]
"""Full message name -> its fields."""


# Proto JSON form of scalar types (FieldDescriptor.TYPE_*) and of the well-known messages.
_INT_TYPES = frozenset({3, 4, 5, 6, 7, 13, 15, 16, 17, 18})
_SCALAR_JSON = {1: "float", 2: "float", 8: "bool", 9: "string", 12: "string", 14: "enum"}
_JSON_TYPES = frozenset({"", "string", "int", "float", "bool", "enum", "any"})
_WELL_KNOWN_JSON = {
    "google.protobuf.Duration": "string",
    "google.protobuf.Timestamp": "string",
    "google.protobuf.FieldMask": "string",
    "google.protobuf.StringValue": "string",
    "google.protobuf.BytesValue": "string",
    "google.protobuf.BoolValue": "bool",
    "google.protobuf.DoubleValue": "float",
    "google.protobuf.FloatValue": "float",
    "google.protobuf.Int32Value": "int",
    "google.protobuf.Int64Value": "int",
    "google.protobuf.UInt32Value": "int",
    "google.protobuf.UInt64Value": "int",
}


def _json_type(descriptor: Any) -> str:
    target = descriptor.message_type
    if target is not None:
        return _WELL_KNOWN_JSON.get(target.full_name, "any")
    if descriptor.type in _INT_TYPES:
        return "int"
    return _SCALAR_JSON.get(descriptor.type, "any")


def _field(descriptor: Any) -> ProtoField:
    # protobuf >= 6 has ``is_repeated`` (``label`` is deprecated); older ones only ``label``.
    repeated = bool(
        descriptor.is_repeated
        if hasattr(descriptor, "is_repeated")
        else descriptor.label == descriptor.LABEL_REPEATED
    )
    target = descriptor.message_type
    if target is None:
        return ProtoField(
            descriptor.name, descriptor.json_name, "scalar", "", repeated, _json_type(descriptor)
        )
    if target.GetOptions().map_entry:
        value_field = target.fields_by_name["value"]
        value = value_field.message_type
        below = "" if value is None or _opaque(value.full_name) else value.full_name
        json_type = "" if below else _json_type(value_field)
        return ProtoField(descriptor.name, descriptor.json_name, "map", below, json_type=json_type)
    if _opaque(target.full_name):
        return ProtoField(
            descriptor.name, descriptor.json_name, "opaque", "", repeated, _json_type(descriptor)
        )
    return ProtoField(descriptor.name, descriptor.json_name, "message", target.full_name, repeated)


def _opaque(full_name: str) -> bool:
    return full_name.startswith(_OPAQUE_PACKAGES)


def table_from_descriptors(roots: Iterable[Any]) -> FieldTable:
    """Walks message descriptors (and every message below them) into a field table.

    Args:
        roots: Protobuf ``Descriptor`` objects, e.g. ``CustomJob.pb().DESCRIPTOR``.

    Returns:
        The table of every message reached, recursive messages included once.
    """
    table: dict[str, MessageFields] = {}
    pending = list(roots)
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in table:
            continue
        fields = {}
        for field_descriptor in descriptor.fields:
            field = _field(field_descriptor)
            fields[field.name] = fields[field.json_name] = field
            if field.message:
                below = field_descriptor.message_type
                if field.kind == "map":
                    below = below.fields_by_name["value"].message_type
                pending.append(below)
        table[descriptor.full_name] = MessageFields(descriptor.name, MappingProxyType(fields))
    return MappingProxyType(table)


@functools.cache
def job_field_table() -> FieldTable:
    """The field table of ``aiplatform_v1.CustomJob`` and ``HyperparameterTuningJob``.

    Imports ``google.cloud.aiplatform_v1`` (about a second) on the first call only.
    """
    from google.cloud import aiplatform_v1  # heavy: imported only for validation

    return table_from_descriptors(
        [
            aiplatform_v1.CustomJob.pb().DESCRIPTOR,
            aiplatform_v1.HyperparameterTuningJob.pb().DESCRIPTOR,
        ]
    )


def table_to_json(table: FieldTable) -> dict[str, Any]:
    """The table as plain JSON data (message -> short name and its fields), for a cache."""
    return {
        full_name: {
            "name": message.name,
            "fields": [
                [f.name, f.json_name, f.kind, f.message, f.repeated, f.json_type]
                for f in dict.fromkeys(message.fields.values())
            ],
        }
        for full_name, message in table.items()
    }


def table_from_json(data: Mapping[str, Any]) -> FieldTable:
    """The inverse of :func:`table_to_json`: every part of the type it has there, and every
    message a field names present.

    Raises:
        ValueError: The data is not in that shape (a damaged or foreign cache file).
    """
    table: dict[str, MessageFields] = {}
    try:
        for full_name, message in data.items():
            fields: dict[str, ProtoField] = {}
            for name, json_name, kind, below, repeated, json_type in message["fields"]:
                if not all(isinstance(text, str) for text in (name, json_name, below)):
                    raise ValueError(f"a field name that is not a text in {full_name}")
                if not isinstance(repeated, bool):
                    raise ValueError(f"{name}'s repeated flag {repeated!r} is not a boolean")
                if kind not in ("message", "map", "opaque", "scalar"):
                    raise ValueError(f"unknown field kind {kind!r}")
                if json_type not in _JSON_TYPES:
                    raise ValueError(f"unknown JSON type {json_type!r}")
                field = ProtoField(name, json_name, kind, below, repeated, json_type)
                fields[field.name] = fields[field.json_name] = field
            if not isinstance(message["name"], str):
                raise ValueError(f"{full_name}'s name is not a text")
            table[str(full_name)] = MessageFields(message["name"], MappingProxyType(fields))
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"not a field table: {error}") from None
    named = {f.message for message in table.values() for f in message.fields.values()}
    for required in sorted(named - {""} | {CUSTOM_JOB, CUSTOM_JOB_SPEC, TUNING_JOB}):
        if required not in table:
            raise ValueError(f"not a field table: {required} is missing")
    return MappingProxyType(table)

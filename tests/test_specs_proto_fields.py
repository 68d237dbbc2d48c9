"""The field table read from proto descriptors: every kind of field a message can hold, and
the table's JSON form (the local cache) both ways.

A small proto built here holds what the aiplatform_v1 job messages hold and a few they do
not (a map of messages, a map of free-form values, ``bytes``, every integer type), so each
branch of the walk is seen with its exact result.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, struct_pb2, wrappers_pb2

from vertex_retrain.specs.proto_fields import (
    CUSTOM_JOB,
    CUSTOM_JOB_SPEC,
    TUNING_JOB,
    ProtoField,
    job_field_table,
    table_from_descriptors,
    table_from_json,
    table_to_json,
)

F = descriptor_pb2.FieldDescriptorProto
OPTIONAL, REPEATED = F.LABEL_OPTIONAL, F.LABEL_REPEATED


def _field(name: str, number: int, kind: int, label: int = OPTIONAL, type_name: str = "") -> F:
    field = F(name=name, number=number, type=kind, label=label)
    if type_name:
        field.type_name = type_name
    return field


def _entry(name: str, value: F) -> descriptor_pb2.DescriptorProto:
    entry = descriptor_pb2.DescriptorProto(
        name=name,
        field=[_field("key", 1, F.TYPE_STRING), value],
    )
    entry.options.map_entry = True
    return entry


def _descriptors() -> Any:
    pool = descriptor_pool.DescriptorPool()
    for module in (struct_pb2, wrappers_pb2, duration_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    root = descriptor_pb2.DescriptorProto(
        name="Root",
        field=[
            _field("display_name", 1, F.TYPE_STRING),
            _field("counts", 2, F.TYPE_INT64, REPEATED),
            _field("ratio", 3, F.TYPE_DOUBLE),
            _field("share", 4, F.TYPE_FLOAT),
            _field("on", 5, F.TYPE_BOOL),
            _field("blob", 6, F.TYPE_BYTES),
            _field("kind", 7, F.TYPE_ENUM, type_name=".t.Kind"),
            _field("child", 8, F.TYPE_MESSAGE, type_name=".t.Child"),
            _field("children", 9, F.TYPE_MESSAGE, REPEATED, ".t.Child"),
            _field("by_key", 10, F.TYPE_MESSAGE, REPEATED, ".t.Root.ByKeyEntry"),
            _field("sizes", 11, F.TYPE_MESSAGE, REPEATED, ".t.Root.SizesEntry"),
            _field("extras", 12, F.TYPE_MESSAGE, REPEATED, ".t.Root.ExtrasEntry"),
            _field("config", 13, F.TYPE_MESSAGE, type_name=".google.protobuf.Struct"),
            _field("limit", 14, F.TYPE_MESSAGE, type_name=".google.protobuf.Int32Value"),
            _field("wait", 15, F.TYPE_MESSAGE, type_name=".google.protobuf.Duration"),
            _field("tags", 16, F.TYPE_MESSAGE, REPEATED, ".google.protobuf.Value"),
        ],
        nested_type=[
            _entry("ByKeyEntry", _field("value", 2, F.TYPE_MESSAGE, type_name=".t.Leaf")),
            _entry("SizesEntry", _field("value", 2, F.TYPE_INT32)),
            _entry("ExtrasEntry", _field("value", 2, F.TYPE_MESSAGE,
                                         type_name=".google.protobuf.Value")),
        ],
    )  # fmt: skip
    child = descriptor_pb2.DescriptorProto(
        name="Child",
        field=[
            _field("parent", 1, F.TYPE_MESSAGE, type_name=".t.Root"),  # recursion
            _field("n", 2, F.TYPE_UINT32),
            _field("s", 3, F.TYPE_SINT64),
            _field("f", 4, F.TYPE_FIXED32),
            _field("g", 5, F.TYPE_SFIXED64),
            _field("h", 6, F.TYPE_INT32),
            _field("big", 7, F.TYPE_UINT64),
            _field("fixed", 8, F.TYPE_FIXED64),
            _field("small", 9, F.TYPE_SFIXED32),
            _field("signed", 10, F.TYPE_SINT32),
        ],
    )
    leaf = descriptor_pb2.DescriptorProto(name="Leaf", field=[_field("v", 1, F.TYPE_STRING)])
    unspecified = descriptor_pb2.EnumValueDescriptorProto(name="KIND_UNSPECIFIED", number=0)
    kind = descriptor_pb2.EnumDescriptorProto(name="Kind", value=[unspecified])
    pool.Add(
        descriptor_pb2.FileDescriptorProto(
            name="t.proto",
            package="t",
            syntax="proto3",
            dependency=[
                "google/protobuf/struct.proto",
                "google/protobuf/wrappers.proto",
                "google/protobuf/duration.proto",
            ],
            message_type=[root, child, leaf],
            enum_type=[kind],
        )
    )
    return pool.FindMessageTypeByName("t.Root")


def _fields(table: Any, message: str) -> list[ProtoField]:
    return list(dict.fromkeys(table[message].fields.values()))


def test_table_from_descriptors_gives_each_kind_of_field_its_exact_entry() -> None:
    table = table_from_descriptors([_descriptors()])
    assert sorted(table) == ["t.Child", "t.Leaf", "t.Root"]  # the map's entry type is not one
    assert table["t.Root"].name == "Root"
    assert _fields(table, "t.Root") == [
        ProtoField("display_name", "displayName", "scalar", "", False, "string"),
        ProtoField("counts", "counts", "scalar", "", True, "int"),
        ProtoField("ratio", "ratio", "scalar", "", False, "float"),
        ProtoField("share", "share", "scalar", "", False, "float"),
        ProtoField("on", "on", "scalar", "", False, "bool"),
        ProtoField("blob", "blob", "scalar", "", False, "string"),
        ProtoField("kind", "kind", "scalar", "", False, "enum"),
        ProtoField("child", "child", "message", "t.Child", False, ""),
        ProtoField("children", "children", "message", "t.Child", True, ""),
        ProtoField("by_key", "byKey", "map", "t.Leaf", False, ""),
        ProtoField("sizes", "sizes", "map", "", False, "int"),
        ProtoField("extras", "extras", "map", "", False, "any"),
        ProtoField("config", "config", "opaque", "", False, "any"),
        ProtoField("limit", "limit", "opaque", "", False, "int"),
        ProtoField("wait", "wait", "opaque", "", False, "string"),
        ProtoField("tags", "tags", "opaque", "", True, "any"),
    ]
    assert {f.json_type for f in _fields(table, "t.Child")[1:]} == {"int"}
    assert _fields(table, "t.Child")[0] == ProtoField(
        "parent", "parent", "message", "t.Root", False, ""
    )
    # Both spellings find the same field, and nothing else does.
    root = table["t.Root"]
    assert root.lookup("byKey") is root.lookup("by_key") is not None
    assert root.lookup("ByKey") is None and root.lookup("by-key") is None
    assert root.spellings(snake=True)[:2] == ["display_name", "counts"]
    assert root.spellings(snake=False)[:2] == ["displayName", "counts"]


def test_table_json_round_trip_keeps_every_field() -> None:
    table = table_from_descriptors([_descriptors()])
    data = table_to_json(table)
    assert data["t.Root"]["name"] == "Root"
    assert data["t.Root"]["fields"][9] == ["by_key", "byKey", "map", "t.Leaf", False, ""]
    # A foreign table needs the job messages too: give them, empty.
    for name in (CUSTOM_JOB, CUSTOM_JOB_SPEC, TUNING_JOB):
        data[name] = {"name": name.rsplit(".", 1)[1], "fields": []}
    again = table_from_json(data)
    for name in table:
        assert again[name] == table[name]


def test_table_json_round_trip_of_the_job_messages() -> None:
    table = job_field_table()
    assert dict(table_from_json(table_to_json(table))) == dict(table)


def _damaged(change: Any) -> dict[str, Any]:
    data = table_to_json(job_field_table())
    change(data)
    return data


def _first_field(data: dict[str, Any]) -> list[Any]:
    return data[CUSTOM_JOB]["fields"][0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: _first_field(d).__setitem__(0, 7), "a field name that is not a text in "
         f"{CUSTOM_JOB}"),
        (lambda d: _first_field(d).__setitem__(1, None), "a field name that is not a text in "
         f"{CUSTOM_JOB}"),
        (lambda d: _first_field(d).__setitem__(3, 1), "a field name that is not a text in "
         f"{CUSTOM_JOB}"),
        (lambda d: _first_field(d).__setitem__(4, "no"), "name's repeated flag 'no' is not a "
         "boolean"),
        (lambda d: _first_field(d).__setitem__(2, "list"), "unknown field kind 'list'"),
        (lambda d: _first_field(d).__setitem__(5, "text"), "unknown JSON type 'text'"),
        (lambda d: d[CUSTOM_JOB].__setitem__("name", 3), f"{CUSTOM_JOB}'s name is not a text"),
        (lambda d: d.pop(CUSTOM_JOB_SPEC), f"{CUSTOM_JOB_SPEC} is missing"),
        (lambda d: d.pop(TUNING_JOB), f"{TUNING_JOB} is missing"),
        (lambda d: d.pop("google.cloud.aiplatform.v1.MachineSpec"),
         "google.cloud.aiplatform.v1.MachineSpec is missing"),
        (lambda d: _first_field(d).pop(), "not enough values to unpack"),
        (lambda d: d[CUSTOM_JOB].pop("fields"), "'fields'"),
        (lambda d: d.__setitem__(CUSTOM_JOB, []), "list indices must be integers"),
    ],
)  # fmt: skip
def test_table_from_json_refuses_a_damaged_table_naming_what(change: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        table_from_json(_damaged(change))
    text = str(raised.value)
    assert text.startswith("not a field table: ") and message in text, text


def test_table_from_json_refuses_what_is_not_a_mapping() -> None:
    with pytest.raises(ValueError, match=r"^not a field table: "):
        table_from_json([])  # type: ignore[arg-type]


@pytest.mark.parametrize(("label", "repeated"), [(3, True), (1, False)])
def test_proto_field_reads_repeated_from_the_label_on_protobuf_before_6(
    label: int, repeated: bool
) -> None:
    from types import SimpleNamespace

    from vertex_retrain.specs.proto_fields import _field

    old = SimpleNamespace(  # protobuf < 6: no is_repeated, only label
        name="args", json_name="args", type=9, message_type=None, label=label, LABEL_REPEATED=3
    )
    assert _field(old) == ProtoField("args", "args", "scalar", "", repeated, "string")

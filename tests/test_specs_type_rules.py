"""The type rule: each JSON type a field takes, the error's wording, and what is taken out.

Most cases run on the real ``aiplatform_v1`` field table; a small hand-made table covers the
shapes no job message has (a map of messages, a field of any JSON type).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.proto_fields import (
    CUSTOM_JOB,
    TUNING_JOB,
    MessageFields,
    ProtoField,
    job_field_table,
)
from vertex_retrain.specs.type_rules import below_removed, check_field_types

WORKER = "jobSpec.workerPoolSpecs[0]"


def _custom(**overrides: Any) -> dict[str, Any]:
    machine = {"machineType": "n1-standard-8", **overrides.pop("machine", {})}
    return {
        "displayName": overrides.pop("displayName", "case"),
        "jobSpec": {
            "workerPoolSpecs": [
                {"machineSpec": machine, "containerSpec": {"imageUri": "gcr.io/p/i:1"}}
            ],
            **overrides,
        },
    }


def _check(payload: dict[str, Any], root: str = CUSTOM_JOB) -> list[Problem]:
    problems, _, _ = check_field_types(payload, root, job_field_table())
    return problems


def _only(payload: dict[str, Any], root: str = CUSTOM_JOB) -> Problem:
    (problem,) = _check(payload, root)
    return problem


@pytest.mark.parametrize(
    ("value", "fits"),
    [(2, True), ("2", True), (2.0, True), (2.5, False), ("two", False), (True, False)],
)
def test_type_of_an_integer_field_is_a_number_or_a_decimal_string(value: Any, fits: bool) -> None:
    problems = _check(_custom(machine={"acceleratorCount": value}))
    assert [p.field for p in problems] == (
        [] if fits else [f"{WORKER}.machineSpec.acceleratorCount"]
    )


@pytest.mark.parametrize(
    ("value", "fits"), [("SPOT", True), (2, True), (["SPOT"], False), (True, False), (1.5, False)]
)
def test_type_of_an_enum_field_is_a_name_or_a_number(value: Any, fits: bool) -> None:
    problems = _check(_custom(scheduling={"strategy": value}))
    assert [p.field for p in problems] == ([] if fits else ["jobSpec.scheduling.strategy"])


@pytest.mark.parametrize(
    ("value", "fits"), [(True, True), (False, True), ("true", False), (1, False)]
)
def test_type_of_a_boolean_field_is_true_or_false(value: Any, fits: bool) -> None:
    problems = _check(_custom(scheduling={"disableRetries": value}))
    assert [p.field for p in problems] == ([] if fits else ["jobSpec.scheduling.disableRetries"])


@pytest.mark.parametrize(
    ("value", "fits"), [(0.5, True), (0, True), ("0.5", True), ("low", False), (False, False)]
)
def test_type_of_a_float_field_is_a_number_or_a_numeric_string(value: Any, fits: bool) -> None:
    param = {"parameterId": "lr", "doubleValueSpec": {"minValue": value, "maxValue": 1}}
    problems = _check({"displayName": "t", "studySpec": {"parameters": [param]}}, TUNING_JOB)
    field = "studySpec.parameters[0].doubleValueSpec.minValue"
    assert [p.field for p in problems] == ([] if fits else [field])


@pytest.mark.parametrize(("value", "fits"), [("gcr.io/p/i:1", True), (42, False), (None, True)])
def test_type_of_a_string_field_is_a_string_and_null_is_not_set(value: Any, fits: bool) -> None:
    payload = _custom()
    payload["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] = value
    problems = _check(payload)
    assert [p.field for p in problems] == ([] if fits else [f"{WORKER}.containerSpec.imageUri"])


def test_type_of_a_duration_is_its_string_form() -> None:
    # proto3 JSON writes a Duration as "3600s"; a bare number is refused by Vertex.
    assert _check(_custom(scheduling={"timeout": "3600s"})) == []
    problem = _only(_custom(scheduling={"timeout": 3600}))
    assert problem.message == (
        "timeout must be a string, not the number 3600; Vertex refuses the payload."
    )


def test_type_error_names_the_field_value_expected_type_and_code() -> None:
    problem = _only(_custom(machine={"acceleratorCount": "two"}))
    assert problem == error(
        f"{WORKER}.machineSpec.acceleratorCount",
        "two",
        "acceleratorCount must be an integer (a number or a decimal string), not the string "
        "'two'; Vertex refuses the payload.",
        ["an integer (a number or a decimal string)"],
        code="wrong-type",
    )


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (True, "the boolean true"),
        (False, "the boolean false"),
        (1.5, "the number 1.5"),
        ({"a": 1}, "an object"),
        ([1], "a list"),
        (dt.date(2024, 1, 1), "date"),  # what YAML makes of 2024-01-01
    ],
)
def test_type_error_says_what_was_found(value: Any, kind: str) -> None:
    problem = _only(_custom(displayName=value))
    assert (
        problem.message == f"displayName must be a string, not {kind}; Vertex refuses the payload."
    )


@pytest.mark.parametrize(("length", "shown"), [(67, "'" + "a" * 67 + "'"), (68, "'" + "a" * 68)])
def test_type_error_cuts_a_long_string_to_eighty_characters(length: int, shown: str) -> None:
    problem = _only(_custom(machine={"acceleratorCount": "a" * length}))
    assert f"not the string {shown}; Vertex" in problem.message


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (["x" * 56], ["x" * 56]),  # 60 characters of JSON: shown as written
        (["x" * 57], "[1 item(s)]"),  # 61: only its shape
        ({"k": "v" * 51}, {"k": "v" * 51}),
        ({"k": "v" * 52}, "{k}"),
        ({f"k{i}": "v" * 8 for i in range(9)}, "{k0, k1, k2, k3, k4, k5, k6, k7}"),
    ],
)
def test_type_error_shows_a_large_value_by_its_shape(value: Any, shown: Any) -> None:
    assert _only(_custom(displayName=value)).value == shown


def test_type_error_shows_a_value_that_contains_itself_by_its_shape() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert _only(_custom(displayName=loop)).value == "[1 item(s)]"


def test_type_error_shows_a_value_yaml_parsed_as_a_date_as_written() -> None:
    assert _only(_custom(displayName=[dt.date(2024, 1, 1)])).value == [dt.date(2024, 1, 1)]


def test_type_of_a_message_field_is_an_object() -> None:
    problem = _only({"displayName": "x", "jobSpec": "n1-standard-8"})
    assert (problem.field, problem.alternatives) == ("jobSpec", ("an object of fields",))
    assert problem.message.startswith("jobSpec must be an object of fields, not the string")


def test_type_of_a_repeated_field_is_a_list() -> None:
    payload = _custom()
    payload["jobSpec"]["workerPoolSpecs"] = payload["jobSpec"]["workerPoolSpecs"][0]
    problems, kept, removed = check_field_types(payload, CUSTOM_JOB, job_field_table())
    (problem,) = problems
    assert problem.field == "jobSpec.workerPoolSpecs"
    assert problem.message == (
        "workerPoolSpecs must be a list, not an object; Vertex refuses the payload."
    )
    assert removed == ("jobSpec.workerPoolSpecs",)
    assert kept == {"displayName": "case", "jobSpec": {}}


def test_type_error_in_one_element_takes_the_whole_list_out() -> None:
    param = {"parameterId": "batch", "discreteValueSpec": {"values": [16, "x", 64]}}
    payload = {"displayName": "t", "studySpec": {"parameters": [param]}}
    problems, kept, removed = check_field_types(payload, TUNING_JOB, job_field_table())
    values = "studySpec.parameters[0].discreteValueSpec.values"
    (problem,) = problems
    assert (problem.field, problem.value) == (f"{values}[1]", "x")
    assert problem.message.startswith("values must be a number, not the string 'x'")
    assert removed == (f"{values}[1]", values)
    assert kept["studySpec"]["parameters"] == [{"parameterId": "batch", "discreteValueSpec": {}}]


def test_type_of_a_map_is_an_object_and_each_value_is_checked() -> None:
    problem = _only(_custom() | {"labels": ["team=ml"]})
    assert (problem.field, problem.value) == ("labels", ["team=ml"])
    assert problem.message == (
        "labels must be an object of keys and values, not a list; Vertex refuses the payload."
    )
    assert problem.alternatives == ("an object of keys and values",)
    payload = _custom() | {"labels": {"team": "ml", "size": 5}}
    problems, kept, removed = check_field_types(payload, CUSTOM_JOB, job_field_table())
    (problem,) = problems
    assert (problem.field, problem.value) == ("labels['size']", 5)
    assert problem.message == (
        "labels['size'] must be a string, not the number 5; Vertex refuses the payload."
    )
    assert removed == ("labels['size']",)
    assert kept["labels"] == {"team": "ml"}


def test_type_rule_keeps_unknown_keys_and_nulls_for_the_other_rules() -> None:
    payload = _custom(acceleratorTyp=5) | {"description": None}
    problems, kept, removed = check_field_types(payload, CUSTOM_JOB, job_field_table())
    assert (problems, removed) == ([], ())
    assert kept == payload


def test_type_rule_reads_on_past_an_unknown_key_and_a_null() -> None:
    machine = {"acceleratorTyp": "T4", "acceleratorType": None, "acceleratorCount": "x"}
    payload = {"displayName": "x", "jobSpec": {"workerPoolSpecs": [{"machineSpec": machine}]}}
    (problem,) = _check(payload)
    assert problem.field == f"{WORKER}.machineSpec.acceleratorCount"


def test_type_rule_walks_nested_messages_and_keeps_what_fits() -> None:
    payload = _custom(machine={"acceleratorCount": "x", "acceleratorType": "NVIDIA_TESLA_T4"})
    _, kept, removed = check_field_types(payload, CUSTOM_JOB, job_field_table())
    assert removed == (f"{WORKER}.machineSpec.acceleratorCount",)
    machine = kept["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    assert machine == {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4"}


# A table with the shapes the job messages lack: a map of messages and untyped values.
_TABLE = {
    "t.Root": MessageFields(
        "Root",
        {
            "things": ProtoField("things", "things", "map", message="t.Thing"),
            "extras": ProtoField("extras", "extras", "map"),
            "anything": ProtoField("anything", "anything", "opaque"),
        },
    ),
    "t.Thing": MessageFields(
        "Thing", {"size": ProtoField("size", "size", "scalar", json_type="int")}
    ),
}


def test_type_of_each_value_of_a_map_of_messages_is_checked() -> None:
    payload = {"things": {"a": {"size": "big"}, "b": 5, "c": {"size": 2}}}
    problems, kept, removed = check_field_types(payload, "t.Root", _TABLE)
    assert [(p.field, p.value) for p in problems] == [
        ("things['a'].size", "big"),
        ("things['b']", 5),
    ]
    assert problems[1].message == (
        "things['b'] must be an object of fields, not the number 5; Vertex refuses the payload."
    )
    assert removed == ("things['a'].size", "things['b']")
    assert kept == {"things": {"a": {}, "c": {"size": 2}}}


def test_type_of_an_untyped_field_or_map_value_is_any_json() -> None:
    payload = {"extras": {"a": [1], "b": {"c": None}}, "anything": {"x": 1}}
    assert check_field_types(payload, "t.Root", _TABLE) == ([], payload, ())


def _problem(field: str) -> Problem:
    return error(field, None, "missing")


def test_below_removed_drops_the_field_and_what_lies_below_it() -> None:
    fields = ["a.b", "a.b.c", "a.b[0]", "a.bc", "a", "x.a.b"]
    kept = below_removed([_problem(f) for f in fields], ("a.b",))
    assert [p.field for p in kept] == ["a.bc", "a", "x.a.b"]


def test_below_removed_without_removed_fields_keeps_everything() -> None:
    problems = [_problem("a"), _problem("b")]
    assert below_removed(iter(problems), ()) == problems

"""The field-name rule at its edges: did-you-mean in the user's spelling, the fallback list of
fields, what the error shows of the value, where the walk goes, and which missing-field
problems a misspelt key explains."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.specs.field_rules import check_field_names, superseded
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.proto_fields import (
    CUSTOM_JOB,
    CUSTOM_JOB_SPEC,
    TUNING_JOB,
    MessageFields,
    ProtoField,
    job_field_table,
)

M0 = "jobSpec.workerPoolSpecs[0].machineSpec"
MACHINE_FIELDS = (
    "machineType",
    "acceleratorType",
    "acceleratorCount",
    "gpuPartitionSize",
    "tpuTopology",
    "reservationAffinity",
)
MACHINE_FIELDS_SNAKE = (
    "machine_type",
    "accelerator_type",
    "accelerator_count",
    "gpu_partition_size",
    "tpu_topology",
    "reservation_affinity",
)


def _machine(**fields: Any) -> dict[str, Any]:
    machine = {"machineType": "n1-standard-8", **fields}
    return {"displayName": "x", "jobSpec": {"workerPoolSpecs": [{"machineSpec": machine}]}}


def _only(document: Any, root: str = CUSTOM_JOB, path: str = "") -> tuple[Problem, frozenset[str]]:
    (problem,), meant = check_field_names(document, root, job_field_table(), path=path)
    return problem, meant


def _message(key: str, message: str, hint: str) -> str:
    return (
        f"Unknown field {key!r}: aiplatform_v1.{message} has no such field, and Vertex refuses "
        f"the payload. {hint}"
    )


def test_unknown_field_error_names_path_value_close_fields_and_the_field_meant() -> None:
    problem, meant = _only(_machine(acceleratorTyp="NVIDIA_TESLA_T4"))
    assert problem == error(
        f"{M0}.acceleratorTyp",
        "NVIDIA_TESLA_T4",
        _message("acceleratorTyp", "MachineSpec", "Did you mean 'acceleratorType'?"),
        ["acceleratorType", "acceleratorCount"],
        code="unknown-field",
    )
    assert meant == {f"{M0}.acceleratorType"}


def test_unknown_snake_case_field_is_answered_in_snake_case_at_a_camel_case_path() -> None:
    problem, meant = _only(_machine(accelerator_typ="NVIDIA_TESLA_T4"))
    assert problem.field == f"{M0}.acceleratorTyp"
    assert problem.alternatives == ("accelerator_type", "accelerator_count")
    assert meant == {f"{M0}.acceleratorType"}


def test_unknown_field_differing_only_in_case_suggests_that_field_first() -> None:
    problem, _ = _only(_machine(ACCELERATORTYPE="NVIDIA_TESLA_T4"))
    assert problem.alternatives == ("acceleratorType",)


def test_unknown_field_close_to_the_other_spelling_is_answered_in_the_key_s_spelling() -> None:
    # "workerPoolSpecs_" holds an underscore: it is read as snake_case.
    problem, meant = _only({"workerPoolSpecs_": []}, CUSTOM_JOB_SPEC, "jobSpec")
    assert problem.alternatives == ("worker_pool_specs",)
    assert meant == {"jobSpec.workerPoolSpecs"}


@pytest.mark.parametrize(
    ("key", "alternatives"),
    [
        # Matched through its camelCase spelling, answered in the key's snake_case.
        ("_createTime", ("create_time", "update_time")),
        # Both spellings of a field match: it is named once, and three fields still are.
        ("_create_time", ("create_time", "update_time", "end_time")),
        ("_startTime", ("start_time", "state", "update_time")),
        # kebab-case is closest to the snake_case spellings, answered in camelCase.
        ("max-trial-count", ("maxTrialCount", "maxFailedTrialCount", "parallelTrialCount")),
    ],
)
def test_unknown_field_matches_both_spellings_and_names_each_field_once(
    key: str, alternatives: tuple[str]
) -> None:
    problem, _ = _only({"displayName": "t", key: "2026-01-01T00:00:00Z"}, TUNING_JOB)
    assert problem.alternatives == alternatives


def test_unknown_snake_case_field_differing_only_in_case_suggests_that_field() -> None:
    problem, meant = _only(_machine(MACHINE_TYPE="n1-standard-8"))
    assert problem.alternatives == ("machine_type",)
    assert meant == {f"{M0}.machineType"}


def test_unknown_top_level_field_means_the_top_level_field() -> None:
    problem, meant = _only({"displayNam": "x"})
    assert (problem.field, problem.alternatives[0]) == ("displayNam", "displayName")
    assert meant == {"displayName"}


@pytest.mark.parametrize(
    ("key", "alternatives"),
    [
        ("TrialCount", ("maxTrialCount", "parallelTrialCount", "maxFailedTrialCount")),
        ("trial_count", ("max_trial_count", "parallel_trial_count", "max_failed_trial_count")),
    ],
)
def test_unknown_field_suggests_at_most_three_fields(
    key: str, alternatives: tuple[str, ...]
) -> None:
    problem, _ = _only({"displayName": "t", key: 4}, TUNING_JOB)
    assert problem.alternatives == alternatives


@pytest.mark.parametrize(
    ("key", "spelling", "fields"),
    [
        ("zzz", "camelCase", MACHINE_FIELDS),
        ("zz_z", "snake_case", MACHINE_FIELDS_SNAKE),
    ],
)
def test_unknown_field_without_a_close_one_lists_every_field_in_the_key_s_spelling(
    key: str, spelling: str, fields: tuple[str, ...]
) -> None:
    problem, meant = _only(_machine(**{key: 1}))
    hint = f"Fields of MachineSpec ({spelling}) are listed as alternatives."
    assert problem.message == _message(key, "MachineSpec", hint)
    assert problem.alternatives == fields
    assert meant == frozenset()


@pytest.mark.parametrize(
    ("value", "shown"),
    [({"a": 1, "b": [2]}, "{a, b}"), ([1, 2], "[2 item(s)]"), ((1,), "[1 item(s)]"), (3, 3)],
)
def test_unknown_field_error_shows_a_value_by_its_shape(value: Any, shown: Any) -> None:
    problem, _ = _only(_machine(zzz=value))
    assert problem.value == shown


def test_unknown_fields_are_found_in_each_element_of_a_repeated_message() -> None:
    pools = [{"machineSpec": {"machineType": "n1"}}, {"machineSpec": {"machineTyp": "n1"}}]
    problem, _ = _only({"workerPoolSpecs": pools}, CUSTOM_JOB_SPEC, "jobSpec")
    assert problem.field == "jobSpec.workerPoolSpecs[1].machineSpec.machineTyp"


def test_field_walk_reads_on_after_an_unknown_key() -> None:
    problems, _ = check_field_names(
        {"displayNam": "x", "jobSpec": {"networkk": "n"}}, CUSTOM_JOB, job_field_table()
    )
    assert [p.field for p in problems] == ["displayNam", "jobSpec.networkk"]


def test_field_walk_leaves_values_of_the_wrong_shape_to_the_type_rule() -> None:
    document = {"displayName": "x", "jobSpec": {"workerPoolSpecs": {"machineSpec": {"x": 1}}}}
    assert check_field_names(document, CUSTOM_JOB, job_field_table()) == ([], frozenset())
    # Objects where a map holds strings, or in free-form JSON, are the user's keys.
    document = {"labels": {"team": {"x": {"y": 1}}}, "jobSpec": {"scheduling": {"timeout": {}}}}
    document["jobSpec"]["scheduling"]["timeout"] = {"x": {"y": 1}}
    assert check_field_names(document, CUSTOM_JOB, job_field_table()) == ([], frozenset())
    assert check_field_names(["not", "an", "object"], CUSTOM_JOB, job_field_table()) == (
        [],
        frozenset(),
    )


# No job message has a map of messages; a hand-made table has one.
_TABLE = {
    "t.Root": MessageFields(
        "Root",
        {
            "things": ProtoField("things", "things", "map", message="t.Thing"),
            "tags": ProtoField("tags", "tags", "map", json_type="string"),
        },
    ),
    "t.Thing": MessageFields("Thing", {"size": ProtoField("size", "size", "scalar")}),
}


def test_unknown_fields_are_found_in_each_value_of_a_map_of_messages() -> None:
    document = {"things": {"a": {"size": 1}, "b": {"sise": 2}, "c": 3}, "tags": {"any": "x"}}
    problems, meant = check_field_names(document, "t.Root", _TABLE)
    assert [p.field for p in problems] == ["things['b'].sise"]
    assert meant == {"things['b'].size"}


def _missing(field: str, value: Any = None) -> Problem:
    return error(field, value, "missing")


def test_superseded_drops_only_missing_values_at_the_fields_meant() -> None:
    meant = frozenset({f"{M0}.acceleratorType"})
    problems = [
        _missing(f"{M0}.acceleratorType"),
        _missing(f"{M0}.acceleratorType", "NVIDIA_TESLA_T4"),
        _missing(f"{M0}.acceleratorCount"),
    ]
    assert superseded(problems, meant) == problems[1:]

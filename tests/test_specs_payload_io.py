"""Reading a job payload: field-name spellings, the three shapes a job file takes, and the
proto JSON forms of numbers and durations, each on both sides of what it accepts."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.specs.payload_io import (
    NormalizedJob,
    as_float,
    as_int,
    mapping,
    normalize_job,
    parse_duration,
    snake_to_camel,
    to_camel_keys,
)


@pytest.mark.parametrize(
    ("name", "camel"),
    [
        ("worker_pool_specs", "workerPoolSpecs"),
        ("workerPoolSpecs", "workerPoolSpecs"),
        ("tpu_v5_topology", "tpuV5Topology"),
        ("a_b", "aB"),
        ("trailing_", "trailing_"),
        ("Upper_Case", "Upper_Case"),  # only a lowercase letter or digit after "_" is joined
    ],
)
def test_snake_to_camel(name: str, camel: str) -> None:
    assert snake_to_camel(name) == camel


def test_to_camel_keys_converts_every_field_name_but_keeps_user_keys() -> None:
    payload = {
        "display_name": "j",
        "labels": {"cost_center": "ml", "team_name": "x"},
        "job_spec": {
            "worker_pool_specs": [
                {"machine_spec": {"machine_type": "n1"}},
                ({"replica_count": 1},),
            ],
            "labels": ["not_a_map"],
        },
        7: "seven",
    }
    assert to_camel_keys(payload) == {
        "displayName": "j",
        "labels": {"cost_center": "ml", "team_name": "x"},
        "jobSpec": {
            "workerPoolSpecs": [{"machineSpec": {"machineType": "n1"}}, [{"replicaCount": 1}]],
            "labels": ["not_a_map"],
        },
        "7": "seven",
    }
    labels = {"a_b": "c"}
    copied = to_camel_keys({"labels": labels})["labels"]
    assert copied == labels and copied is not labels  # a copy, not the caller's dict


@pytest.mark.parametrize(
    ("payload", "kind", "resource", "prefix"),
    [
        ({"study_spec": {}}, "tuning_job", {"studySpec": {}}, ""),
        ({"trialJobSpec": {}}, "tuning_job", {"trialJobSpec": {}}, ""),
        ({"trialJobSpec": {}, "jobSpec": {}}, "tuning_job", {"trialJobSpec": {}, "jobSpec": {}},
         ""),
        ({"job_spec": {"a": 1}}, "custom_job", {"jobSpec": {"a": 1}}, ""),
        ({"worker_pool_specs": []}, "custom_job", {"jobSpec": {"workerPoolSpecs": []}},
         "jobSpec."),
    ],
)  # fmt: skip
def test_normalize_job_tells_the_three_shapes_apart(
    payload: dict[str, Any], kind: str, resource: dict[str, Any], prefix: str
) -> None:
    assert normalize_job(payload) == NormalizedJob(kind, resource, prefix)  # type: ignore[arg-type]


def test_normalize_job_refuses_what_is_not_a_job_naming_what_it_found() -> None:
    with pytest.raises(ValueError) as raised:
        normalize_job({"display_name": "x", "spec": {}})
    assert str(raised.value) == (
        "cannot tell what kind of job this is: expected 'jobSpec' (CustomJob), 'studySpec' and "
        "'trialJobSpec' (HyperparameterTuningJob) or 'workerPoolSpecs' (gcloud --config "
        "job-spec body) at the top level; found keys ['displayName', 'spec']"
    )
    with pytest.raises(ValueError) as raised:
        normalize_job(["jobSpec"])  # type: ignore[arg-type]
    assert str(raised.value) == (
        "expected a job definition (a mapping), got list; write a CustomJob / "
        "HyperparameterTuningJob resource or a gcloud --config job-spec body"
    )


@pytest.mark.parametrize(
    ("prefix", "path", "shown"),
    [
        ("jobSpec.", "jobSpec.workerPoolSpecs[0]", "workerPoolSpecs[0]"),
        ("jobSpec.", "labels", "labels"),
        ("", "jobSpec.workerPoolSpecs[0]", "jobSpec.workerPoolSpecs[0]"),
    ],
)
def test_normalized_job_user_path_drops_the_prefix_a_bare_body_lacks(
    prefix: str, path: str, shown: str
) -> None:
    assert NormalizedJob("custom_job", {}, prefix).user_path(path) == shown


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (3, 3), (-2, -2), (0, 0), (4.0, 4), ("12", 12), (" -7 ", -7), ("+7", None),
        (True, None), (False, None), (4.5, None), ("4.0", None), ("1e3", None), ("", None),
        (None, None), ([1], None),
    ],
)  # fmt: skip
def test_as_int_reads_integers_in_either_json_form(value: Any, read: int | None) -> None:
    assert as_int(value) == read
    assert type(as_int(value)) is (int if read is not None else type(None))


@pytest.mark.parametrize(
    ("value", "read"),
    [(3, 3.0), (2.5, 2.5), ("0.25", 0.25), ("NaN", "nan"), (True, None), ("x", None),
     (None, None), ({}, None)],
)  # fmt: skip
def test_as_float_reads_numbers_and_numeric_strings(value: Any, read: Any) -> None:
    got = as_float(value)
    if read == "nan":
        assert got is not None and got != got
    else:
        assert got == read and (read is None or type(got) is float)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3600s", 3600.0), (" 60s ", 60.0), ("0.5s", 0.5), ("1.123456789s", 1.123456789),
        ("1.1234567891s", None), ("3600", None), ("1.s", None), ("-5s", None), ("5 s", None),
        ("5m", None), (3600, None), (None, None),
    ],
)  # fmt: skip
def test_parse_duration_reads_proto_json_durations_only(value: Any, seconds: float | None) -> None:
    assert parse_duration(value) == seconds


def test_mapping_passes_a_mapping_and_empties_anything_else() -> None:
    given = {"a": 1}
    assert mapping(given) is given
    assert mapping([("a", 1)]) == {} and mapping(None) == {} and mapping("a") == {}

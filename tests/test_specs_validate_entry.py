"""The validation entry points: which shape they take, what they pass on (catalog, date,
field table, field check), and the resource-level rules (display name, labels)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.test_specs_cases import LR, job, pool, study
from vertex_retrain.specs import validate_custom_job, validate_tuning_job
from vertex_retrain.specs.machine_catalog import load_catalog
from vertex_retrain.specs.proto_fields import job_field_table
from vertex_retrain.specs.validate import validate_job

IMAGE = "europe-docker.pkg.dev/p/r/trainer@sha256:" + "0" * 64
CPU = pool("n1-standard-4", image=IMAGE)
GCS = {"outputUriPrefix": "gs://b/run"}


def _said(problems: list[Any]) -> list[tuple[Any, ...]]:
    return [(p.severity, p.field, p.value, p.message, p.alternatives, p.code) for p in problems]


def test_validate_custom_job_accepts_a_valid_job_and_a_bare_body() -> None:
    assert validate_custom_job(job(CPU, baseOutputDirectory=GCS)) == []
    assert validate_custom_job({"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS}) == []


def test_validate_refuses_the_other_kind_naming_the_function_to_call() -> None:
    tuning = study([LR])
    assert _said(validate_custom_job(tuning)) == [
        ("error", "", "tuning_job", "Expected a custom job, got a tuning job.",
         ("validate_tuning_job",), "shape"),
    ]  # fmt: skip
    assert _said(validate_tuning_job(job(CPU))) == [
        ("error", "", "custom_job", "Expected a tuning job, got a custom job.",
         ("validate_custom_job",), "shape"),
    ]  # fmt: skip


def test_validate_refuses_what_is_no_job_with_one_shape_problem() -> None:
    (problem,) = validate_custom_job({"spec": {}})
    assert (problem.severity, problem.field, problem.value, problem.code) == (
        "error", "", None, "shape",
    )  # fmt: skip
    assert problem.message.startswith("cannot tell what kind of job this is")


@pytest.mark.parametrize(
    ("name", "problems"),
    [
        ("x" * 128, []),
        ("x" * 129, [("error", "displayName", "x" * 129,
                      "129 characters; Vertex takes at most 128 in a display name.",
                      ("a name of 1 to 128 characters",), "display-name")]),
        ("", [("error", "displayName", None, "A job resource needs a display name.",
               ("displayName: recommender-train",), "display-name")]),
    ],
)  # fmt: skip
def test_validate_custom_job_display_name_limits(name: str, problems: list[Any]) -> None:
    payload = job(CPU, baseOutputDirectory=GCS)
    payload["displayName"] = name
    assert _said(validate_custom_job(payload)) == problems


def test_validate_a_bare_body_needs_no_display_name() -> None:
    assert validate_custom_job({"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS}) == []


def test_validate_checks_labels_and_a_bare_body_s_field_names() -> None:
    (problem,) = validate_custom_job(job(CPU, baseOutputDirectory=GCS, labels={"Team": "ml"}))
    assert (problem.field, problem.alternatives, problem.code) == (
        "labels.Team", ("team=ml",), "labels",
    )  # fmt: skip
    # A bare body is checked as the CustomJobSpec it is, under jobSpec.
    body = {"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS, "nope": 1}
    (unknown,) = validate_custom_job(body)
    assert (unknown.field, unknown.code) == ("jobSpec.nope", "unknown-field")
    assert "aiplatform_v1.CustomJobSpec has no such field" in unknown.message


def test_validate_checks_field_names_only_when_asked() -> None:
    payload = job(CPU, baseOutputDirectory=GCS)
    payload["jobSpec"]["workerPoolSpecz"] = []
    assert [p.field for p in validate_custom_job(payload)] == ["jobSpec.workerPoolSpecz"]
    assert validate_custom_job(payload, check_fields=False) == []


def test_validate_uses_the_field_table_it_is_given() -> None:
    table = dict(job_field_table())
    spec = table["google.cloud.aiplatform.v1.CustomJobSpec"]
    fields = {k: v for k, v in spec.fields.items() if v.name != "base_output_directory"}
    table["google.cloud.aiplatform.v1.CustomJobSpec"] = type(spec)(spec.name, fields)
    payload = job(CPU, baseOutputDirectory=GCS)
    assert validate_custom_job(payload) == []
    fields_named = [p.field for p in validate_custom_job(payload, field_table=table)]
    assert "jobSpec.baseOutputDirectory" in fields_named
    tuning = study([LR], trialJobSpec={"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS})
    assert "trialJobSpec.baseOutputDirectory" in [
        p.field for p in validate_tuning_job(tuning, field_table=table)
    ]
    _, problems = validate_job(payload, field_table=table)
    assert "jobSpec.baseOutputDirectory" in [p.field for p in problems]


def test_validate_uses_the_catalog_it_is_given() -> None:
    from dataclasses import replace

    catalog = load_catalog()
    smaller = replace(catalog, machines={k: v for k, v in catalog.machines.items()
                                         if k != "n1-standard-4"})  # fmt: skip
    payload = job(CPU, baseOutputDirectory=GCS)
    assert validate_custom_job(payload, catalog=smaller) != []
    assert (
        validate_tuning_job(
            study([LR], trialJobSpec={"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS}),
            catalog=smaller,
        )
        != []
    )
    _, problems = validate_job(payload, catalog=smaller)
    assert problems != []


def test_validate_judges_support_dates_on_the_day_it_is_given() -> None:
    # A prebuilt image past its end of availability is an error only after that day.
    image = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    payload = job(pool("n1-standard-4", image=image), baseOutputDirectory=GCS)
    before = dt.date(2026, 1, 1)
    after = dt.date(2026, 12, 2)
    assert not [p for p in validate_custom_job(payload, today=before) if p.severity == "error"]
    assert [p for p in validate_custom_job(payload, today=after) if p.severity == "error"]
    tuning = study([LR], trialJobSpec={"workerPoolSpecs": [pool("n1-standard-4", image=image)],
                                       "baseOutputDirectory": GCS})  # fmt: skip
    assert not [p for p in validate_tuning_job(tuning, today=before) if p.severity == "error"]
    assert [p for p in validate_tuning_job(tuning, today=after) if p.severity == "error"]
    _, problems = validate_job(payload, today=after)
    assert [p for p in problems if p.severity == "error"]


def test_validate_tuning_job_checks_the_study_and_the_trial_job() -> None:
    tuning = study([LR], trialJobSpec={"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS})
    assert validate_tuning_job(tuning) == []
    tuning["maxTrialCount"] = 0
    assert [p.field for p in validate_tuning_job(tuning)] == ["maxTrialCount"]
    tuning["maxTrialCount"] = 10
    tuning["trialJobSpec"]["workerPoolSpecs"] = []
    fields = [p.field for p in validate_tuning_job(tuning)]
    assert fields and all(f.startswith("trialJobSpec") for f in fields)


def test_validate_job_returns_the_kind_it_found() -> None:
    normalized, problems = validate_job({"worker_pool_specs": [CPU], "base_output_directory": GCS})
    assert (normalized.kind, normalized.body_prefix, problems) == ("custom_job", "jobSpec.", [])
    with pytest.raises(ValueError, match="cannot tell what kind of job this is"):
        validate_job({"spec": {}})


def _fresh_job() -> dict[str, Any]:
    import copy

    return copy.deepcopy(job(CPU, baseOutputDirectory=GCS))


def test_validate_reports_a_wrong_type_once_and_nothing_below_it() -> None:
    payload = _fresh_job()
    payload["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = "n1-standard-4"
    # The rules never see the removed value: no "machineType missing" below it, no repeat.
    assert [(p.field, p.code) for p in validate_custom_job(payload)] == [
        ("jobSpec.workerPoolSpecs[0].machineSpec", "wrong-type")
    ]


def test_validate_checks_types_against_the_job_s_own_message() -> None:
    import copy

    tuning = copy.deepcopy(
        study([LR], trialJobSpec={"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS})
    )
    tuning["maxTrialCount"] = "ten"  # a HyperparameterTuningJob field
    assert [(p.field, p.code) for p in validate_tuning_job(tuning)] == [
        ("maxTrialCount", "wrong-type")
    ]
    payload = _fresh_job()
    payload["jobSpec"]["workerPoolSpecs"] = "x"  # a CustomJob field
    assert [(p.field, p.code) for p in validate_custom_job(payload)] == [
        ("jobSpec.workerPoolSpecs", "wrong-type")
    ]


def test_validate_without_the_field_check_still_judges_dates_on_the_given_day() -> None:
    image = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    payload = job(pool("n1-standard-4", image=image), baseOutputDirectory=GCS)
    early = validate_custom_job(payload, today=dt.date(2026, 1, 1), check_fields=False)
    late = validate_custom_job(payload, today=dt.date(2026, 12, 2), check_fields=False)
    assert not [p for p in early if p.severity == "error"]
    assert [p for p in late if p.severity == "error"]


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        (None, [("warning", "labels.distribution", "no-distribution")]),
        ({"distribution": "ddp"}, []),
        ({"distribution": "mpi"}, [("error", "labels.distribution", "distribution"),
                                   ("warning", "labels.distribution", "no-distribution")]),
    ],
)  # fmt: skip
def test_validate_reads_the_distribution_a_job_declares_in_its_labels(
    labels: dict[str, str] | None, said: list[tuple[str, str, str]]
) -> None:
    workers = pool("n1-standard-4", image=IMAGE, replicas=2)
    payload = job(CPU, workers, baseOutputDirectory=GCS, labels=labels)
    assert [(p.severity, p.field, p.code) for p in validate_custom_job(payload)] == said


def test_validate_tuning_job_checks_its_labels_beside_the_study() -> None:
    import copy

    tuning = copy.deepcopy(
        study([LR], trialJobSpec={"workerPoolSpecs": [CPU], "baseOutputDirectory": GCS})
    )
    tuning["labels"] = {"Team": "ml"}
    tuning["maxTrialCount"] = 0
    assert [p.field for p in validate_tuning_job(tuning)] == ["labels.Team", "maxTrialCount"]


def test_validate_job_judges_dates_on_the_given_day() -> None:
    image = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    payload = job(pool("n1-standard-4", image=image), baseOutputDirectory=GCS)
    _, early = validate_job(payload, today=dt.date(2026, 1, 1))
    assert not [p for p in early if p.severity == "error"]

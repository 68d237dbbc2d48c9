"""Unknown fields: every key is checked against the aiplatform_v1 descriptors, did-you-mean."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from vertex_retrain.cli.validate_command import run_validate
from vertex_retrain.specs import (
    ContainerCode,
    CustomJobSpec,
    Machine,
    WorkerPool,
    validate_custom_job,
    validate_job,
    validate_tuning_job,
)
from vertex_retrain.specs import validate as validate_module
from vertex_retrain.specs.field_rules import UNKNOWN_FIELD
from vertex_retrain.specs.lint_file import lint_file
from vertex_retrain.specs.proto_fields import CUSTOM_JOB, TUNING_JOB, job_field_table

# These tests are about the other rules, on prebuilt images that Google serves: every
# training image of the shipped catalog has ended, which test_specs_executor_images tests.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")

JOBS = Path(__file__).resolve().parent / "data" / "jobs"
IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
M0 = "jobSpec.workerPoolSpecs[0].machineSpec"


def _job(**machine: Any) -> dict[str, Any]:
    return {
        "displayName": "typo",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-8", **machine},
                    "replicaCount": "1",
                    "containerSpec": {"imageUri": IMAGE},
                }
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://bucket/out"},
        },
    }


def _unknown(problems: list[Any]) -> list[Any]:
    return [p for p in problems if p.code == UNKNOWN_FIELD]


def test_unknown_field_camel_case_suggests_the_field_and_drops_the_missing_error() -> None:
    problems = validate_custom_job(_job(acceleratorTyp="NVIDIA_TESLA_T4", acceleratorCount=1))
    [unknown] = _unknown(problems)
    assert unknown.severity == "error"
    assert unknown.field == f"{M0}.acceleratorTyp"
    assert unknown.value == "NVIDIA_TESLA_T4"
    assert unknown.alternatives[0] == "acceleratorType"
    assert "Did you mean 'acceleratorType'?" in unknown.message
    assert "MachineSpec" in unknown.message
    # The misspelling explains why acceleratorType looks missing: no second, misleading error.
    assert not [p for p in problems if p.field == f"{M0}.acceleratorType"]


def test_unknown_field_snake_case_suggests_in_snake_case() -> None:
    payload = {
        "display_name": "typo",
        "job_spec": {
            "worker_pool_specs": [
                {
                    "machine_spec": {
                        "machine_type": "n1-standard-8",
                        "accelerator_typ": "NVIDIA_TESLA_T4",
                        "accelerator_count": 1,
                    },
                    "replica_count": 1,
                    "container_spec": {"image_uri": IMAGE},
                }
            ]
        },
    }
    [unknown] = _unknown(validate_custom_job(payload))
    assert unknown.field == f"{M0}.acceleratorTyp"
    assert unknown.alternatives[0] == "accelerator_type"
    assert "'accelerator_typ'" in unknown.message and "'accelerator_type'" in unknown.message


def test_unknown_fields_are_found_at_every_depth_of_a_tuning_job() -> None:
    document = yaml.safe_load((JOBS / "valid_tuning_job.yaml").read_text(encoding="utf-8"))
    document["studySpec"]["metrics"][0]["goall"] = document["studySpec"]["metrics"][0].pop("goal")
    conditional = document["studySpec"]["parameters"][1]["conditionalParameterSpecs"][0]
    conditional["parameterSpec"]["doubleValueSpec"]["maxValu"] = 0.9
    document["trialJobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCont"] = 1
    found = {p.field: p.alternatives[0] for p in _unknown(validate_tuning_job(document))}
    assert found == {
        "studySpec.metrics[0].goall": "goal",
        "studySpec.parameters[1].conditionalParameterSpecs[0].parameterSpec.doubleValueSpec"
        ".maxValu": "maxValue",
        "trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCont": "acceleratorCount",
    }


def test_unknown_field_without_a_close_match_lists_the_message_fields() -> None:
    payload = _job(acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=1)
    payload["jobSpec"]["workerPoolSpecs"][0]["qqq"] = {"a": 1, "b": 2}
    [unknown] = _unknown(validate_custom_job(payload))
    assert unknown.field == "jobSpec.workerPoolSpecs[0].qqq"
    assert unknown.value == "{a, b}"
    assert "machineSpec" in unknown.alternatives and "containerSpec" in unknown.alternatives
    assert "Did you mean" not in unknown.message


def test_user_keys_of_labels_env_and_free_form_fields_are_not_flagged() -> None:
    payload = _job(acceleratorType="NVIDIA_TESLA_T4", acceleratorCount=1)
    payload["labels"] = {"team": "ml", "acceleratortyp": "x", "cost_center": "42"}
    container = payload["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    container["env"] = [{"name": "ACCELERATOR_TYP", "value": "1"}]
    payload["jobSpec"]["scheduling"] = {"timeout": "3600s"}
    assert _unknown(validate_custom_job(payload)) == []
    # env written as a map is the wrong type (the parser refuses it), not unknown fields.
    container["env"] = {"MY_SETTING": "1"}
    assert _unknown(validate_custom_job(payload)) == []


def test_builder_payloads_have_only_known_fields() -> None:
    job = CustomJobSpec(
        "ok",
        WorkerPool(Machine("n1-standard-8", "NVIDIA_TESLA_T4", 1), ContainerCode(IMAGE)),
        base_output_dir="gs://bucket/out",
        labels={"team": "ml"},
    )
    assert _unknown(validate_custom_job(job.to_payload())) == []


def test_builders_skip_the_descriptor_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError("builders write only real fields; no aiplatform import needed")

    monkeypatch.setattr(validate_module, "job_field_table", refuse)
    job = CustomJobSpec(
        "ok", WorkerPool(Machine("n1-standard-8"), ContainerCode(IMAGE)), base_output_dir="gs://b/o"
    )
    assert job.validate() == []
    assert validate_custom_job(job.to_payload(), check_fields=False) == []


def test_bare_job_spec_body_is_checked_as_custom_job_spec(tmp_path: Path) -> None:
    body = copy.deepcopy(_job(acceleratorTyp="NVIDIA_TESLA_T4", acceleratorCount=1)["jobSpec"])
    body["enableWebAcces"] = True
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    found = {p.field: p.alternatives[0] for p in lint_file(path) if p.code == UNKNOWN_FIELD}
    assert found == {
        "workerPoolSpecs[0].machineSpec.acceleratorTyp": "acceleratorType",
        "enableWebAcces": "enableWebAccess",
    }
    job, _ = validate_job(body)
    assert job.body_prefix == "jobSpec."


def test_validate_json_reports_unknown_field_with_path_value_and_alternatives() -> None:
    out = io.StringIO()
    assert run_validate([str(JOBS / "invalid_field_typo.yaml")], True, out) == 1
    report = json.loads(out.getvalue())
    assert [p["code"] for p in report] == [UNKNOWN_FIELD]
    [problem] = report
    assert problem["field"] == f"{M0}.acceleratorTyp"
    assert problem["value"] == "NVIDIA_TESLA_T4"
    assert problem["alternatives"][0] == "acceleratorType"
    assert problem["severity"] == "error"


def test_validate_text_reports_unknown_field_once() -> None:
    out = io.StringIO()
    assert run_validate([str(JOBS / "invalid_field_typo.yaml")], False, out) == 1
    text = out.getvalue()
    assert f'error: {M0}.acceleratorTyp = "NVIDIA_TESLA_T4": Unknown field' in text
    assert "Did you mean 'acceleratorType'?" in text
    assert "INVALID (1 error(s), 0 warning(s))" in text


def test_job_field_table_knows_both_spellings_and_map_fields() -> None:
    table = job_field_table()
    machine = table["google.cloud.aiplatform.v1.MachineSpec"]
    assert machine.lookup("acceleratorType") is machine.lookup("accelerator_type")
    labels = table[CUSTOM_JOB].lookup("labels")
    assert labels is not None and labels.kind == "map"
    timeout = table["google.cloud.aiplatform.v1.Scheduling"].lookup("timeout")
    assert timeout is not None and timeout.kind == "opaque"
    assert table[TUNING_JOB].lookup("trial_job_spec") is not None

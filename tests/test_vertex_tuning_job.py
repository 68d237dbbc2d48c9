"""HyperparameterTuningJob launcher against a fake client, and best-trial selection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from tests.fakes.vertex_jobs import FakeJobServiceClient
from vertex_retrain.backends.vertex.tuning_job import (
    best_trial,
    run_tuning_job_on_vertex,
    trial_model_dir,
)

PAYLOAD: dict[str, Any] = {
    "displayName": "tune-recommender",
    "maxTrialCount": 4,
    "parallelTrialCount": 2,
    "maxFailedTrialCount": 2,
    "studySpec": {
        "metrics": [{"metricId": "val_loss", "goal": "MINIMIZE"}],
        "parameters": [
            {
                "parameterId": "lr",
                "doubleValueSpec": {"minValue": 1e-4, "maxValue": 1e-1},
                "scaleType": "UNIT_LOG_SCALE",
            },
            {"parameterId": "batch", "integerValueSpec": {"minValue": "32", "maxValue": "256"}},
        ],
    },
    "trialJobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": "1",
                "containerSpec": {"imageUri": "img@sha256:ab"},
            }
        ],
        "scheduling": {"strategy": "SPOT"},
        "baseOutputDirectory": {"outputUriPrefix": "gs://bucket/tune/"},
    },
}


def _trial(
    trial_id: str, state: str, loss: float | None, lr: float, batch: float
) -> dict[str, Any]:
    trial: dict[str, Any] = {
        "id": trial_id,
        "state": state,
        "parameters": [
            {"parameterId": "lr", "value": lr},
            {"parameterId": "batch", "value": batch},
        ],
    }
    if loss is not None:
        trial["finalMeasurement"] = {
            "stepCount": "10",
            "metrics": [{"metricId": "val_loss", "value": loss}],
        }
    return trial


TRIALS = [
    _trial("1", "SUCCEEDED", 0.40, 0.01, 64.0),
    _trial("2", "INFEASIBLE", 0.01, 0.09, 32.0),  # best number, but infeasible
    _trial("3", "SUCCEEDED", 0.25, 0.003, 128.0),
    _trial("4", "STOPPING", 0.05, 0.02, 256.0),  # not finished
    _trial("5", "SUCCEEDED", None, 0.05, 32.0),  # no final measurement
]


pytestmark = pytest.mark.usefixtures("fast_gcpc_polling")


def test_tuning_job_runs_through_gcpc_and_returns_trials(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(trials=TRIALS)
    path = tmp_path / "gcp_resources"
    job = run_tuning_job_on_vertex(
        PAYLOAD,
        project="proj",
        location="us-east1",
        gcp_resources_path=str(path),
        job_client_factory=fake.factory(),
    )
    (sent,) = fake.created_payloads
    strict = aiplatform_v1.HyperparameterTuningJob.pb(aiplatform_v1.HyperparameterTuningJob())
    json_format.ParseDict(sent, strict, ignore_unknown_fields=False)
    assert strict.trial_job_spec.scheduling.strategy == aiplatform_v1.Scheduling.Strategy.SPOT
    assert strict.study_spec.parameters[1].integer_value_spec.max_value == 256
    resource = json.loads(path.read_text())["resources"][0]
    assert resource["resourceType"] == "HyperparameterTuningJob"
    assert resource["resourceUri"] == (
        "https://us-east1-aiplatform.googleapis.com/v1/"
        "projects/proj/locations/us-east1/hyperparameterTuningJobs/1000"
    )
    assert job["state"] == "JOB_STATE_SUCCEEDED"
    assert [t["id"] for t in job["trials"]] == ["1", "2", "3", "4", "5"]


def test_tuning_job_restart_resumes_without_a_second_job(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(trials=TRIALS)
    kwargs: dict[str, Any] = {
        "project": "proj",
        "location": "us-east1",
        "gcp_resources_path": str(tmp_path / "gcp_resources"),
        "job_client_factory": fake.factory(),
    }
    run_tuning_job_on_vertex(PAYLOAD, **kwargs)
    again = run_tuning_job_on_vertex(PAYLOAD, **kwargs)
    assert len(fake.jobs) == 1
    assert again["name"].endswith("/hyperparameterTuningJobs/1000")


def test_best_trial_minimize_skips_infeasible_unfinished_and_unmeasured() -> None:
    job = {**PAYLOAD, "trials": TRIALS}
    best = best_trial(job, "val_loss", "MINIMIZE")
    assert best.trial_id == "3"
    assert best.metric_value == 0.25
    assert best.parameters == {"lr": 0.003, "batch": 128}
    assert isinstance(best.parameters["batch"], int)
    assert best.model_dir == "gs://bucket/tune/3/model"


def test_best_trial_maximize_picks_the_largest() -> None:
    job = {**PAYLOAD, "trials": TRIALS}
    assert best_trial(job, "val_loss", "MAXIMIZE").trial_id == "1"


def test_best_trial_ties_go_to_the_lowest_trial_id() -> None:
    trials = [_trial("12", "SUCCEEDED", 0.3, 0.1, 32.0), _trial("9", "SUCCEEDED", 0.3, 0.2, 64.0)]
    assert best_trial({**PAYLOAD, "trials": trials}, "val_loss", "MINIMIZE").trial_id == "9"


def test_best_trial_without_a_usable_trial_explains_why() -> None:
    trials = [_trial("1", "INFEASIBLE", 0.1, 0.1, 32.0), _trial("2", "SUCCEEDED", None, 0.1, 32.0)]
    with pytest.raises(ValueError, match="INFEASIBLE, SUCCEEDED"):
        best_trial({**PAYLOAD, "trials": trials}, "val_loss", "MINIMIZE")


def test_best_trial_wrong_metric_or_goal_is_refused() -> None:
    job = {**PAYLOAD, "trials": TRIALS}
    with pytest.raises(ValueError, match="'accuracy'"):
        best_trial(job, "accuracy", "MAXIMIZE")
    with pytest.raises(ValueError, match="goal must be one of"):
        best_trial(job, "val_loss", "minimise")


def test_trial_model_dir_needs_a_base_output_directory() -> None:
    with pytest.raises(ValueError, match="baseOutputDirectory"):
        trial_model_dir({"trialJobSpec": {}}, "3")


def test_best_trial_skips_non_finite_values_written_as_proto_json_strings() -> None:
    # A minimised -Infinity would win if it counted; NaN must not win either.
    def written(trial_id: str, value: str) -> dict[str, Any]:
        measurement = {"metrics": [{"metricId": "val_loss", "value": value}]}
        return {**_trial(trial_id, "SUCCEEDED", None, 0.1, 32.0), "finalMeasurement": measurement}

    trials = [
        written("1", "-Infinity"),
        written("2", "NaN"),
        _trial("3", "SUCCEEDED", 0.4, 0.2, 64.0),
    ]
    assert best_trial({**PAYLOAD, "trials": trials}, "val_loss", "MINIMIZE").trial_id == "3"

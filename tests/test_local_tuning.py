"""Local hyperparameter tuning: Optuna samplers, conditional parameters, failed trials."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import hypertune
import pytest

from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.executor import FAILED, SUCCEEDED
from vertex_retrain.backends.local.studies.study_spec import (
    StudySpecError,
    grid_size,
    make_sampler,
    parse_param,
)
from vertex_retrain.backends.local.studies.tuning import (
    TRIAL_INFEASIBLE,
    TRIAL_SUCCEEDED,
    read_metric,
    run_tuning_job,
)

JOBS = Path(__file__).parent / "data" / "local_jobs"
OPTIMIZER = {
    "parameterId": "optimizer",
    "categoricalValueSpec": {"values": ["adam", "sgd"]},
    "conditionalParameterSpecs": [
        {
            "parentCategoricalValues": {"values": ["sgd"]},
            "parameterSpec": {
                "parameterId": "momentum",
                "discreteValueSpec": {"values": [0.5, 0.9]},
            },
        }
    ],
}
LAYERS = {
    "parameterId": "layers",
    "integerValueSpec": {"minValue": "1", "maxValue": "2"},
    "conditionalParameterSpecs": [],
}
X_DISCRETE = {"parameterId": "x", "discreteValueSpec": {"values": [0.1, 0.3, 0.5]}}
X_DOUBLE = {
    "parameterId": "x",
    "doubleValueSpec": {"minValue": 0.01, "maxValue": 0.6},
    "scaleType": "UNIT_LOG_SCALE",
}


@pytest.fixture
def image(root: Path) -> str:
    return build_container_image(JOBS, image_uri="us-docker.pkg.dev/p/r/jobs:v1").uri


def tuning_job(
    image: str, algorithm: str, parameters: list[dict[str, Any]], **counts: int
) -> dict[str, Any]:
    return {
        "displayName": "tuning",
        "studySpec": {
            "algorithm": algorithm,
            "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
            "parameters": parameters,
        },
        "maxTrialCount": counts.get("max_trials", 8),
        "parallelTrialCount": counts.get("parallel", 2),
        "maxFailedTrialCount": counts.get("max_failed", 0),
        "trialJobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": image, "args": ["hp_trainer.py"]},
                }
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/tune"},
        },
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("algorithm", "x_spec", "max_trials", "expected_trials"),
    [
        ("GRID_SEARCH", X_DISCRETE, 30, 18),
        ("RANDOM_SEARCH", X_DOUBLE, 8, 8),
        ("ALGORITHM_UNSPECIFIED", X_DOUBLE, 8, 8),
    ],
)
def test_run_tuning_job_each_algorithm_honours_conditional_parameters(
    root: Path,
    image: str,
    algorithm: str,
    x_spec: dict[str, Any],
    max_trials: int,
    expected_trials: int,
) -> None:
    payload = tuning_job(image, algorithm, [x_spec, OPTIMIZER, LAYERS], max_trials=max_trials)
    result = run_tuning_job(payload, seed=3, on_log=lambda _: None)
    assert result.state == SUCCEEDED, result.table()
    assert len(result.trials) == expected_trials
    # hp_trainer exits non-zero when momentum arrives without sgd or is missing with sgd.
    assert all(t.state == TRIAL_SUCCEEDED for t in result.trials), result.table()
    for trial in result.trials:
        assert ("momentum" in trial.parameters) == (trial.parameters["optimizer"] == "sgd")
        assert 0.01 <= trial.parameters["x"] <= 0.6
        assert trial.model_dir == f"gs://bkt/tune/{trial.trial_id}/model/"
        written = root / "gcs" / "bkt" / "tune" / trial.trial_id / "model" / "params.json"
        assert json.loads(written.read_text())["x"] == pytest.approx(trial.parameters["x"])
    best = result.best
    assert best is not None
    assert best.metric == max(t.metric for t in result.trials if t.metric is not None)
    if algorithm == "GRID_SEARCH":
        visited = {tuple(sorted(t.parameters.items())) for t in result.trials}
        assert len(visited) == 18
        assert best.parameters == {"x": 0.3, "optimizer": "adam", "layers": 1}
        assert best.metric == pytest.approx(-0.01)
    assert best.trial_id in result.table()


@pytest.mark.slow
def test_run_tuning_job_failed_and_silent_trials_are_infeasible_with_reasons(
    root: Path, image: str
) -> None:
    x = {"parameterId": "x", "discreteValueSpec": {"values": [0.3, 0.7, 0.9]}}
    result = run_tuning_job(
        tuning_job(image, "GRID_SEARCH", [x], max_trials=3), on_log=lambda _: None
    )
    by_x = {t.parameters["x"]: t for t in result.trials}
    assert by_x[0.3].state == TRIAL_SUCCEEDED
    assert by_x[0.7].state == TRIAL_INFEASIBLE
    assert "never reported metric 'accuracy'" in (by_x[0.7].error or "")
    assert by_x[0.9].state == TRIAL_INFEASIBLE
    assert "RuntimeError: diverged at x=0.9" in (by_x[0.9].error or "")
    assert result.state == SUCCEEDED
    assert result.best is by_x[0.3]


@pytest.mark.slow
def test_run_tuning_job_stops_at_max_failed_trial_count(root: Path, image: str) -> None:
    x = {"parameterId": "x", "discreteValueSpec": {"values": [0.7, 0.9]}}
    payload = tuning_job(image, "GRID_SEARCH", [x], max_trials=2, parallel=1, max_failed=1)
    result = run_tuning_job(payload, on_log=lambda _: None)
    assert result.state == FAILED
    assert "maxFailedTrialCount=1" in (result.error or "")
    assert len(result.trials) == 1
    assert result.best is None
    saved = json.loads((root / "jobs" / result.job_id / "tuning.json").read_text())
    assert saved["state"] == FAILED and saved["best_trial"] is None


def test_run_tuning_job_grid_refuses_double_parameter_before_any_trial(
    root: Path, image: str
) -> None:
    # The job-specs core refuses it first; the local sampler mapping refuses it as well.
    with pytest.raises(ValueError, match="GRID_SEARCH cannot enumerate"):
        run_tuning_job(tuning_job(image, "GRID_SEARCH", [X_DOUBLE]), on_log=lambda _: None)
    assert not (root / "jobs").exists()
    with pytest.raises(StudySpecError, match="GRID_SEARCH cannot enumerate DOUBLE"):
        make_sampler("GRID_SEARCH", [parse_param(X_DOUBLE)], seed=0)


def test_grid_size_counts_conditional_branches() -> None:
    specs = [parse_param(X_DISCRETE), parse_param(OPTIMIZER), parse_param(LAYERS)]
    assert grid_size(specs) == 3 * (1 + 2) * 2


@pytest.mark.parametrize(
    ("selection", "goal", "expected"),
    [
        ("LAST_MEASUREMENT", "MAXIMIZE", 0.5),
        ("BEST_MEASUREMENT", "MAXIMIZE", 0.9),
        ("BEST_MEASUREMENT", "MINIMIZE", 0.2),
    ],
)
def test_read_metric_selects_measurement_from_hypertune_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, selection: str, goal: str, expected: float
) -> None:
    metric_file = tmp_path / "hp" / "output.metrics"
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(metric_file))
    tracker = hypertune.HyperTune()
    for step, value in enumerate([0.2, 0.9, 0.5], start=1):
        tracker.report_hyperparameter_tuning_metric("accuracy", value, global_step=step)
    tracker.report_hyperparameter_tuning_metric("loss", 7.0)
    assert read_metric(metric_file, "accuracy", selection=selection, goal=goal) == expected
    assert read_metric(metric_file, "auc", selection=selection, goal=goal) is None
    assert read_metric(tmp_path / "absent", "accuracy", selection=selection, goal=goal) is None
    assert os.environ["CLOUD_ML_HP_METRIC_FILE"] == str(metric_file)

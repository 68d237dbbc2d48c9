"""Fault injection into local tuning: trials crash, hang past their timeout or never report.

Every trial is a real process (tests/data/faults/fault_trial.py). Two misbehaving trials
report a metric far better than any healthy one before they crash or hang, so a study that
picked its best trial from reported values instead of trial states would pick them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from data.faults.support import TAG_VARIABLE, wait_until_gone

from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.executor import FAILED, SUCCEEDED
from vertex_retrain.backends.local.studies.tuning import (
    METRIC_FILE,
    TRIAL_INFEASIBLE,
    TRIAL_SUCCEEDED,
    read_metric,
    run_tuning_job,
)

pytestmark = pytest.mark.slow
FAULTS = Path(__file__).parent / "data" / "faults"
BEHAVIOURS = [
    "ok:0.25",
    "crash",
    "hang",
    "silent",
    "report_then_crash",
    "ok:0.75",
    "report_then_hang",
]
FAILING = len(BEHAVIOURS) - 2
EXPECTED_ERRORS = {
    "crash": "exited with code 1",
    "hang": "exceeded scheduling.timeout (3s)",
    "silent": "never reported metric 'accuracy'",
    "report_then_crash": "exited with code 1",
    "report_then_hang": "exceeded scheduling.timeout (3s)",
}


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path_factory.mktemp("tuning-root")))
        yield build_container_image(FAULTS, image_uri="us-docker.pkg.dev/p/r/faults:v1").uri


def _study(image: str, tag: str, max_failed: int) -> dict[str, Any]:
    return {
        "displayName": "faulty-study",
        "studySpec": {
            "algorithm": "GRID_SEARCH",
            "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameterId": "behaviour", "categoricalValueSpec": {"values": BEHAVIOURS}}
            ],
        },
        "maxTrialCount": len(BEHAVIOURS),
        "parallelTrialCount": 3,
        "maxFailedTrialCount": max_failed,
        "trialJobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "containerSpec": {
                        "imageUri": image,
                        "args": ["fault_trial.py"],
                        "env": [{"name": TAG_VARIABLE, "value": tag}],
                    },
                }
            ],
            "scheduling": {"timeout": "3s"},
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/faulty-study"},
        },
    }


def test_tuning_completes_while_failures_stay_below_max_failed_trial_count(image: str) -> None:
    tag = f"tuning-ok-{os.getpid()}"
    result = run_tuning_job(_study(image, tag, FAILING + 1), seed=1, on_log=lambda _: None)
    assert result.state == SUCCEEDED, result.table()
    by_behaviour = {t.parameters["behaviour"]: t for t in result.trials}
    assert sorted(by_behaviour) == sorted(BEHAVIOURS)
    for behaviour, expected in EXPECTED_ERRORS.items():
        trial = by_behaviour[behaviour]
        assert trial.state == TRIAL_INFEASIBLE and trial.metric is None, behaviour
        assert expected in (trial.error or ""), (behaviour, trial.error)
    assert by_behaviour["ok:0.25"].state == by_behaviour["ok:0.75"].state == TRIAL_SUCCEEDED
    # Two failed trials reported 100 before failing; the best is the best healthy trial.
    job_dir = Path(os.environ["VERTEX_LOCAL_ROOT"]) / "jobs" / result.job_id
    for behaviour in ("report_then_crash", "report_then_hang"):
        metric_file = job_dir / "trials" / by_behaviour[behaviour].trial_id / METRIC_FILE
        reported = read_metric(metric_file, "accuracy", selection="LAST", goal="MAXIMIZE")
        assert reported == 100.0, behaviour
    assert result.best is by_behaviour["ok:0.75"] and result.best.metric == 0.75
    saved = json.loads((job_dir / "tuning.json").read_text())
    assert saved["best_trial"] == result.best.trial_id
    assert wait_until_gone(tag) == {}, "a hung trial outlived its timeout"


def test_tuning_fails_clearly_once_failures_reach_max_failed_trial_count(image: str) -> None:
    tag = f"tuning-fail-{os.getpid()}"
    result = run_tuning_job(_study(image, tag, FAILING), seed=1, on_log=lambda _: None)
    assert result.state == FAILED, result.table()
    assert f"reaching maxFailedTrialCount={FAILING}" in (result.error or "")
    failed = [t for t in result.trials if t.state == TRIAL_INFEASIBLE]
    assert len(failed) >= FAILING
    assert all(t.metric is None and t.error for t in failed)
    best = result.best
    assert best is None or (best.state == TRIAL_SUCCEEDED and best.metric in {0.25, 0.75})
    assert wait_until_gone(tag) == {}, "a trial outlived the stopped study"

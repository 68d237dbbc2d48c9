"""A tuning study that finishes despite Spot: kept trials, the rest on demand, one best trial."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from tests.fakes.vertex_jobs import FakeJobServiceClient
from vertex_retrain.backends.base import (
    StudyFailedError,
    StudyTrial,
    TaskOutputs,
    TuningJobRun,
)
from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.spot import stockout_message
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.rules.spot_fallback import FallbackPolicy
from vertex_retrain.steps.summary import build_summary
from vertex_retrain.steps.summary_week import fallback_facts, week_lines
from vertex_retrain.steps.train import TrainingRequest
from vertex_retrain.steps.tune import TuningJobFailedError, TuningRequest, tune, tuning_job_payload
from vertex_retrain.steps.tune_fallback import (
    fall_back_study,
    offset_trial_ids,
    on_demand_study_payload,
    remaining_trial_budget,
)

JOBS = Path(__file__).parent / "data" / "local_jobs"
STOCKOUT = stockout_message(7)
SPECS = [{"parameterId": "x", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]


def _trial(trial_id: str, state: str, metric: float | None, message: str = "") -> StudyTrial:
    return StudyTrial(trial_id, state, {"x": 0.1}, metric, f"gs://b/out/{trial_id}/model", message)


@dataclass
class _ScriptedBackend:
    """Fails the first study with ``failure`` (carrying ``spot_trials``), then runs the next."""

    failure: str
    spot_trials: list[StudyTrial]
    on_demand_trials: list[StudyTrial] = field(default_factory=list)
    name: str = "local"
    payloads: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def run_tuning_job(self, payload: dict[str, Any], **options: Any) -> TuningJobRun:
        self.payloads.append(payload)
        self.calls.append(options)
        Path(options["gcp_resources_path"]).write_text(json.dumps({"study": len(self.payloads)}))
        if len(self.payloads) == 1:
            raise StudyFailedError(self.failure, job_name="spot", trials=self.spot_trials)
        return TuningJobRun("on-demand", self.on_demand_trials)


def _request(**overrides: Any) -> TuningRequest:
    trial_fields: dict[str, Any] = {
        "backend": "local",
        "display_name": "study",
        "base_output_directory": "gs://b/out",
        "image_uri": "us-docker.pkg.dev/p/r/jobs:v1",
        "machine_type": "n1-standard-4",
        "accelerator_type": "",
        "accelerator_count": 0,
        "scheduling_strategy": "SPOT",
        "timeout_seconds": 600,
    }
    trial = TrainingRequest(**{**trial_fields, **overrides.pop("trial", {})})
    fields: dict[str, Any] = {
        "trial": trial,
        "parameter_specs": SPECS,
        "metric_id": "accuracy",
        "max_trial_count": 4,
        "parallel_trial_count": 3,
        "max_failed_trial_count": 2,
    }
    return TuningRequest(**{**fields, **overrides})


def _tune(tmp_path: Path, backend: _ScriptedBackend, **options: Any) -> Any:
    return tune(
        _request(**options.pop("request", {})),
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        report_path=str(tmp_path / "report.html"),
        backend=backend,  # type: ignore[arg-type]
        **options,
    )


def test_remaining_trial_budget_counts_only_succeeded_trials() -> None:
    trials = [_trial("1", "SUCCEEDED", 0.5), _trial("2", "INFEASIBLE", None, STOCKOUT)]
    assert remaining_trial_budget(4, trials) == 3
    assert remaining_trial_budget(1, trials) == 0


def test_offset_trial_ids_follow_the_spot_studys_ids() -> None:
    moved = offset_trial_ids([_trial("1", "SUCCEEDED", 0.9), _trial("2", "SUCCEEDED", 0.1)], 2)
    assert [t.trial_id for t in moved] == ["3", "4"]


def test_on_demand_study_payload_is_standard_capped_and_in_its_own_folder() -> None:
    spot = tuning_job_payload(_request())
    on_demand = on_demand_study_payload(spot, trial_count=2, trial_timeout_seconds=300)
    spec = on_demand["trialJobSpec"]
    expected = {**spot["trialJobSpec"]["scheduling"], "strategy": "STANDARD", "timeout": "300s"}
    assert spec["scheduling"] == expected
    assert spot["trialJobSpec"]["scheduling"]["strategy"] == "SPOT"  # the Spot payload is kept
    assert (on_demand["maxTrialCount"], on_demand["parallelTrialCount"]) == (2, 2)
    assert on_demand["maxFailedTrialCount"] == 2
    prefix = spot["trialJobSpec"]["baseOutputDirectory"]["outputUriPrefix"]
    assert spec["baseOutputDirectory"]["outputUriPrefix"] == f"{prefix}/on-demand"
    assert spec["workerPoolSpecs"] == spot["trialJobSpec"]["workerPoolSpecs"]
    assert on_demand["studySpec"] == spot["studySpec"]


def test_tune_keeps_spot_trials_and_runs_the_rest_on_demand(tmp_path: Path) -> None:
    backend = _ScriptedBackend(
        "local tuning job spot ended in FAILED: 2 trials failed",
        [_trial("1", "SUCCEEDED", 0.5), _trial("2", "INFEASIBLE", None, STOCKOUT)],
        [
            _trial("1", "SUCCEEDED", 0.9),
            _trial("2", "SUCCEEDED", 0.4),
            _trial("3", "SUCCEEDED", 0.2),
        ],
    )
    outcome = _tune(
        tmp_path,
        backend,
        fallback=FallbackPolicy(enabled=True, deadline_seconds=3600),
    )
    spot, on_demand = backend.payloads
    assert spot["trialJobSpec"]["scheduling"]["strategy"] == "SPOT"
    assert on_demand["trialJobSpec"]["scheduling"]["strategy"] == "STANDARD"
    assert on_demand["maxTrialCount"] == 3 and on_demand["parallelTrialCount"] == 3
    assert backend.calls[1]["gcp_resources_path"] == f"{tmp_path / 'gcp_resources'}.on-demand"
    assert json.loads((tmp_path / "gcp_resources").read_text()) == {"study": 2}
    # On-demand trials 1..3 become 3..5; the best is chosen over both studies.
    assert [row.trial_id for row in outcome.trials] == ["1", "2", "3", "4", "5"]
    assert outcome.best_trial_id == "3" and outcome.best_metric == 0.9
    assert outcome.metrics["spot_fallback"] == 1.0
    assert outcome.metrics["spot_trials_kept"] == 1.0
    assert outcome.metrics["on_demand_trials"] == 3.0
    assert "on_demand_seconds" in outcome.metrics and outcome.metrics["spot_seconds"] >= 0


def test_tune_fallback_tie_goes_to_the_spot_trial_with_the_lower_id(tmp_path: Path) -> None:
    backend = _ScriptedBackend(
        STOCKOUT,
        [_trial("1", "SUCCEEDED", 0.9), _trial("2", "INFEASIBLE", None, STOCKOUT)],
        [_trial("1", "SUCCEEDED", 0.9), _trial("2", "SUCCEEDED", float("nan"))],
    )
    outcome = _tune(tmp_path, backend, fallback=FallbackPolicy(enabled=True))
    assert outcome.best_trial_id == "1" and outcome.best_model_uri == "gs://b/out/1/model"


def test_tune_fallback_uses_the_spot_trials_when_no_budget_is_left(tmp_path: Path) -> None:
    spot_trials = [_trial(str(i), "SUCCEEDED", i / 10) for i in range(1, 5)]
    backend = _ScriptedBackend(STOCKOUT, spot_trials)
    outcome = _tune(tmp_path, backend, fallback=FallbackPolicy(enabled=True))
    assert len(backend.payloads) == 1
    assert outcome.best_trial_id == "4"
    assert outcome.metrics["on_demand_trials"] == 0.0


def test_tune_without_fallback_fails_with_the_spot_error(tmp_path: Path) -> None:
    backend = _ScriptedBackend(STOCKOUT, [_trial("1", "SUCCEEDED", 0.5)])
    with pytest.raises(TuningJobFailedError, match="STOCKOUT"):
        _tune(tmp_path, backend)
    assert len(backend.payloads) == 1


def test_tune_does_not_fall_back_when_trials_crashed(tmp_path: Path) -> None:
    crash = "replica workerpool0-0 exited with code 1"
    backend = _ScriptedBackend(
        "2 trials failed, reaching maxFailedTrialCount=2",
        [_trial("1", "INFEASIBLE", None, crash), _trial("2", "INFEASIBLE", None, crash)],
    )
    with pytest.raises(TuningJobFailedError, match="maxFailedTrialCount"):
        _tune(tmp_path, backend, fallback=FallbackPolicy(enabled=True))
    assert len(backend.payloads) == 1


def test_fall_back_study_reads_stockout_from_the_trials_and_shares_the_deadline(
    tmp_path: Path,
) -> None:
    # The study's own error names no cause; its failed trial says STOCKOUT.
    backend = _ScriptedBackend(
        "trials failed",
        [_trial("1", "SUCCEEDED", 0.5), _trial("2", "INFEASIBLE", None, STOCKOUT)],
        [_trial(str(i), "SUCCEEDED", 0.1) for i in range(1, 4)],
    )
    payload = tuning_job_payload(_request(parallel_trial_count=2, max_trial_count=4))
    failure = StudyFailedError("trials failed", trials=backend.spot_trials)
    backend.payloads.append(payload)  # the Spot study ran already
    rescued = fall_back_study(
        backend,  # type: ignore[arg-type]
        payload,
        failure,
        policy=FallbackPolicy(enabled=True, deadline_seconds=3600),
        trial_timeout_seconds=14400,
        spot_seconds=600.0,
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        request_key="run-tune",
        clock=lambda: 0.0,
    )
    assert rescued is not None
    on_demand = backend.payloads[1]
    # 3000 s are left for 3 trials, 2 at a time: two rounds of 1500 s each.
    assert on_demand["trialJobSpec"]["scheduling"]["timeout"] == "1500s"
    assert on_demand["parallelTrialCount"] == 2
    assert backend.calls[0]["request_key"] == "run-tune-on-demand"


def test_fall_back_study_refuses_when_the_trials_cannot_fit_the_deadline(tmp_path: Path) -> None:
    backend = _ScriptedBackend(STOCKOUT, [])
    payload = tuning_job_payload(_request(parallel_trial_count=1, max_trial_count=4))
    rescued = fall_back_study(
        backend,  # type: ignore[arg-type]
        payload,
        StudyFailedError(STOCKOUT),
        policy=FallbackPolicy(enabled=True, deadline_seconds=603),
        trial_timeout_seconds=600,
        spot_seconds=600.0,
        gcp_resources_path=str(tmp_path / "gcp_resources"),
    )
    assert rescued is None and backend.payloads == []


def test_fallback_facts_price_the_tuning_fallback_with_the_training_one() -> None:
    cost = {"assumed_training_hours": 2.0, "spot": 1.0, "on_demand": 3.0, "currency": "USD"}
    tuning = {"spot_fallback": 1.0, "spot_seconds": 1800.0, "on_demand_seconds": 3600.0}
    training = {"spot_fallback": 1.0, "spot_seconds": 1800.0, "on_demand_seconds": 0.0}
    facts = fallback_facts(training, cost, tuning=tuning)
    assert facts is not None
    assert (facts["spot_hours"], facts["on_demand_hours"]) == (1.0, 1.0)
    assert (facts["tuning_spot_hours"], facts["tuning_on_demand_hours"]) == (0.5, 1.0)
    assert facts["total_cost"] == 0.5 * 1 + 1.5 * 1 and facts["on_demand_premium"] == 1.0
    only_tuning = fallback_facts({"goodput": 1.0}, cost, tuning=tuning)
    assert only_tuning is not None and only_tuning["on_demand_hours"] == 1.0
    assert "tuning: 0.5000 h Spot" in week_lines({"spot_fallback": only_tuning})[0]
    assert fallback_facts({}, cost, tuning={"trials": 4.0}) is None


def test_build_summary_reports_the_tuning_steps_fallback() -> None:
    tuning_metrics = {"spot_fallback": 1.0, "spot_seconds": 7200.0, "on_demand_seconds": 3600.0}
    outputs = {
        "hp-tune": TaskOutputs(
            parameters={"best_trial_id": "3"},
            artifacts={"metrics": {"metadata": {"trials": 4.0, **tuning_metrics}}},
        ),
        "train-custom-job": TaskOutputs(
            artifacts={"metrics": {"metadata": {"goodput": 1.0, "restarts": 0.0}}}
        ),
    }
    facts = build_summary(
        outputs,
        run_name="r",
        state="SUCCEEDED",
        error_message="",
        job_shape={"machine_type": "n1-standard-8"},
        expected_training_hours=1.0,
    )
    fallback = facts["spot_fallback"]
    assert (fallback["spot_hours"], fallback["on_demand_hours"]) == (2.0, 1.0)
    assert fallback["tuning_on_demand_hours"] == 1.0
    assert facts["tuning"]["trials"] == 4.0


@pytest.mark.slow
def test_local_rehearsal_stockout_trial_then_on_demand_study_finishes(
    root: Path, tmp_path: Path
) -> None:
    image = build_container_image(JOBS, image_uri="us-docker.pkg.dev/p/r/jobs:v1").uri
    # Trial 1 reports at once; trial 2 works 3 s, so preempting every attempt at 1.5 s
    # fails it with STOCKOUT on the seventh, which fails the Spot study (1 failure allowed).
    # 1.5 s, not less: on a loaded machine trial 1's start alone took over 0.5 s, and it was
    # preempted too.
    request = _request(
        trial={
            "image_uri": image,
            "args": ["spot_trial.py", "--seconds=3"],
            "base_output_directory": "gs://bkt/study",
            "local_preemption_after_seconds": 1.5,
        },
        max_trial_count=3,
        parallel_trial_count=1,
        max_failed_trial_count=1,
    )
    outcome = tune(
        request,
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        report_path=str(tmp_path / "report.html"),
        fallback=FallbackPolicy(enabled=True, deadline_seconds=600),
    )
    by_id = {row.trial_id: row for row in outcome.trials}
    assert sorted(by_id) == ["1", "2", "3", "4"]
    assert by_id["2"].state == "INFEASIBLE" and "STOCKOUT" in by_id["2"].message
    assert all(by_id[i].state == "SUCCEEDED" for i in ("1", "3", "4"))
    assert outcome.metrics["spot_trials_kept"] == 1.0 and outcome.metrics["on_demand_trials"] == 2.0
    best = max((by_id[i] for i in ("1", "3", "4")), key=lambda row: row.metric or 0.0)
    assert outcome.best_trial_id == best.trial_id and outcome.best_metric == best.metric
    # The on-demand trials wrote to their own folder; the Spot trial 1's model is intact.
    spot_model = root / "gcs" / "bkt" / "study" / "1" / "model" / "params.json"
    assert json.loads(spot_model.read_text())["trial"] == "1"
    for trial in ("1", "2"):
        on_demand_model = root / "gcs" / "bkt" / "study" / "on-demand" / trial / "model"
        assert json.loads((on_demand_model / "params.json").read_text())["trial"] == trial


@pytest.mark.usefixtures("fast_gcpc_polling")
def test_vertex_backend_failed_study_carries_its_trials(tmp_path: Path) -> None:
    jobs = FakeJobServiceClient(states=("JOB_STATE_RUNNING", "JOB_STATE_FAILED"))
    polling = jobs.get_hyperparameter_tuning_job
    trials = [
        {
            "id": "1",
            "state": "SUCCEEDED",
            "parameters": [{"parameterId": "x", "value": 0.2}],
            "finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.7}]},
        },
        {"id": "2", "state": "INFEASIBLE", "infeasibleReason": STOCKOUT},
    ]

    def failed_with_trials(name: str, retry: Any = None) -> Any:
        job = polling(name, retry)
        if job.state.name == "JOB_STATE_FAILED" and not job.trials:
            for trial in trials:
                pb = aiplatform_v1.Trial.pb(aiplatform_v1.Trial())
                json_format.ParseDict(trial, pb)
                job.trials.append(aiplatform_v1.Trial.wrap(pb))
        return job

    jobs.get_hyperparameter_tuning_job = failed_with_trials  # type: ignore[method-assign]
    backend = VertexBackend("shop", "europe-west4", job_client_factory=jobs.factory())
    payload = tuning_job_payload(_request(trial={"backend": "vertex"}))
    with pytest.raises(StudyFailedError) as failed:
        backend.run_tuning_job(payload, gcp_resources_path=str(tmp_path / "gcp_resources"))
    assert "/hyperparameterTuningJobs/" in failed.value.job_name
    assert [(t.trial_id, t.state, t.metric) for t in failed.value.trials] == [
        ("1", "SUCCEEDED", 0.7),
        ("2", "INFEASIBLE", None),
    ]
    assert "STOCKOUT" in failed.value.trials[1].message

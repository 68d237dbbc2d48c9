"""hp_tune's logic: a validated HyperparameterTuningJob, its best trial and its report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.specs import validate_tuning_job
from vertex_retrain.specs.problems import raise_or_warn
from vertex_retrain.steps.backend import check_backend
from vertex_retrain.steps.gcp_resources import write_local_gcp_resources
from vertex_retrain.steps.job_request import TrainingRequest, job_spec_from_request
from vertex_retrain.steps.trials_report import TrialRow, render_trials_report

_BAYESIAN = ("", "BAYESIAN", "ALGORITHM_UNSPECIFIED")


@dataclass(frozen=True)
class TuningRequest:
    """A study over trials shaped like ``trial`` (each gets ``--PARAMETER=VALUE`` flags)."""

    trial: TrainingRequest
    parameter_specs: list[dict[str, Any]]
    metric_id: str
    goal: str = "MAXIMIZE"
    algorithm: str = ""
    max_trial_count: int = 8
    parallel_trial_count: int = 2
    max_failed_trial_count: int = 2
    measurement_selection: str = "BEST_MEASUREMENT"
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TuningOutcome:
    """The best trial of a finished study."""

    best_parameters: dict[str, Any]
    best_metric: float
    best_trial_id: str
    best_model_uri: str
    trials: list[TrialRow]


class TuningJobFailedError(RuntimeError):
    """The study failed (too many failed trials, or none succeeded)."""


def tuning_job_payload(request: TuningRequest) -> dict[str, Any]:
    """Validates the study and returns the HyperparameterTuningJob payload.

    Raises:
        JobSpecError: The study or its trial job is impossible; nothing was submitted.
    """
    trial_spec = job_spec_from_request(request.trial)
    study: dict[str, Any] = {
        "metrics": [{"metricId": request.metric_id, "goal": request.goal}],
        "parameters": list(request.parameter_specs),
    }
    if request.algorithm not in _BAYESIAN:
        study["algorithm"] = request.algorithm
    if request.measurement_selection:
        study["measurementSelectionType"] = request.measurement_selection
    payload: dict[str, Any] = {
        "displayName": request.trial.display_name,
        "studySpec": study,
        "maxTrialCount": int(request.max_trial_count),
        "parallelTrialCount": int(request.parallel_trial_count),
        "maxFailedTrialCount": int(request.max_failed_trial_count),
        "trialJobSpec": trial_spec.job_spec_payload(),
    }
    labels = {**trial_spec.all_labels(), **request.labels}
    if labels:
        payload["labels"] = labels
    raise_or_warn(trial_spec.builder_problems() + validate_tuning_job(payload))
    return payload


def tune(
    request: TuningRequest, *, gcp_resources_path: str, report_path: str, request_key: str = ""
) -> TuningOutcome:
    """Runs the study on the chosen backend and writes the HTML trials report.

    Args:
        request: The study.
        gcp_resources_path: Where the job resource is recorded (GCPC's format).
        report_path: Where the HTML report goes.
        request_key: Makes a re-run of the same pipeline task adopt its earlier job (Vertex).

    Returns:
        The best trial (never a failed or infeasible one) and every trial.

    Raises:
        JobSpecError: The study is impossible; nothing was submitted.
        TuningJobFailedError: The study failed or no trial succeeded.
    """
    payload = tuning_job_payload(request)
    if check_backend(request.trial.backend) == "local":
        outcome = _tune_locally(payload, request, gcp_resources_path)
    else:
        outcome = _tune_on_vertex(payload, request, gcp_resources_path, request_key)
    Path(report_path).parent.mkdir(parents=True, exist_ok=True)
    Path(report_path).write_text(
        render_trials_report(
            outcome.trials,
            metric_id=request.metric_id,
            goal=request.goal,
            best_trial_id=outcome.best_trial_id,
        ),
        encoding="utf-8",
    )
    return outcome


def _tune_locally(
    payload: dict[str, Any], request: TuningRequest, gcp_resources_path: str
) -> TuningOutcome:
    from vertex_retrain.backends.local.storage import local_root
    from vertex_retrain.backends.local.tuning import run_tuning_job

    result = run_tuning_job(payload)
    write_local_gcp_resources(
        gcp_resources_path, "HyperparameterTuningJob", local_root() / "jobs" / result.job_id
    )
    rows = [
        TrialRow(t.trial_id, t.state, t.parameters, t.metric, t.error or "") for t in result.trials
    ]
    if result.error:
        raise TuningJobFailedError(
            f"local tuning job {result.job_id} ended in {result.state}: {result.error}\n"
            f"{result.table()}"
        )
    best = result.best
    if best is None or best.metric is None:
        # The same error as Vertex's best-trial lookup gives.
        raise ValueError(
            f"no trial of {result.job_id} succeeded with a value for {request.metric_id!r}; "
            f"every trial must report it with cloudml-hypertune\n{result.table()}"
        )
    return TuningOutcome(
        best_parameters=dict(best.parameters),
        best_metric=float(best.metric),
        best_trial_id=best.trial_id,
        best_model_uri=best.model_dir or "",
        trials=rows,
    )


def _tune_on_vertex(
    payload: dict[str, Any], request: TuningRequest, gcp_resources_path: str, request_key: str
) -> TuningOutcome:
    from vertex_retrain.backends.vertex.custom_job import VertexJobFailedError
    from vertex_retrain.backends.vertex.tuning_job import best_trial, run_tuning_job_on_vertex

    try:
        job = run_tuning_job_on_vertex(
            payload,
            project=request.trial.project,
            location=request.trial.location,
            gcp_resources_path=gcp_resources_path,
            request_key=request_key or None,
        )
    except VertexJobFailedError as failure:
        raise TuningJobFailedError(str(failure)) from failure
    best = best_trial(job, request.metric_id, request.goal)
    rows = [_vertex_trial_row(trial, request.metric_id) for trial in job.get("trials", [])]
    return TuningOutcome(
        best_parameters=dict(best.parameters),
        best_metric=best.metric_value,
        best_trial_id=best.trial_id,
        best_model_uri=best.model_dir,
        trials=rows,
    )


def _vertex_trial_row(trial: dict[str, Any], metric_id: str) -> TrialRow:
    metric = next(
        (
            float(m["value"])
            for m in trial.get("finalMeasurement", {}).get("metrics", [])
            if m.get("metricId") == metric_id and "value" in m
        ),
        None,
    )
    parameters = {p.get("parameterId", "?"): p.get("value") for p in trial.get("parameters", [])}
    return TrialRow(
        str(trial.get("id", "?")),
        str(trial.get("state", "?")),
        parameters,
        metric,
        str(trial.get("infeasibleReason", "")),
    )

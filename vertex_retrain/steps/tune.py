"""hp_tune's logic: a validated HyperparameterTuningJob, its best trial and its report."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vertex_retrain.backends.base import Backend, JobFailedError, StudyTrial
from vertex_retrain.rules.spot_fallback import FallbackPolicy
from vertex_retrain.rules.trials import SUCCEEDED, choose_best_trial
from vertex_retrain.specs import validate_tuning_job
from vertex_retrain.specs.defaults import TUNING
from vertex_retrain.specs.problems import raise_or_warn
from vertex_retrain.steps.backend import resolve_backend
from vertex_retrain.steps.job_request import (
    TrainingRequest,
    flag_labels,
    job_spec_from_request,
    request_fields,
    training_request,
)
from vertex_retrain.steps.spot_fallback import FallbackFailedError
from vertex_retrain.steps.trials_report import TrialRow, render_trials_report
from vertex_retrain.steps.tune_fallback import fall_back_study

_BAYESIAN = ("", "BAYESIAN", "ALGORITHM_UNSPECIFIED")


@dataclass(frozen=True)
class TuningRequest:
    """A study over trials shaped like ``trial`` (each gets ``--PARAMETER=VALUE`` flags)."""

    trial: TrainingRequest
    parameter_specs: list[dict[str, Any]]
    metric_id: str
    goal: str = TUNING.goal
    algorithm: str = ""
    max_trial_count: int = TUNING.max_trial_count
    parallel_trial_count: int = TUNING.parallel_trial_count
    max_failed_trial_count: int = TUNING.max_failed_trial_count
    measurement_selection: str = TUNING.measurement_selection
    labels: dict[str, str] = field(default_factory=dict)


def tuning_request(inputs: Mapping[str, Any]) -> TuningRequest:
    """The study ``hp_tune``'s inputs describe.

    Args:
        inputs: Input name -> value: the study's fields by name, and its trials' job as
            :func:`vertex_retrain.steps.job_request.training_request` reads it (the labels are
            the study's, which its trial jobs carry too).
    """
    given = request_fields(TuningRequest, inputs, ("trial",))
    given.update(
        trial=training_request({**inputs, "labels": {}}),
        parameter_specs=list(given.get("parameter_specs") or []),
        labels=flag_labels(given.get("labels") or {}),
    )
    return TuningRequest(**given)


@dataclass(frozen=True)
class TuningOutcome:
    """The best trial of a finished study.

    ``metrics`` counts the trials and, after a Spot fallback, carries ``spot_fallback``,
    ``spot_seconds``, ``on_demand_seconds``, ``spot_trials_kept`` and ``on_demand_trials``.
    """

    best_parameters: dict[str, Any]
    best_metric: float
    best_trial_id: str
    best_model_uri: str
    trials: list[TrialRow]
    metrics: dict[str, float] = field(default_factory=dict)


class TuningJobFailedError(RuntimeError):
    """The study failed (too many failed trials, or none succeeded)."""


def tuning_job_payload(request: TuningRequest) -> dict[str, Any]:
    """Validates the study and returns the HyperparameterTuningJob payload.

    A fixed hyperparameter that the study also tunes is left out of the trial's flags: the
    study's value is the one each trial must see (a pipeline passes its untuned defaults to
    both ``hp_tune`` and ``train_custom_job``).

    Raises:
        JobSpecError: The study or its trial job is impossible; nothing was submitted.
    """
    tuned = {str(spec.get("parameterId")) for spec in request.parameter_specs}
    fixed = {k: v for k, v in request.trial.hyperparameters.items() if k not in tuned}
    trial_spec = job_spec_from_request(replace(request.trial, hyperparameters=fixed))
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
    request: TuningRequest,
    *,
    gcp_resources_path: str,
    report_path: str,
    request_key: str = "",
    backend: Backend | None = None,
    fallback: FallbackPolicy | None = None,
) -> TuningOutcome:
    """Runs the study on the chosen backend and writes the HTML trials report.

    Args:
        request: The study.
        gcp_resources_path: Where the job resource is recorded (GCPC's format).
        report_path: Where the HTML report goes.
        request_key: Makes a re-run of the same pipeline task adopt its earlier job.
        backend: The backend to run on (a test's, with fakes); by default the one
            ``request.trial.backend`` names.
        fallback: Whether a Spot study that lost its capacity is finished on demand, keeping
            its succeeded trials (:mod:`vertex_retrain.steps.tune_fallback`); off by default.

    Returns:
        The best trial by the shared rule (``rules.trials``: never a failed or infeasible
        one, nor one without a finite metric; ties to the lowest trial id) and every trial
        (after a fallback: of both studies, the on-demand trials' ids following the Spot
        study's).

    Raises:
        ValueError: An unknown backend, or no trial can win; no report is written then.
        JobSpecError: The study is impossible; nothing was submitted.
        TuningJobFailedError: The study failed (and the fallback, if any, did too).
    """
    trial = request.trial
    chosen = resolve_backend(
        trial.backend, project=trial.project, location=trial.location, backend=backend
    )
    payload = tuning_job_payload(request)
    started = time.monotonic()
    extra: dict[str, float] = {}
    trials: list[StudyTrial]
    try:
        study = chosen.run_tuning_job(
            payload,
            gcp_resources_path=gcp_resources_path,
            request_key=request_key,
            preemption_after_s=trial.local_preemption_after_seconds,
        )
        trials, study_name = study.trials, study.job_name
    except JobFailedError as failure:
        try:
            rescued = fall_back_study(
                chosen,
                payload,
                failure,
                policy=fallback or FallbackPolicy(),
                trial_timeout_seconds=trial.timeout_seconds,
                spot_seconds=time.monotonic() - started,
                gcp_resources_path=gcp_resources_path,
                request_key=request_key,
            )
        except FallbackFailedError as both:
            raise TuningJobFailedError(str(both)) from both
        if rescued is None:
            raise TuningJobFailedError(str(failure)) from failure
        trials, extra = rescued.trials, rescued.metrics
        study_name = "the Spot and on-demand studies"
    best = choose_best_trial(
        trials, metric_id=request.metric_id, goal=request.goal, study=study_name
    )
    assert best.metric is not None  # the rule only picks trials with a finite value
    outcome = TuningOutcome(
        best_parameters=dict(best.parameters),
        best_metric=best.metric,
        best_trial_id=best.trial_id,
        best_model_uri=best.model_uri,
        trials=[TrialRow(t.trial_id, t.state, t.parameters, t.metric, t.message) for t in trials],
        metrics={
            "trials": float(len(trials)),
            "succeeded_trials": float(sum(t.state == SUCCEEDED for t in trials)),
            **extra,
        },
    )
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

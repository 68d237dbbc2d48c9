"""Runs a HyperparameterTuningJob on Vertex AI and picks its best trial.

GCPC has had no best-trial op since 2.0; `best_trial` fills that gap. It reads the job
resource in REST JSON form and chooses by `vertex_retrain.rules.trials`, the rule the local
tuner follows too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vertex_retrain.backends.base import StudyTrial
from vertex_retrain.backends.vertex._launcher import (
    JobClientFactory,
    JobKind,
    VertexJobFailedError,
    VertexUnreachableError,
    run_job,
)
from vertex_retrain.rules.trials import choose_best_trial

__all__ = [
    "BestTrial",
    "VertexJobFailedError",
    "VertexUnreachableError",
    "best_trial",
    "run_tuning_job_on_vertex",
    "study_trials",
    "trial_model_dir",
]


def _tuning_job_kind() -> JobKind:
    from google.cloud import aiplatform_v1
    from google_cloud_pipeline_components.container.v1.hyperparameter_tuning_job import (
        remote_runner,
    )

    return JobKind(
        resource_type="HyperparameterTuningJob",
        message_cls=aiplatform_v1.HyperparameterTuningJob,
        create_with_client=remote_runner.create_hyperparameter_tuning_job_with_client,
        get_with_client=remote_runner.get_hyperparameter_tuning_job_with_client,
        list_method="list_hyperparameter_tuning_jobs",
        cancel_method="cancel_hyperparameter_tuning_job",
    )


def run_tuning_job_on_vertex(
    payload: dict[str, Any],
    *,
    project: str,
    location: str,
    gcp_resources_path: str,
    request_key: str | None = None,
    job_client_factory: JobClientFactory | None = None,
    connection_retries: int = 5,
    retry_wait_s: float = 20.0,
) -> dict[str, Any]:
    """Creates a HyperparameterTuningJob (or resumes the one already started) and waits for it.

    Same launcher contract as `vertex_retrain.backends.vertex.custom_job.run_custom_job_on_vertex`
    (gcp_resources, resume, SIGTERM cancels, request_key de-duplication, retries).

    Args:
        payload: The HyperparameterTuningJob in REST JSON form; unknown fields are refused.
        project: Google Cloud project id.
        location: Vertex AI region.
        gcp_resources_path: Where to write GCPC's `gcp_resources` JSON.
        request_key: A key unique to this pipeline task (see run_custom_job_on_vertex).
        job_client_factory: Builds the JobServiceClient from (ClientOptions, ClientInfo).
        connection_retries: Attempts per API call on connection errors.
        retry_wait_s: Seconds between those attempts.

    Returns:
        The final job resource in REST JSON form, including `trials`.

    Raises:
        ValueError: The payload does not parse, or gcp_resources is unreadable.
        VertexJobFailedError: The job did not succeed; `.job` holds the final resource.
        VertexUnreachableError: Vertex AI could not be reached.
    """
    return run_job(
        _tuning_job_kind(),
        payload,
        project=project,
        location=location,
        gcp_resources_path=gcp_resources_path,
        request_key=request_key,
        job_client_factory=job_client_factory,
        connection_retries=connection_retries,
        retry_wait_s=retry_wait_s,
    )


@dataclass(frozen=True)
class BestTrial:
    """The winning trial of a tuning job.

    Attributes:
        trial_id: Vertex's trial id (a decimal string).
        parameters: Parameter id to value; integer parameters come back as int.
        metric_id: The metric the trial was chosen by.
        metric_value: Its value in the trial's final measurement.
        model_dir: Where the trial's trainer wrote its model (its AIP_MODEL_DIR).
    """

    trial_id: str
    parameters: dict[str, Any]
    metric_id: str
    metric_value: float
    model_dir: str


def _trial_output_prefix(job: dict[str, Any]) -> str:
    # Empty when the job has no base output directory (its trials then had no AIP_MODEL_DIR).
    prefix: str = (
        job.get("trialJobSpec", {}).get("baseOutputDirectory", {}).get("outputUriPrefix", "")
    )
    return prefix


def trial_model_dir(job: dict[str, Any], trial_id: str) -> str:
    """Returns a trial's model directory: `<baseOutputDirectory>/<trial_id>/model`.

    This is the AIP_MODEL_DIR Vertex gives the CustomJob backing the trial (documented on
    `CustomJobSpec.base_output_directory` in aiplatform_v1).

    Raises:
        ValueError: The job has no `trialJobSpec.baseOutputDirectory.outputUriPrefix`.
    """
    prefix = _trial_output_prefix(job)
    if not prefix:
        raise ValueError(
            "the HyperparameterTuningJob has no trialJobSpec.baseOutputDirectory."
            "outputUriPrefix, so trials had no AIP_MODEL_DIR; set it in the trial job spec."
        )
    return f"{prefix.rstrip('/')}/{trial_id}/model"


_NON_FINITE = ("NaN", "Infinity", "-Infinity")
"""How proto JSON writes a double that is not finite."""


def _final_metric(trial: dict[str, Any], metric_id: str) -> float | None:
    # Non-finite values are kept: the shared best-trial rule decides what they are worth.
    for metric in trial.get("finalMeasurement", {}).get("metrics", []):
        if metric.get("metricId") == metric_id:
            value = metric.get("value")
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            if value in _NON_FINITE:
                return float(value)
    return None


def _integer_parameters(job: dict[str, Any]) -> set[str]:
    specs = job.get("studySpec", {}).get("parameters", [])
    return {spec["parameterId"] for spec in specs if "integerValueSpec" in spec}


def study_trials(job: dict[str, Any], metric_id: str) -> list[StudyTrial]:
    """Every trial of a tuning job resource, in the backend-neutral form.

    Integer parameters come back as int (Vertex returns every value as a double), and each
    trial's model directory is its AIP_MODEL_DIR (`trial_model_dir`; empty when the job has
    no base output directory).

    Args:
        job: The HyperparameterTuningJob resource in REST JSON form (with `trials`).
        metric_id: The study's metric.
    """
    integers = _integer_parameters(job)
    prefix = _trial_output_prefix(job)
    trials = []
    for trial in job.get("trials", []):
        trial_id = str(trial.get("id", "?"))
        parameters = {
            p.get("parameterId", "?"): (
                int(p["value"])
                if p.get("parameterId") in integers and p.get("value") is not None
                else p.get("value")
            )
            for p in trial.get("parameters", [])
        }
        trials.append(
            StudyTrial(
                trial_id=trial_id,
                state=str(trial.get("state", "?")),
                parameters=parameters,
                metric=_final_metric(trial, metric_id),
                model_uri=trial_model_dir(job, trial_id) if prefix else "",
                message=str(trial.get("infeasibleReason", "")),
            )
        )
    return trials


def best_trial(job: dict[str, Any], metric_id: str, goal: str) -> BestTrial:
    """Picks the best trial of a tuning job by the shared rule (`vertex_retrain.rules.trials`).

    Trials that are infeasible, failed, still running or without a finite value for
    `metric_id` never win. Ties go to the lowest trial id, so the choice is deterministic.

    Args:
        job: The HyperparameterTuningJob resource in REST JSON form (with `trials`).
        metric_id: The metric to rank by, as reported with cloudml-hypertune.
        goal: "MAXIMIZE" or "MINIMIZE".

    Returns:
        The best trial's id, parameters, metric value and model directory.

    Raises:
        ValueError: Bad goal, or no trial succeeded with a value for `metric_id`.
    """
    best = choose_best_trial(
        study_trials(job, metric_id),
        metric_id=metric_id,
        goal=goal,
        study=str(job.get("name", "the job")),
    )
    assert best.metric is not None  # the rule only picks trials with a finite value
    return BestTrial(
        trial_id=best.trial_id,
        parameters=dict(best.parameters),
        metric_id=metric_id,
        metric_value=best.metric,
        model_dir=trial_model_dir(job, best.trial_id),
    )

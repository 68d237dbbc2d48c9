"""evaluate_model's logic: run the package's evaluation job, then decide from its metrics.

The model-specific scoring runs in the user's training package, as a CustomJob on the chosen
backend (:mod:`vertex_retrain.contracts.evaluation` declares its flags and its metrics file),
so this library never imports model code and full-scale scoring gets a real machine. What
stays here is generic: finding the champion and checking that its data window lets it be
judged on the gate period (:mod:`vertex_retrain.steps.champion_window`), reading the metrics
and the per-entity scores back, the paired bootstrap intervals and the decision rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.contracts.dataset_manifest import MANIFEST_NAME
from vertex_retrain.contracts.evaluation import (
    EvaluationContractError,
    EvaluationMetrics,
    evaluation_args,
    parse_metrics,
)
from vertex_retrain.contracts.evaluation_declaration import parse_evaluation_declaration
from vertex_retrain.contracts.evaluation_scores import ScoresContractError
from vertex_retrain.contracts.guide import EVALUATION_CONTRACT, see
from vertex_retrain.rules.idempotency import task_key
from vertex_retrain.rules.same_model import same_folder
from vertex_retrain.specs.defaults import EVALUATION
from vertex_retrain.specs.display_names import EVALUATION_JOB_SUFFIX
from vertex_retrain.steps.backend import readable_path
from vertex_retrain.steps.champion import find_alias_holder
from vertex_retrain.steps.champion_window import ChampionWindow, champion_window
from vertex_retrain.steps.decision import FORCE_VALUES, Decision, decide, strongest_reference
from vertex_retrain.steps.entity_scores import primary_intervals, read_entity_scores
from vertex_retrain.steps.job_request import (
    TrainingRequest,
    artifact_uris,
    code_fields,
    request_fields,
)
from vertex_retrain.steps.nothing_to_decide import nothing_to_decide
from vertex_retrain.steps.train import TrainingJobFailedError, train

__all__ = [
    "METRICS_FILE",
    "EvaluationJobFailedError",
    "EvaluationRequest",
    "evaluate",
    "evaluation_job_request",
    "metrics_uri",
]

METRICS_FILE = "metrics.json"
"""The metrics file's name inside the evaluation job's output directory."""


class EvaluationJobFailedError(RuntimeError):
    """The evaluation job failed, or succeeded without a valid metrics file."""


@dataclass(frozen=True)
class EvaluationRequest:
    """What ``evaluate_model`` is asked to compare, and the job that scores.

    Attributes:
        backend: ``"vertex"`` or ``"local"``.
        candidate_uri: The candidate's model folder.
        dataset_uri: The prepared dataset folder (holds ``manifest.json``).
        model_display_name: Registry model that holds the champion.
        output_directory: ``gs://`` folder of the evaluation job; the metrics file is
            ``<it>/metrics.json``.
        evaluation_declaration: How the candidate is judged
            (:mod:`vertex_retrain.contracts.evaluation_declaration`), as its JSON object.
        python_module: The evaluation entry point of a Python-package job.
        champion_alias: Alias of the current champion version.
        force_decision: ``"better"`` or ``"worse"`` overrides the rule.
        force_reason: Why the rule is overridden; required with ``force_decision``.
        package_uris: The training package (the same wheel the training job ran).
        executor_image_uri: Prebuilt image that runs the package.
        image_uri: A custom container instead of a package; its entrypoint receives ``args``
            and then the contract's flags.
        args: Extra arguments placed before the contract's flags.
        machine_type: Machine of the evaluation job (CPU only).
        timeout_seconds: Maximum run time of the evaluation job.
        service_account: Service account the job runs as.
        display_name: The job's display name (default ``<model>-evaluation``).
        project: Google Cloud project.
        location: Google Cloud region.
    """

    backend: str
    candidate_uri: str
    dataset_uri: str
    model_display_name: str
    output_directory: str
    evaluation_declaration: Mapping[str, Any]
    python_module: str = ""
    champion_alias: str = "champion"
    force_decision: str = ""
    force_reason: str = ""
    package_uris: list[str] = field(default_factory=list)
    executor_image_uri: str = EVALUATION.executor_image_uri
    image_uri: str = ""
    args: list[str] = field(default_factory=list)
    machine_type: str = EVALUATION.machine_type
    timeout_seconds: int = EVALUATION.timeout_seconds
    service_account: str = ""
    display_name: str = ""
    project: str = ""
    location: str = ""


def evaluation_request(inputs: Mapping[str, Any]) -> EvaluationRequest:
    """The evaluation ``evaluate_model``'s inputs describe.

    Args:
        inputs: Input name -> value: the request's fields by name, the ``candidate`` and
            ``dataset`` artifacts (their URIs), ``base_output_directory`` (the job's output
            directory) and the package inputs as
            :func:`vertex_retrain.steps.job_request.training_request` reads them.
    """
    given = request_fields(EvaluationRequest, inputs)
    given.update(
        code_fields(inputs),
        **artifact_uris(inputs, candidate="candidate_uri", dataset="dataset_uri"),
        evaluation_declaration=dict(given.get("evaluation_declaration") or {}),
    )
    if "base_output_directory" in inputs:
        given["output_directory"] = str(inputs["base_output_directory"])
    return EvaluationRequest(**given)


def metrics_uri(output_directory: str) -> str:
    """Where the evaluation job writes its metrics: ``<output_directory>/metrics.json``."""
    return f"{output_directory.rstrip('/')}/{METRICS_FILE}"


def evaluation_job_request(request: EvaluationRequest, champion_uri: str | None) -> TrainingRequest:
    """The CustomJob that runs the evaluation entry point: one CPU replica, on demand.

    Args:
        request: The evaluation.
        champion_uri: The champion's model folder, or None when there is no champion.
    """
    return TrainingRequest(
        backend=request.backend,
        display_name=request.display_name or request.model_display_name + EVALUATION_JOB_SUFFIX,
        base_output_directory=request.output_directory,
        python_module=request.python_module,
        package_uris=list(request.package_uris),
        executor_image_uri=request.executor_image_uri,
        image_uri=request.image_uri,
        args=[
            *request.args,
            *evaluation_args(
                candidate_model_dir=request.candidate_uri,
                champion_model_dir=champion_uri,
                data=request.dataset_uri,
                metrics_output=metrics_uri(request.output_directory),
            ),
        ],
        machine_type=request.machine_type,
        # Scoring is a forward pass over one held-out week: CPUs suffice, and a decision
        # that gates a deployment should not wait on Spot capacity.
        accelerator_type="",
        accelerator_count=0,
        worker_count=0,
        distribution="",
        scheduling_strategy="STANDARD",
        timeout_seconds=request.timeout_seconds,
        service_account=request.service_account,
        project=request.project,
        location=request.location,
    )


def evaluate(
    request: EvaluationRequest, *, gcp_resources_path: str, request_key: str = ""
) -> Decision:
    """Scores the candidate and the champion in an evaluation job, then decides.

    The declaration and the entry point are checked before the job is submitted, so a
    misspelt metric direction or a missing module costs nothing. A candidate that is the
    champion's own model folder (a re-run of its week, training from the cache) is scored
    alone, and the decision says there is nothing to decide
    (:func:`vertex_retrain.steps.nothing_to_decide.nothing_to_decide`).

    Args:
        request: The comparison and the job that scores.
        gcp_resources_path: Where the job resource is recorded (GCPC's format).
        request_key: The task's key (``rules.idempotency.task_key`` of its inputs); the
            evaluation job's own key adds the champion found now, so a retry adopts the job
            it started and a changed champion gets a job of its own.

    Returns:
        The decision, with candidate, champion and reference metrics.

    Raises:
        EvaluationDeclarationError: The declaration is malformed; nothing was submitted.
        JobSpecError: The evaluation job is impossible; nothing was submitted.
        EvaluationJobFailedError: The job failed, or its metrics file is missing or breaks
            the evaluation contract (the message names the field).
        ValueError: No entry point, a metric the rule needs is missing, or the force value
            is unknown.
    """
    declaration = parse_evaluation_declaration(request.evaluation_declaration)
    if not request.image_uri and not request.python_module:
        raise ValueError(
            "evaluate_model needs the package's evaluation entry point: pass python_module "
            "(the pipelines' evaluation_module), e.g. 'mypackage.evaluate', or image_uri"
        )
    if request.force_decision not in FORCE_VALUES:
        raise ValueError(
            f"force_decision must be '', 'better' or 'worse'; got {request.force_decision!r}"
        )
    if request.force_decision and not request.force_reason.strip():
        raise ValueError(
            f"force_decision={request.force_decision!r} overrides the evaluation gate: give "
            "force_reason, a sentence saying why (kept in the run summary and the history)"
        )
    champion = find_alias_holder(
        backend=request.backend,
        display_name=request.model_display_name,
        alias=request.champion_alias,
        project=request.project,
        location=request.location,
    )
    # The champion's own folder (a re-run whose training came from the cache) is scored once,
    # as the candidate: there is nothing to compare it with.
    itself = champion is not None and same_folder(request.candidate_uri, champion.artifact_uri)
    window = (
        judge_window(request.backend, request.dataset_uri, champion.labels)
        if champion is not None and not itself
        else None
    )
    compared = champion is not None and window is not None and window.comparable
    champion_uri = champion.artifact_uri if compared and champion is not None else None
    job = evaluation_job_request(request, champion_uri)
    try:
        job_key = (
            task_key("evaluation-job", {"task": request_key, "champion": champion_uri or ""})
            if request_key
            else ""
        )
        train(job, gcp_resources_path=gcp_resources_path, request_key=job_key)
    except TrainingJobFailedError as failure:
        raise EvaluationJobFailedError(
            f"the evaluation job ({_entry_point(job)}) failed:\n{failure}"
        ) from failure
    metrics = read_metrics(request.backend, request.output_directory, champion_uri is not None)
    reference = strongest_reference(declaration, metrics.references)
    try:
        scores = read_entity_scores(
            request.backend, request.output_directory, metrics, declaration.primary
        )
    except (FileNotFoundError, ScoresContractError, ValueError) as error:
        raise EvaluationJobFailedError(str(error)) from error
    intervals = {} if scores is None else primary_intervals(scores, declaration, reference)
    if itself and champion is not None:
        return nothing_to_decide(
            metrics.candidate,
            declaration,
            version_id=champion.version_id,
            references=metrics.references,
            intervals=intervals,
            force=request.force_decision,
        )
    return decide(
        metrics.candidate,
        metrics.champion,
        declaration,
        references=metrics.references,
        force=request.force_decision,
        force_reason=request.force_reason,
        champion_comparison=window.note if window is not None else "",
        intervals=intervals,
        keep_champion=window is not None and window.keeps_champion,
    )


def judge_window(backend: str, dataset_uri: str, labels: dict[str, str]) -> ChampionWindow:
    """Whether a champion with these labels may be judged on the dataset's gate period.

    A dataset without a manifest naming a gate period (one ``prepare_dataset`` did not write)
    cannot say: the champion is compared, and the note says why.
    """
    path = readable_path(backend, dataset_uri) / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        return champion_window(labels, manifest)
    except (OSError, ValueError, AttributeError):
        return ChampionWindow(
            True,
            f"compared as is: the dataset ({dataset_uri}) has no manifest naming a gate "
            "period, so the champion's data window cannot be checked against it",
        )


def read_metrics(backend: str, output_directory: str, expect_champion: bool) -> EvaluationMetrics:
    """Reads and validates the metrics file the evaluation job wrote.

    Raises:
        EvaluationJobFailedError: The file is missing, not JSON, or breaks the contract.
    """
    uri = metrics_uri(output_directory)
    path = readable_path(backend, uri)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvaluationJobFailedError(
            f"the evaluation job succeeded but wrote no metrics file at {uri}; the entry point "
            f"must write --metrics-output ({see(EVALUATION_CONTRACT)})"
        ) from None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        raise EvaluationJobFailedError(f"{uri} is not JSON: {error}") from None
    try:
        return parse_metrics(payload, expect_champion=expect_champion, source=uri)
    except EvaluationContractError as error:
        raise EvaluationJobFailedError(str(error)) from error


def _entry_point(job: TrainingRequest) -> str:
    return job.image_uri or f"python -m {job.python_module}"

"""evaluate_model's logic: score candidate and champion on the same data, then decide."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from vertex_retrain.steps.backend import gcs_fuse_root, readable_path
from vertex_retrain.steps.champion import find_alias_holder
from vertex_retrain.steps.decision import Decision, decide


@dataclass(frozen=True)
class EvaluationRequest:
    """What ``evaluate_model`` is asked to compare."""

    backend: str
    candidate_uri: str
    dataset_dir: str
    model_display_name: str
    champion_alias: str = "champion"
    primary_metric: str = "ndcg_at_10"
    min_improvement: float = 0.0
    guardrail_metrics: dict[str, float] = field(default_factory=dict)
    force_decision: str = ""
    project: str = ""
    location: str = ""


def evaluate(request: EvaluationRequest) -> Decision:
    """Scores the candidate and the champion on the dataset's validation weeks and decides.

    Args:
        request: The comparison.

    Returns:
        The decision, with candidate, champion and popularity-baseline metrics.

    Raises:
        ValueError: A metric the rule needs is missing, or the force value is unknown.
        FileNotFoundError: A model directory or the dataset manifest is missing.
    """
    champion = find_alias_holder(
        backend=request.backend,
        display_name=request.model_display_name,
        alias=request.champion_alias,
        project=request.project,
        location=request.location,
    )
    with gcs_fuse_root(request.backend):
        candidate_metrics, baseline = score_model_dir(
            readable_path(request.backend, request.candidate_uri), Path(request.dataset_dir)
        )
        champion_metrics = None
        if champion is not None:
            champion_metrics, _ = score_model_dir(
                readable_path(request.backend, champion.artifact_uri), Path(request.dataset_dir)
            )
    decision = decide(
        candidate_metrics,
        champion_metrics,
        primary_metric=request.primary_metric,
        min_improvement=request.min_improvement,
        guardrails=request.guardrail_metrics,
        force=request.force_decision,
    )
    return replace(decision, baseline_metrics=baseline)


def score_model_dir(
    model_dir: Path, dataset_dir: Path
) -> tuple[dict[str, float], dict[str, float]]:
    """Scores an exported model on the validation weeks of a dataset manifest.

    Returns:
        (model metrics, per-store popularity baseline metrics on the same rows).
    """
    from trainer.scoring import evaluate_exported_model

    scores = evaluate_exported_model(str(model_dir), str(dataset_dir))
    return dict(scores["model"]), dict(scores["baseline"])

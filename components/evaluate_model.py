"""evaluate_model: score the candidate and the current champion on the same held-out data."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Input, Metrics, Model, Output

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def evaluate_model(
    backend: str,
    candidate: Input[Model],
    dataset: Input[Dataset],
    model_display_name: str,
    metrics: Output[Metrics],
    champion_alias: str = "champion",
    primary_metric: str = "ndcg_at_10",
    min_improvement: float = 0.0,
    guardrail_metrics: dict = {"recall_at_10": 0.01},  # noqa: B006 - read from the signature
    force_decision: str = "",
    # The placeholders are split so that kfp.local, which scans the embedded source for the
    # placeholders it cannot resolve, runs the component; Vertex sees the whole value.
    project: str = "{{" + "$.pipeline_google_cloud_project_id}}",
    location: str = "{{" + "$.pipeline_google_cloud_location}}",
) -> NamedTuple(
    "Outputs",
    [("is_better", bool), ("candidate_score", float), ("champion_score", float), ("reason", str)],
):
    """Decides whether the candidate should replace the champion.

    Both models are scored on the dataset's validation split. The candidate wins when its
    primary metric beats the champion's by more than ``min_improvement`` and no guardrail
    metric drops by more than its allowed amount. With no champion yet, the candidate wins.

    Args:
        backend: ``"vertex"`` or ``"local"``: where the champion is looked up.
        candidate: The candidate model directory.
        dataset: The dataset from ``prepare_dataset``.
        model_display_name: Registry model that holds the champion.
        metrics: Output: candidate, champion and popularity-baseline metrics.
        champion_alias: Alias of the current champion version.
        primary_metric: The single metric the decision is made on.
        min_improvement: The primary metric must gain more than this (absolute; with 0 a
            tie keeps the champion).
        guardrail_metrics: Metric name -> largest allowed drop (absolute).
        force_decision: ``"better"`` or ``"worse"`` overrides the rule (rehearsals, tests);
            the metrics are still computed and reported.
        project: Google Cloud project.
        location: Google Cloud region.

    Returns:
        is_better: Whether the candidate should become the champion.
        candidate_score: The candidate's primary metric.
        champion_score: The champion's primary metric (-1 when there is no champion).
        reason: One sentence explaining the decision.
    """
    from vertex_retrain.steps.evaluate import EvaluationRequest, evaluate

    decision = evaluate(
        EvaluationRequest(
            backend=backend,
            candidate_uri=candidate.uri,
            dataset_dir=dataset.path,
            model_display_name=model_display_name,
            champion_alias=champion_alias,
            primary_metric=primary_metric,
            min_improvement=min_improvement,
            guardrail_metrics={str(k): float(v) for k, v in guardrail_metrics.items()},
            force_decision=force_decision,
            project=project,
            location=location,
        )
    )
    for name, value in decision.reported_metrics().items():
        metrics.log_metric(name, value)
    return (decision.is_better, decision.candidate_score, decision.champion_score, decision.reason)

"""plan_training: a warm start from the champion, or a full retrain (never cached)."""

from typing import NamedTuple

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(RUN_PLACEHOLDERS)
def plan_training(
    backend: str,
    source_uri: str,
    model_display_name: str,
    as_of: str,
    warm_start: bool = True,
    full_retrain_every_weeks: int = 4,
    tune: bool = False,
    champion_alias: str = "champion",
    project: str = ...,
    location: str = ...,
) -> NamedTuple(
    "Outputs",
    [
        ("kind", str),
        ("reason", str),
        ("warm_start_args", list),
        ("labels", dict),
        ("full_labels", dict),
    ],
):
    """Decides the week's training kind (:mod:`vertex_retrain.rules.warm_start`).

    It reads the registry's champion and the trainer's source: run it with caching off.

    Args:
        backend: ``"vertex"`` or ``"local"``.
        source_uri: The training package's source folder; its ``pyproject.toml`` declares
            ``[tool.vertex-retrain] warm-start-flag`` when the trainer can warm start.
        model_display_name: The registry model whose champion a warm start continues.
        as_of: The week (``YYYY-MM-DD``).
        warm_start: Warm start when the trainer declares it and a champion exists.
        full_retrain_every_weeks: Retrain fully when the champion's line was last fully
            retrained this many weeks ago or more (0: never by age; 1: every week).
        tune: Whether the week tunes hyperparameters (then it retrains fully).
        champion_alias: The champion's alias.
        project: Google Cloud project.
        location: Google Cloud region.

    Returns:
        kind: ``warm`` or ``full``.
        reason: Why, in one sentence (the run summary shows it).
        warm_start_args: ``[--flag=<champion model folder>]`` for ``train_custom_job``'s
            ``warm_start_args``; empty for a full retrain.
        labels: Version labels of a model trained as planned (``register_model``'s
            ``training_labels``).
        full_labels: Version labels of a full retrain of this week.
    """
    from vertex_retrain.steps.training_plan import plan_week_training

    plan = plan_week_training(
        backend=backend,
        source_uri=source_uri,
        model_display_name=model_display_name,
        as_of=as_of,
        warm_start=warm_start,
        full_retrain_every_weeks=full_retrain_every_weeks,
        tune=tune,
        champion_alias=champion_alias,
        project=project,
        location=location,
    )
    print(f"training: {plan.reason}")
    return (plan.kind, plan.reason, plan.warm_start_args, plan.labels, plan.full_labels)

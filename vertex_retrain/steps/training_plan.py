"""The week's training plan: read the trainer's declaration and the champion, then decide
(:mod:`vertex_retrain.rules.warm_start`)."""

from __future__ import annotations

from vertex_retrain.backends.base import Backend
from vertex_retrain.rules.warm_start import TrainingPlan, declared_flag, plan_training
from vertex_retrain.steps.backend import readable_path
from vertex_retrain.steps.champion import find_alias_holder

__all__ = ["plan_week_training", "trainer_warm_start_flag"]


def trainer_warm_start_flag(backend: str | Backend, source_uri: str) -> str:
    """The warm-start flag the source's ``pyproject.toml`` declares (``""``: none, or no
    ``pyproject.toml``).

    Raises:
        ValueError: The declaration is malformed.
        FileNotFoundError: ``source_uri`` is not a folder here (the plan would otherwise read
            "declares no warm start" for a source it never saw).
    """
    folder = readable_path(backend, source_uri)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"source_uri {source_uri!r}: no such folder ({folder}); expected the training "
            "package's source folder, whose pyproject.toml may declare [tool.vertex-retrain] "
            "warm-start-flag"
        )
    pyproject = folder / "pyproject.toml"
    return declared_flag(pyproject.read_text(encoding="utf-8") if pyproject.is_file() else None)


def plan_week_training(
    *,
    backend: str | Backend,
    source_uri: str,
    model_display_name: str,
    as_of: str,
    warm_start: bool,
    full_retrain_every_weeks: int,
    tune: bool = False,
    champion_alias: str = "champion",
    project: str = "",
    location: str = "",
) -> TrainingPlan:
    """Plans the week's training from the trainer's source and the registry's champion.

    Args:
        backend: ``"local"`` or ``"vertex"``, or a backend (a test's, with fakes).
        source_uri: The training package's source folder.
        model_display_name: The registry model whose champion a warm start continues.
        as_of: The week (``YYYY-MM-DD``).
        warm_start: Whether warm starts are wanted.
        full_retrain_every_weeks: See :func:`vertex_retrain.rules.warm_start.plan_training`.
        tune: Whether the week tunes hyperparameters.
        champion_alias: The champion's alias.
        project: Google Cloud project (Vertex).
        location: Google Cloud region (Vertex).
    """
    flag = trainer_warm_start_flag(backend, source_uri) if warm_start else ""
    champion = (
        find_alias_holder(
            backend=backend,
            display_name=model_display_name,
            alias=champion_alias,
            project=project,
            location=location,
        )
        if flag
        else None
    )
    return plan_training(
        as_of=as_of,
        warm_start=warm_start,
        full_retrain_every_weeks=full_retrain_every_weeks,
        flag=flag,
        champion_uri=champion.artifact_uri if champion is not None else None,
        champion_labels=champion.labels if champion is not None else None,
        tune=tune,
    )

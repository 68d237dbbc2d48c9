"""The tuning study drawn with Optuna's own visualisation, for the study's KFP HTML report.

Three plots: the optimisation history, the parameters' importances and the parallel
coordinates. They work for any study: the trials (local Optuna trials or a Vertex
HyperparameterTuningJob's) are loaded into an in-memory Optuna study first. Importances use
Optuna's PED-ANOVA evaluator, which needs neither scikit-learn nor many trials. Plotly's
JavaScript is inlined once, so the page renders in the Vertex console without network access.
"""

from __future__ import annotations

import html
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution


class TrialLike(Protocol):
    """What a trial row provides (``vertex_retrain.steps.trials_report.TrialRow``)."""

    @property
    def trial_id(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]: ...

    @property
    def metric(self) -> float | None: ...


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _distribution(values: list[Any]) -> BaseDistribution:
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if values and all(_is_number(value) for value in values):
        low, high = min(values), max(values)
        if all(isinstance(value, int) for value in values):
            return IntDistribution(int(low), int(high))
        # A range over two decades or more reads better on a log axis (learning rates).
        log = low > 0 and high / low >= 100
        return FloatDistribution(float(low), float(high), log=log)
    return CategoricalDistribution(sorted({str(value) for value in values}))


def _value(value: Any, distribution: BaseDistribution) -> Any:
    from optuna.distributions import CategoricalDistribution

    return str(value) if isinstance(distribution, CategoricalDistribution) else value


def study_from_trials(trials: Sequence[TrialLike], *, metric_id: str, goal: str) -> optuna.Study:
    """An in-memory Optuna study holding ``trials`` (succeeded ones complete, others failed).

    Args:
        trials: The trials, in trial order.
        metric_id: The study's metric (the plots' axis title).
        goal: ``MAXIMIZE`` or ``MINIMIZE``.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names = sorted({name for trial in trials for name in trial.parameters})
    distributions = {
        name: _distribution([t.parameters[name] for t in trials if name in t.parameters])
        for name in names
    }
    direction: Literal["minimize", "maximize"] = (
        "minimize" if goal.upper() == "MINIMIZE" else "maximize"
    )
    study = optuna.create_study(direction=direction, study_name=metric_id)
    for trial in trials:
        complete = (
            trial.state == "SUCCEEDED" and trial.metric is not None and math.isfinite(trial.metric)
        )
        present = {name: distributions[name] for name in names if name in trial.parameters}
        state = optuna.trial.TrialState.COMPLETE if complete else optuna.trial.TrialState.FAIL
        study.add_trial(
            optuna.trial.create_trial(
                params={n: _value(trial.parameters[n], d) for n, d in present.items()},
                distributions=present,
                value=trial.metric if complete else None,
                state=state,
                user_attrs={"trial_id": trial.trial_id},
            )
        )
    return study


def study_plots_html(trials: Sequence[TrialLike], *, metric_id: str, goal: str) -> str:
    """The three plots as HTML fragments (plotly's script inlined once), or why one is missing.

    Args:
        trials: The trials, in trial order.
        metric_id: The study's metric.
        goal: ``MAXIMIZE`` or ``MINIMIZE``.

    Returns:
        HTML to place in the report's body.
    """
    from optuna import visualization
    from optuna.importance import PedAnovaImportanceEvaluator

    study = study_from_trials(trials, metric_id=metric_id, goal=goal)
    completed = [t for t in study.trials if t.state.name == "COMPLETE"]
    if not completed:
        return "<p>No trial reported the metric, so there is nothing to plot.</p>"
    plots = [
        ("Optimisation history", lambda: visualization.plot_optimization_history(
            study, target_name=metric_id)),
        ("Parameter importances", lambda: visualization.plot_param_importances(
            study, evaluator=PedAnovaImportanceEvaluator(), target_name=metric_id)),
        ("Parallel coordinates", lambda: visualization.plot_parallel_coordinate(
            study, target_name=metric_id)),
    ]  # fmt: skip
    parts: list[str] = []
    script_inlined = False
    for title, draw in plots:
        try:
            with warnings.catch_warnings():
                # PED-ANOVA warns that few trials give equal importances; the plot shows it.
                warnings.simplefilter("ignore", UserWarning)
                figure = draw()
        except (ValueError, RuntimeError, ZeroDivisionError) as error:
            # e.g. importances of a study whose parameters never varied
            parts.append(f"<h3>{title}</h3><p>Not drawn: {html.escape(str(error))}</p>")
            continue
        parts.append(f"<h3>{title}</h3>")
        parts.append(figure.to_html(full_html=False, include_plotlyjs=not script_inlined))
        script_inlined = True
    return "\n".join(parts)

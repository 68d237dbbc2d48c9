"""Which trial of a tuning study wins.

Only a ``SUCCEEDED`` trial with a finite value for the study's metric can win: failed,
infeasible and unfinished trials never do, and neither does a trial that reported NaN or
infinity. Among the rest the goal decides; a tie goes to the lowest trial id, so the choice
is the same on every backend and every re-run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

GOALS = ("MAXIMIZE", "MINIMIZE")
SUCCEEDED = "SUCCEEDED"


class ScoredTrial(Protocol):
    """What the rule reads of a trial (both backends' trial records have these)."""

    @property
    def trial_id(self) -> str:
        """The trial's id, a decimal string on both backends."""

    @property
    def state(self) -> str:
        """``SUCCEEDED``, ``INFEASIBLE``, ``ACTIVE``, ``STOPPING``..."""

    @property
    def metric(self) -> float | None:
        """The trial's final value of the study's metric, if it reported one."""


TrialT = TypeVar("TrialT", bound=ScoredTrial)


def check_goal(goal: str) -> str:
    """Returns ``goal`` if it is ``MAXIMIZE`` or ``MINIMIZE``.

    Raises:
        ValueError: Anything else.
    """
    if goal not in GOALS:
        raise ValueError(f"goal must be one of {GOALS}, got {goal!r}.")
    return goal


def can_win(trial: ScoredTrial) -> bool:
    """Whether a trial may be chosen: SUCCEEDED with a finite metric value."""
    metric = trial.metric
    return trial.state == SUCCEEDED and metric is not None and math.isfinite(metric)


def _id_order(trial_id: str) -> tuple[int, int, str]:
    # Numeric ids compare as numbers ("9" before "12"); others after them, as text.
    return (0, int(trial_id), "") if trial_id.isdigit() else (1, 0, trial_id)


def best_trial_or_none(trials: Iterable[TrialT], goal: str) -> TrialT | None:
    """The winning trial, or None when no trial can win (see the module docstring)."""
    sign = -1.0 if check_goal(goal) == "MAXIMIZE" else 1.0
    candidates = [trial for trial in trials if can_win(trial)]
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda trial: (sign * float(trial.metric or 0.0), _id_order(trial.trial_id)),
    )


def choose_best_trial(
    trials: Sequence[TrialT], *, metric_id: str, goal: str, study: str = "the study"
) -> TrialT:
    """The winning trial of a finished study.

    Args:
        trials: Every trial of the study.
        metric_id: The study's metric (for the error message).
        goal: ``MAXIMIZE`` or ``MINIMIZE``.
        study: How the error message names the study (its job name or id).

    Returns:
        The trial that wins.

    Raises:
        ValueError: A bad goal, or no trial can win; the message lists the trial states.
    """
    best = best_trial_or_none(trials, goal)
    if best is None:
        states = sorted({trial.state for trial in trials}) or ["no trials"]
        raise ValueError(
            f"no SUCCEEDED trial of {study} has a final value for metric {metric_id!r} "
            f"(trial states: {', '.join(states)}). Check that the trainer reports that metric "
            "with cloudml-hypertune and that some trials succeeded."
        )
    return best

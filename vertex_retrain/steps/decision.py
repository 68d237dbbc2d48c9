"""The champion/challenger rule: one primary metric, a minimum gain, and guardrails."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

NO_CHAMPION_SCORE = -1.0
"""Reported as the champion's score when there is no champion yet."""


@dataclass(frozen=True)
class Decision:
    """The outcome of comparing a candidate with the champion.

    Attributes:
        is_better: Whether the candidate should become the champion.
        candidate_score: The candidate's primary metric.
        champion_score: The champion's primary metric, or :data:`NO_CHAMPION_SCORE`.
        reason: One sentence explaining the decision.
        candidate_metrics: Every metric of the candidate.
        champion_metrics: Every metric of the champion (empty without one).
        baseline_metrics: The popularity baseline's metrics on the same data.
    """

    is_better: bool
    candidate_score: float
    champion_score: float
    reason: str
    candidate_metrics: Mapping[str, float] = field(default_factory=dict)
    champion_metrics: Mapping[str, float] = field(default_factory=dict)
    baseline_metrics: Mapping[str, float] = field(default_factory=dict)

    def reported_metrics(self) -> dict[str, float]:
        """Flattens the metrics for a KFP ``Metrics`` artifact (``candidate_*`` etc.)."""
        reported: dict[str, float] = {}
        for prefix, metrics in (
            ("candidate", self.candidate_metrics),
            ("champion", self.champion_metrics),
            ("baseline", self.baseline_metrics),
        ):
            # Non-finite values (a lift over a zero baseline) have no JSON form.
            reported.update(
                {f"{prefix}_{k}": float(v) for k, v in metrics.items() if math.isfinite(v)}
            )
        reported["is_better"] = 1.0 if self.is_better else 0.0
        return reported


def decide(
    candidate: Mapping[str, float],
    champion: Mapping[str, float] | None,
    *,
    primary_metric: str,
    min_improvement: float = 0.0,
    guardrails: Mapping[str, float] | None = None,
    force: str = "",
    minimums: Mapping[str, float] | None = None,
) -> Decision:
    """Applies the rule. Higher is better for every metric.

    Args:
        candidate: The candidate's metrics.
        champion: The champion's metrics, or None when there is no champion.
        primary_metric: The metric the decision is made on.
        min_improvement: The primary metric must gain more than this (absolute); with 0, a
            tie keeps the champion.
        guardrails: Metric -> largest allowed absolute drop.
        force: ``"better"`` or ``"worse"`` overrides the outcome (the reason says so).
        minimums: Metric -> the least value the candidate must reach, with or without a
            champion; e.g. ``{"ndcg_at_10_usual_margin": 0.0}``: the reference trainer's
            candidate must beat "reorder your usual".

    Returns:
        The decision.

    Raises:
        ValueError: If a metric the rule needs is missing or not finite, or ``force`` is
            not one of ``""``, ``"better"``, ``"worse"``.
    """
    if force not in ("", "better", "worse"):
        raise ValueError(f"force_decision must be '', 'better' or 'worse'; got {force!r}")
    guardrails = dict(guardrails or {})
    minimums = dict(minimums or {})
    _check_rule(min_improvement, guardrails, minimums)
    # Every metric the rule names is checked now, not only on the week it would decide: a
    # misspelt guardrail must fail the first run, not the run with a better candidate.
    for name in [primary_metric, *guardrails]:
        _metric(candidate, name, "candidate")
        if champion is not None:
            _metric(champion, name, "champion")
    candidate_score = _metric(candidate, primary_metric, "candidate")
    champion_score = (
        NO_CHAMPION_SCORE if champion is None else _metric(champion, primary_metric, "champion")
    )
    below = [
        (name, _metric(candidate, name, "candidate"), floor)
        for name, floor in sorted(minimums.items())
        if _metric(candidate, name, "candidate") < floor
    ]
    if below:
        name, value, floor = below[0]
        is_better = False
        reason = f"the candidate's {name} is {value:.4f}, below the required minimum {floor:.4f}"
    elif champion is None:
        is_better, reason = True, "no champion yet: the candidate becomes the first champion"
    else:
        is_better, reason = _compare(
            candidate, champion, primary_metric, min_improvement, guardrails
        )
    if force:
        is_better = force == "better"
        reason = f"forced to '{force}' (the rule said: {reason})"
    return Decision(
        is_better=is_better,
        candidate_score=candidate_score,
        champion_score=champion_score,
        reason=reason,
        candidate_metrics=dict(candidate),
        champion_metrics=dict(champion or {}),
    )


def _compare(
    candidate: Mapping[str, float],
    champion: Mapping[str, float],
    primary_metric: str,
    min_improvement: float,
    guardrails: Mapping[str, float],
) -> tuple[bool, str]:
    gain = _metric(candidate, primary_metric, "candidate") - _metric(
        champion, primary_metric, "champion"
    )
    # A tie is not an improvement: moving the alias for nothing would churn deployments.
    if gain <= min_improvement:
        return False, (
            f"{primary_metric} changed by {gain:+.4f}; promotion needs more than "
            f"{min_improvement:+.4f}"
        )
    for name, allowed_drop in sorted(guardrails.items()):
        drop = _metric(champion, name, "champion") - _metric(candidate, name, "candidate")
        if drop > allowed_drop:
            return False, (
                f"{primary_metric} improved by {gain:+.4f} but guardrail {name} dropped by "
                f"{drop:.4f}, more than the allowed {allowed_drop:.4f}"
            )
    return True, f"{primary_metric} improved by {gain:+.4f} and every guardrail held"


def _check_rule(
    min_improvement: float, guardrails: Mapping[str, float], minimums: Mapping[str, float]
) -> None:
    if not math.isfinite(min_improvement):
        raise ValueError(f"min_improvement must be a finite number; got {min_improvement}")
    for name, floor in minimums.items():
        if not math.isfinite(floor):
            raise ValueError(f"minimum {name!r} must be a finite number; got {floor}")
    for name, allowed_drop in guardrails.items():
        if not math.isfinite(allowed_drop) or allowed_drop < 0:
            raise ValueError(
                f"guardrail {name!r} must allow a finite drop of 0 or more; got {allowed_drop}"
            )


def _metric(metrics: Mapping[str, float], name: str, whose: str) -> float:
    if name not in metrics:
        raise ValueError(
            f"the {whose} has no metric {name!r}; it has {sorted(metrics)}. Pick one of "
            "those as primary/guardrail metric, or make the trainer report it."
        )
    value = float(metrics[name])
    if not math.isfinite(value):
        raise ValueError(f"the {whose}'s {name} is {value}; a decision needs a finite value")
    return value

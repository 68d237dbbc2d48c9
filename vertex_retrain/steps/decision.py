"""The champion/challenger rule: the declared primary metric, a minimum gain, guardrails,
floors and an optional reference, each in its metric's direction
(:mod:`vertex_retrain.contracts.evaluation_declaration`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.contracts.evaluation_declaration import EvaluationDeclaration

NO_CHAMPION_SCORE = -1.0
"""Reported as the champion's score when there is no champion yet."""

FORCE_VALUES = ("", "better", "worse")
"""What ``force_decision`` accepts."""


@dataclass(frozen=True)
class Decision:
    """The outcome of comparing a candidate with the champion.

    Attributes:
        is_better: Whether the candidate should become the champion.
        candidate_score: The candidate's primary metric.
        champion_score: The champion's primary metric, or :data:`NO_CHAMPION_SCORE`.
        reason: One sentence explaining the decision.
        rule: The evaluation declaration the decision applied, as its JSON object.
        candidate_metrics: Every metric of the candidate.
        champion_metrics: Every metric of the champion (empty without one).
        reference_metrics: Each reference's metrics on the same rows, by name.
    """

    is_better: bool
    candidate_score: float
    champion_score: float
    reason: str
    rule: Mapping[str, Any] = field(default_factory=dict)
    candidate_metrics: Mapping[str, float] = field(default_factory=dict)
    champion_metrics: Mapping[str, float] = field(default_factory=dict)
    reference_metrics: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def reported_metrics(self) -> dict[str, float]:
        """Flattens the metrics for a KFP ``Metrics`` artifact.

        Keys: ``candidate_<metric>``, ``champion_<metric>``, ``reference_<name>_<metric>``
        and ``is_better``.
        """
        groups: list[tuple[str, Mapping[str, float]]] = [
            ("candidate", self.candidate_metrics),
            ("champion", self.champion_metrics),
        ]
        groups += [(f"reference_{name}", m) for name, m in sorted(self.reference_metrics.items())]
        reported: dict[str, float] = {}
        for prefix, metrics in groups:
            # Non-finite values (a lift over a zero reference) have no JSON form.
            reported.update(
                {f"{prefix}_{k}": float(v) for k, v in metrics.items() if math.isfinite(v)}
            )
        reported["is_better"] = 1.0 if self.is_better else 0.0
        return reported


def decide(
    candidate: Mapping[str, float],
    champion: Mapping[str, float] | None,
    declaration: EvaluationDeclaration,
    *,
    references: Mapping[str, Mapping[str, float]] | None = None,
    force: str = "",
) -> Decision:
    """Applies the declared rule.

    The candidate becomes the champion when it reaches every floor, beats the declared
    reference on the primary metric, and (when there is a champion) improves the primary
    metric by more than ``min_improvement`` with no guardrail metric worse by more than
    allowed. A tie is not an improvement: moving the alias for nothing churns deployments.

    Args:
        candidate: The candidate's metrics.
        champion: The champion's metrics, or None when there is no champion.
        declaration: The evaluation declaration.
        references: Each reference's metrics on the same rows, by name.
        force: ``"better"`` or ``"worse"`` overrides the outcome (the reason says so).

    Returns:
        The decision.

    Raises:
        ValueError: A metric the rule names is missing or not finite (checked every run, not
            only on the run it would decide), the declared reference is missing from the
            metrics file, or ``force`` is not one of :data:`FORCE_VALUES`.
    """
    if force not in FORCE_VALUES:
        raise ValueError(f"force_decision must be '', 'better' or 'worse'; got {force!r}")
    references = dict(references or {})
    named = [declaration.primary, *declaration.guardrails, *declaration.floors]
    for name in dict.fromkeys(named):
        _metric(candidate, name, "candidate")
        if champion is not None:
            _metric(champion, name, "champion")
    primary = declaration.primary
    candidate_score = _metric(candidate, primary, "candidate")
    champion_score = (
        NO_CHAMPION_SCORE if champion is None else _metric(champion, primary, "champion")
    )
    refused = _floor_or_reference(candidate, declaration, references)
    if refused:
        is_better, reason = False, refused
    elif champion is None:
        is_better, reason = True, "no champion yet: the candidate becomes the first champion"
    else:
        is_better, reason = _compare(candidate, champion, declaration)
    if force:
        is_better = force == "better"
        reason = f"forced to '{force}' (the rule said: {reason})"
    return Decision(
        is_better=is_better,
        candidate_score=candidate_score,
        champion_score=champion_score,
        reason=reason,
        rule=declaration.to_dict(),
        candidate_metrics=dict(candidate),
        champion_metrics=dict(champion or {}),
        reference_metrics={name: dict(m) for name, m in references.items()},
    )


def _floor_or_reference(
    candidate: Mapping[str, float],
    declaration: EvaluationDeclaration,
    references: Mapping[str, Mapping[str, float]],
) -> str:
    """Why the candidate cannot be champion whatever the champion scores ("" if it can)."""
    for name, floor in sorted(declaration.floors.items()):
        value = _metric(candidate, name, "candidate")
        if not declaration.reaches(name, value, floor):
            bound = "minimum" if declaration.directions[name] == "higher" else "maximum"
            return f"the candidate's {name} is {value:.4f}, beyond the required {bound} {floor:.4f}"
    reference = declaration.reference
    if reference is None:
        return ""
    if reference not in references:
        raise ValueError(
            f"the evaluation declaration's reference {reference!r} is not in the metrics file; it "
            f"reports {sorted(references) or 'no reference'}. Make the evaluation entry point "
            "write it under \"references\", or drop 'reference' from the declaration"
        )
    primary = declaration.primary
    value = _metric(candidate, primary, "candidate")
    against = _metric(references[reference], primary, f"reference {reference!r}")
    gain = declaration.gain(primary, value, against)
    if gain <= 0:
        return (
            f"the candidate's {primary} {value:.4f} does not beat reference {reference!r} "
            f"({against:.4f})"
        )
    return ""


def _compare(
    candidate: Mapping[str, float],
    champion: Mapping[str, float],
    declaration: EvaluationDeclaration,
) -> tuple[bool, str]:
    primary = declaration.primary
    gain = declaration.gain(
        primary, _metric(candidate, primary, "candidate"), _metric(champion, primary, "champion")
    )
    direction = declaration.directions[primary]
    if gain <= declaration.min_improvement:
        return False, (
            f"{primary} ({direction} is better) improved by {gain:+.4f}; promotion needs more "
            f"than {declaration.min_improvement:+.4f}"
        )
    for name, allowed in sorted(declaration.guardrails.items()):
        worse = -declaration.gain(
            name, _metric(candidate, name, "candidate"), _metric(champion, name, "champion")
        )
        if worse > allowed:
            return False, (
                f"{primary} improved by {gain:+.4f} but guardrail {name} got worse by "
                f"{worse:.4f}, more than the allowed {allowed:.4f}"
            )
    return (
        True,
        f"{primary} ({direction} is better) improved by {gain:+.4f} and every guardrail held",
    )


def _metric(metrics: Mapping[str, float], name: str, whose: str) -> float:
    if name not in metrics:
        raise ValueError(
            f"the {whose} has no metric {name!r}; it has {sorted(metrics)}. Name one of those "
            "in the evaluation declaration, or make the evaluation entry point report it"
        )
    value = float(metrics[name])
    if not math.isfinite(value):
        raise ValueError(f"the {whose}'s {name} is {value}; a decision needs a finite value")
    return value

"""The champion/challenger rule: the declared primary metric, a minimum gain, guardrails,
floors and references, each in its metric's direction
(:mod:`vertex_retrain.contracts.evaluation_declaration`).

The gate is on by default: a candidate that reaches no floor and beats no reference has
nothing to show, so with no champion to compare with (none yet, or one that cannot be judged
on this gate period) a declaration without a reference or a floor deploys nothing. Forcing
the outcome needs a reason, which the decision keeps. With paired bootstrap intervals
(:mod:`vertex_retrain.steps.paired_bootstrap`) the reason states them, and with
``confidence.require`` the rule decides on their bounds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.contracts.evaluation_declaration import EvaluationDeclaration
from vertex_retrain.contracts.guide import EVALUATION_CONTRACT, see
from vertex_retrain.steps.paired_bootstrap import Interval

NO_CHAMPION_SCORE = -1.0
"""Reported as the champion's score when there is no champion yet."""

FORCE_VALUES = ("", "better", "worse")
"""What ``force_decision`` accepts."""

CHAMPION = "champion"
"""The interval key of candidate minus champion; a reference's is ``reference:<name>``."""


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
        reference: The declared reference the candidate had to beat (the strongest of the
            declared ones), or "".
        champion_comparison: How the champion was judged: ``compared``, ``no champion`` or
            ``not comparable: <why>`` (the decision then rested on floors and references).
        intervals: Paired bootstrap intervals of the primary metric, candidate minus
            ``champion`` and minus ``reference:<name>``.
        override: ``{"decision", "reason", "rule_said"}`` when the outcome was forced.
    """

    is_better: bool
    candidate_score: float
    champion_score: float
    reason: str
    rule: Mapping[str, Any] = field(default_factory=dict)
    candidate_metrics: Mapping[str, float] = field(default_factory=dict)
    champion_metrics: Mapping[str, float] = field(default_factory=dict)
    reference_metrics: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    reference: str = ""
    champion_comparison: str = "no champion"
    intervals: Mapping[str, Interval] = field(default_factory=dict)
    override: Mapping[str, str] = field(default_factory=dict)

    def reported_metrics(self) -> dict[str, float]:
        """Flattens the metrics for a KFP ``Metrics`` artifact.

        Keys: ``candidate_<metric>``, ``champion_<metric>``, ``reference_<name>_<metric>``,
        ``interval_<other>_{point,low,high}`` (``other`` being ``champion`` or
        ``reference_<name>``) and ``is_better``.
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
        for other, interval in sorted(self.intervals.items()):
            key = other.replace(":", "_")
            reported.update(
                {
                    f"interval_{key}_{end}": getattr(interval, end)
                    for end in ("point", "low", "high")
                }
            )
        reported["is_better"] = 1.0 if self.is_better else 0.0
        return reported

    def evidence(self) -> dict[str, Any]:
        """What the decision rested on besides the metrics, for the summary and the history."""
        return {
            "reference": self.reference,
            "champion_comparison": self.champion_comparison,
            "intervals": {other: i.to_dict() for other, i in sorted(self.intervals.items())},
            "override": dict(self.override),
        }


def strongest_reference(
    declaration: EvaluationDeclaration, references: Mapping[str, Mapping[str, float]]
) -> str:
    """The declared reference the candidate must beat: the best of the declared ones on the
    primary metric (in its direction), or "" when none is declared.

    Raises:
        ValueError: A declared reference is missing from the metrics file, or lacks the
            primary metric.
    """
    if not declaration.references:
        return ""
    missing = [name for name in declaration.references if name not in references]
    if missing:
        raise ValueError(
            f"the evaluation declaration's reference {missing[0]!r} is not in the metrics file; "
            f"it reports {sorted(references) or 'no reference'}. Make the evaluation entry "
            "point write it under \"references\", or drop it from the declaration's 'reference'"
        )
    primary = declaration.primary
    values = {
        name: _metric(references[name], primary, f"reference {name!r}")
        for name in declaration.references
    }
    sign = 1.0 if declaration.directions[primary] == "higher" else -1.0
    # Ties go to the first declared: the order of the declaration is a team's preference.
    return max(declaration.references, key=lambda name: sign * values[name])


def decide(
    candidate: Mapping[str, float],
    champion: Mapping[str, float] | None,
    declaration: EvaluationDeclaration,
    *,
    references: Mapping[str, Mapping[str, float]] | None = None,
    force: str = "",
    force_reason: str = "",
    champion_comparison: str = "",
    intervals: Mapping[str, Interval] | None = None,
    keep_champion: bool = False,
) -> Decision:
    """Applies the declared rule.

    The candidate becomes the champion when it reaches every floor, beats the strongest
    declared reference on the primary metric, and (when there is a champion to compare with)
    improves the primary metric by more than ``min_improvement`` with no guardrail metric
    worse by more than allowed. Without a champion to compare with, it needs a reference or
    a floor to pass: with neither declared, nothing shows it is any good. A tie is not an
    improvement: moving the alias for nothing churns deployments. With
    ``confidence.require`` the gains over the champion and the reference are taken at the
    bound of their intervals.

    Args:
        candidate: The candidate's metrics.
        champion: The champion's metrics, or None when there is none to compare with.
        declaration: The evaluation declaration.
        references: Each reference's metrics on the same rows, by name.
        force: ``"better"`` or ``"worse"`` overrides the outcome (the reason says so).
        force_reason: Why; required with ``force``, kept in the decision.
        champion_comparison: How the champion was judged, when there is more to say than
            ``compared`` or ``no champion``: ``not comparable: <why>`` for a champion that
            cannot be judged on this gate period (``champion`` is then None), or a note on
            one that was compared.
        intervals: Bootstrap intervals of candidate minus ``champion`` and minus
            ``reference:<name>`` on the primary metric.
        keep_champion: The run replays a week before the end of the champion's data
            (:class:`~vertex_retrain.steps.champion_window.ChampionWindow`): the candidate
            does not replace it, whatever it scores (``champion_comparison`` says why), unless
            forced.

    Returns:
        The decision.

    Raises:
        ValueError: A metric the rule names is missing or not finite (checked every run, not
            only on the run it would decide), a declared reference is missing from the
            metrics file, ``force`` is not one of :data:`FORCE_VALUES` or comes without a
            reason, or ``confidence.require`` is set and an interval the rule needs is missing.
    """
    if force not in FORCE_VALUES:
        raise ValueError(f"force_decision must be '', 'better' or 'worse'; got {force!r}")
    if force and not force_reason.strip():
        raise ValueError(
            f"force_decision={force!r} overrides the evaluation gate: give force_reason, a "
            "sentence saying why (it is kept in the run summary and the history)"
        )
    references = dict(references or {})
    intervals = dict(intervals or {})
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
    reference = strongest_reference(declaration, references)
    refused = _floor_or_reference(candidate, declaration, references, reference, intervals)
    comparison = champion_comparison or ("compared" if champion is not None else "no champion")
    if refused:
        is_better, reason = False, refused
    elif keep_champion:
        is_better, reason = False, comparison
    elif champion is None and not declaration.has_bar:
        is_better, reason = (
            False,
            (
                f"{'no champion yet' if not champion_comparison else 'no comparable champion'} and "
                "nothing to beat: the evaluation declaration names no reference and no floor, so "
                "nothing shows the candidate is any good; declare a reference or a floor, or "
                "override with force_decision and force_reason"
            ),
        )
    elif champion is None:
        passed = [
            *(["reached every floor"] if declaration.floors else []),
            *([f"beat reference {reference!r}"] if reference else []),
        ]
        is_better, reason = (
            True,
            (
                (champion_comparison or "no champion yet")
                + f": the candidate {' and '.join(passed)}, and becomes the champion"
            ),
        )
    else:
        is_better, reason = _compare(candidate, champion, declaration, intervals)
    override: dict[str, str] = {}
    if force:
        override = {"decision": force, "reason": force_reason.strip(), "rule_said": reason}
        is_better = force == "better"
        reason = f"forced to '{force}' ({force_reason.strip()}); the rule said: {reason}"
    return Decision(
        is_better=is_better,
        candidate_score=candidate_score,
        champion_score=champion_score,
        reason=reason,
        rule=declaration.to_dict(),
        candidate_metrics=dict(candidate),
        champion_metrics=dict(champion or {}),
        reference_metrics={name: dict(m) for name, m in references.items()},
        reference=reference,
        champion_comparison=comparison,
        intervals=intervals,
        override=override,
    )


def gain_bound(declaration: EvaluationDeclaration, interval: Interval) -> float:
    """The interval's worst gain in the primary metric's direction (its lower bound of
    candidate minus other for a ``higher`` metric; minus its upper bound for ``lower``)."""
    if declaration.directions[declaration.primary] == "higher":
        return interval.low
    return -interval.high


def _interval(
    declaration: EvaluationDeclaration, intervals: Mapping[str, Interval], other: str
) -> Interval | None:
    found = intervals.get(other)
    if found is None and declaration.confidence.require:
        raise ValueError(
            f"the evaluation declaration requires a confidence interval (confidence.require) "
            f"but there is none for candidate minus {other}: the evaluation entry point must "
            f"write a scores file of the primary metric ({see(EVALUATION_CONTRACT)})"
        )
    return found


def _floor_or_reference(
    candidate: Mapping[str, float],
    declaration: EvaluationDeclaration,
    references: Mapping[str, Mapping[str, float]],
    reference: str,
    intervals: Mapping[str, Interval],
) -> str:
    """Why the candidate cannot be champion whatever the champion scores ("" if it can)."""
    for name, floor in sorted(declaration.floors.items()):
        value = _metric(candidate, name, "candidate")
        if not declaration.reaches(name, value, floor):
            bound = "minimum" if declaration.directions[name] == "higher" else "maximum"
            return f"the candidate's {name} is {value:.4f}, beyond the required {bound} {floor:.4f}"
    if not reference:
        return ""
    primary = declaration.primary
    value = _metric(candidate, primary, "candidate")
    against = _metric(references[reference], primary, f"reference {reference!r}")
    strongest = " (the strongest declared)" if len(declaration.references) > 1 else ""
    if declaration.gain(primary, value, against) <= 0:
        return (
            f"the candidate's {primary} {value:.4f} does not beat reference {reference!r}"
            f"{strongest} ({against:.4f})"
        )
    interval = _interval(declaration, intervals, f"reference:{reference}")
    required = declaration.confidence.require
    if required and interval is not None and gain_bound(declaration, interval) <= 0:
        return (
            f"the candidate's {primary} beats reference {reference!r}{strongest} by "
            f"{interval.describe()}, but the interval does not exclude 0 (confidence.require)"
        )
    return ""


def _compare(
    candidate: Mapping[str, float],
    champion: Mapping[str, float],
    declaration: EvaluationDeclaration,
    intervals: Mapping[str, Interval],
) -> tuple[bool, str]:
    primary = declaration.primary
    gain = declaration.gain(
        primary, _metric(candidate, primary, "candidate"), _metric(champion, primary, "champion")
    )
    direction = declaration.directions[primary]
    interval = _interval(declaration, intervals, CHAMPION)
    shown = f" ({_gain_interval(declaration, interval)})" if interval is not None else ""
    change = f"improved by {gain:+.4f}" if gain > 0 else f"did not improve ({gain:+.4f})"
    if gain <= declaration.min_improvement:
        return False, (
            f"{primary} ({direction} is better) {change}{shown}; promotion needs an improvement "
            f"of more than {declaration.min_improvement:+.4f}"
        )
    if declaration.confidence.require and interval is not None:
        bound = gain_bound(declaration, interval)
        if bound <= declaration.min_improvement:
            return False, (
                f"{primary} ({direction} is better) {change}{shown}, but at the interval's "
                f"worst only by {bound:+.4f}; promotion needs more than "
                f"{declaration.min_improvement:+.4f} there (confidence.require)"
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
        f"{primary} ({direction} is better) improved by {gain:+.4f}{shown} and every guardrail "
        "held",
    )


def _gain_interval(declaration: EvaluationDeclaration, interval: Interval) -> str:
    """The interval of candidate minus champion as improvements, in the primary metric's
    better direction (so one sign reads one way), saying when it includes no change."""
    sign = 1.0 if declaration.directions[declaration.primary] == "higher" else -1.0
    low, high = sorted((sign * interval.low, sign * interval.high))
    includes = ", includes 0" if low <= 0 <= high else ""
    return (
        f"{interval.level:.0%} interval of the improvement {low:+.4f} to {high:+.4f}{includes}, "
        f"{interval.resamples:,} resamples of {interval.entities:,} entities"
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

"""The champion/challenger rule, as the evaluation declaration states it, in both directions."""

from __future__ import annotations

import math
from typing import Any

import pytest

from vertex_retrain.contracts.evaluation_declaration import (
    EvaluationDeclaration,
    parse_evaluation_declaration,
)
from vertex_retrain.steps.decision import NO_CHAMPION_SCORE, decide, strongest_reference
from vertex_retrain.steps.paired_bootstrap import Interval


def _rule(**fields: Any) -> EvaluationDeclaration:
    return parse_evaluation_declaration(
        {"primary": "score", "metrics": {"score": "higher", "other": "higher"}, **fields}
    )


def _lower(**fields: Any) -> EvaluationDeclaration:
    return parse_evaluation_declaration(
        {"primary": "rmse", "metrics": {"rmse": "lower", "mae": "lower"}, **fields}
    )


def test_decide_without_champion_promotes_a_candidate_that_beats_the_reference() -> None:
    decision = decide(
        {"score": 0.3},
        None,
        _rule(reference="popularity"),
        references={"popularity": {"score": 0.2}},
    )
    assert decision.is_better
    assert decision.champion_score == NO_CHAMPION_SCORE
    assert "no champion yet" in decision.reason and "beat reference 'popularity'" in decision.reason
    assert (decision.champion_comparison, decision.reference) == ("no champion", "popularity")
    assert decision.rule["primary"] == "score"


@pytest.mark.parametrize(
    ("declaration", "better"),
    [
        (_rule(), False),  # nothing to beat: no first champion
        (_rule(floors={"score": 0.05}), True),  # a floor is a bar
        (_rule(reference="popularity"), True),  # so is a reference
    ],
)
def test_decide_first_champion_needs_a_reference_or_a_floor(
    declaration: EvaluationDeclaration, better: bool
) -> None:
    decision = decide({"score": 0.1}, None, declaration, references={"popularity": {"score": 0.0}})
    assert decision.is_better is better
    if not better:
        assert "nothing to beat" in decision.reason and "force_reason" in decision.reason


@pytest.mark.parametrize(
    ("declaration", "candidate", "champion", "better"),
    [
        (_rule(), {"score": 0.31}, {"score": 0.30}, True),
        (_rule(), {"score": 0.30}, {"score": 0.30}, False),  # a tie keeps the champion
        (_rule(), {"score": 0.29}, {"score": 0.30}, False),
        (_lower(), {"rmse": 9.0}, {"rmse": 10.0}, True),  # lower is better: 9 beats 10
        (_lower(), {"rmse": 10.0}, {"rmse": 10.0}, False),
        (_lower(), {"rmse": 11.0}, {"rmse": 10.0}, False),
    ],
)
def test_decide_compares_the_primary_metric_in_its_direction(
    declaration: EvaluationDeclaration,
    candidate: dict[str, float],
    champion: dict[str, float],
    better: bool,
) -> None:
    assert decide(candidate, champion, declaration).is_better is better


@pytest.mark.parametrize(
    ("declaration", "candidate", "champion", "better"),
    [
        (_rule(min_improvement=0.01), {"score": 0.3101}, {"score": 0.30}, True),
        (_rule(min_improvement=0.01), {"score": 0.3099}, {"score": 0.30}, False),
        (_lower(min_improvement=0.5), {"rmse": 9.4}, {"rmse": 10.0}, True),
        (_lower(min_improvement=0.5), {"rmse": 9.6}, {"rmse": 10.0}, False),
    ],
)
def test_decide_needs_more_than_min_improvement_in_the_metrics_direction(
    declaration: EvaluationDeclaration,
    candidate: dict[str, float],
    champion: dict[str, float],
    better: bool,
) -> None:
    decision = decide(candidate, champion, declaration)
    assert decision.is_better is better
    if not better:
        assert "promotion needs an improvement of more than" in decision.reason


@pytest.mark.parametrize(
    ("candidate_mae", "better"),
    [(10.4, True), (10.6, False)],  # the champion's MAE is 10.0; 0.5 of worsening is allowed
)
def test_decide_guardrail_counts_worsening_in_a_lower_is_better_metric(
    candidate_mae: float, better: bool
) -> None:
    declaration = _lower(guardrails={"mae": 0.5})
    decision = decide({"rmse": 9.0, "mae": candidate_mae}, {"rmse": 10.0, "mae": 10.0}, declaration)
    assert decision.is_better is better
    if not better:
        assert "guardrail mae got worse by 0.6000" in decision.reason


def test_decide_guardrail_counts_a_drop_in_a_higher_is_better_metric() -> None:
    declaration = _rule(guardrails={"other": 0.05})
    champion = {"score": 0.30, "other": 0.60}
    assert not decide({"score": 0.40, "other": 0.54}, champion, declaration).is_better
    assert decide({"score": 0.40, "other": 0.56}, champion, declaration).is_better


@pytest.mark.parametrize(
    ("declaration", "candidate", "reaches"),
    [
        (_rule(floors={"other": 0.5}), {"score": 0.9, "other": 0.5}, True),
        (_rule(floors={"other": 0.5}), {"score": 0.9, "other": 0.49}, False),
        (_lower(floors={"rmse": 12.0}), {"rmse": 12.0}, True),  # a maximum for lower metrics
        (_lower(floors={"rmse": 12.0}), {"rmse": 12.01}, False),
    ],
)
def test_decide_floor_is_a_bound_in_the_metrics_direction_with_or_without_champion(
    declaration: EvaluationDeclaration, candidate: dict[str, float], reaches: bool
) -> None:
    first = decide(candidate, None, declaration)
    assert first.is_better is reaches
    if not reaches:
        assert "beyond the required" in first.reason
    weak_champion = {
        name: (-1e9 if d == "higher" else 1e9) for name, d in declaration.directions.items()
    }
    assert decide(candidate, weak_champion, declaration).is_better is reaches


@pytest.mark.parametrize(
    ("declaration", "candidate", "reference", "beats"),
    [
        (_rule(reference="popularity"), {"score": 0.26}, {"score": 0.25}, True),
        (_rule(reference="popularity"), {"score": 0.25}, {"score": 0.25}, False),
        (_lower(reference="naive"), {"rmse": 12.9}, {"rmse": 13.0}, True),
        (_lower(reference="naive"), {"rmse": 13.1}, {"rmse": 13.0}, False),
    ],
)
def test_decide_first_champion_must_beat_the_declared_reference(
    declaration: EvaluationDeclaration,
    candidate: dict[str, float],
    reference: dict[str, float],
    beats: bool,
) -> None:
    (name,) = declaration.references
    decision = decide(candidate, None, declaration, references={name: reference})
    assert decision.is_better is beats
    if not beats:
        assert f"does not beat reference {name!r}" in decision.reason
    assert decision.reference_metrics == {name: reference}


def test_decide_refuses_a_declared_reference_the_metrics_file_lacks() -> None:
    with pytest.raises(ValueError, match=r"reference 'usual' is not in the metrics file"):
        decide({"score": 0.5}, None, _rule(reference="usual"), references={"popularity": {}})


def test_decide_force_overrides_rule_and_keeps_its_reason() -> None:
    worse = decide(
        {"score": 0.1}, {"score": 0.5}, _rule(), force="better", force_reason="rollback drill"
    )
    assert worse.is_better and "forced to 'better' (rollback drill)" in worse.reason
    assert worse.override == {
        "decision": "better",
        "reason": "rollback drill",
        "rule_said": worse.override["rule_said"],
    }
    assert "promotion needs an improvement of more than" in worse.override["rule_said"]
    assert worse.evidence()["override"]["reason"] == "rollback drill"
    kept = decide({"score": 0.9}, {"score": 0.1}, _rule(), force="worse", force_reason="freeze")
    assert not kept.is_better and kept.override["decision"] == "worse"
    assert decide({"score": 0.9}, {"score": 0.1}, _rule()).override == {}


@pytest.mark.parametrize("reason", ["", "   "])
def test_decide_force_without_a_reason_is_refused(reason: str) -> None:
    with pytest.raises(ValueError, match="give force_reason"):
        decide({"score": 0.1}, {"score": 0.5}, _rule(), force="better", force_reason=reason)


def test_decide_strongest_of_several_references_is_the_bar() -> None:
    declaration = _rule(reference=["usual", "popularity", "recent"])
    references = {"usual": {"score": 0.5}, "popularity": {"score": 0.2}, "recent": {"score": 0.6}}
    assert strongest_reference(declaration, references) == "recent"
    below = decide({"score": 0.55}, None, declaration, references=references)
    assert not below.is_better and below.reference == "recent"
    assert "does not beat reference 'recent' (the strongest declared)" in below.reason
    assert decide({"score": 0.61}, None, declaration, references=references).is_better
    lower = _lower(reference=["naive", "mean"])
    assert strongest_reference(lower, {"naive": {"rmse": 3.0}, "mean": {"rmse": 2.0}}) == "mean"


def test_decide_not_comparable_champion_leaves_the_decision_to_floors_and_references() -> None:
    note = "not comparable: the gate period lies in the champion's training window"
    decision = decide(
        {"score": 0.3},
        None,
        _rule(reference="popularity"),
        references={"popularity": {"score": 0.2}},
        champion_comparison=note,
    )
    assert decision.is_better and decision.reason.startswith(note)
    assert decision.champion_comparison == note
    nothing = decide({"score": 0.3}, None, _rule(), champion_comparison=note)
    assert not nothing.is_better and "no comparable champion and nothing to beat" in nothing.reason


def _interval(other: str, low: float, high: float) -> Interval:
    return Interval(other, (low + high) / 2, low, high, 0.95, 1000, 50)


@pytest.mark.parametrize(
    ("low", "require", "better"),
    [
        (-0.01, False, True),  # the point estimate decides; the interval is shown
        (-0.01, True, False),  # the bound must exceed min_improvement
        (0.0, True, False),  # a bound of exactly min_improvement is not more than it
        (0.001, True, True),
    ],
)
def test_decide_confidence_require_takes_the_gain_at_the_intervals_bound(
    low: float, require: bool, better: bool
) -> None:
    declaration = _rule(confidence={"require": require})
    intervals = {"champion": _interval("champion", low, 0.05)}
    decision = decide({"score": 0.32}, {"score": 0.30}, declaration, intervals=intervals)
    assert decision.is_better is better
    assert "95% interval" in decision.reason
    if require and not better:
        assert "at the interval's worst only by" in decision.reason


def test_decide_confidence_require_on_a_lower_metric_reads_the_upper_bound() -> None:
    declaration = _lower(confidence={"require": True})
    # candidate - champion in RMSE: [-0.5, +0.1] still allows a worse candidate.
    unsure = {"champion": _interval("champion", -0.5, 0.1)}
    assert not decide({"rmse": 9.8}, {"rmse": 10.0}, declaration, intervals=unsure).is_better
    sure = {"champion": _interval("champion", -0.5, -0.1)}
    assert decide({"rmse": 9.8}, {"rmse": 10.0}, declaration, intervals=sure).is_better


def test_decide_confidence_require_applies_to_the_reference_too() -> None:
    declaration = _rule(reference="popularity", confidence={"require": True})
    references = {"popularity": {"score": 0.2}}
    unsure = {"reference:popularity": _interval("reference:popularity", -0.01, 0.2)}
    refused = decide({"score": 0.3}, None, declaration, references=references, intervals=unsure)
    assert not refused.is_better and "does not exclude 0" in refused.reason
    with pytest.raises(ValueError, match="requires a confidence interval"):
        decide({"score": 0.3}, None, declaration, references=references)


@pytest.mark.parametrize(
    ("candidate", "champion", "declaration", "message"),
    [
        ({"other": 0.1}, None, _rule(), "has no metric 'score'"),
        ({"score": math.nan}, None, _rule(), "finite"),
        ({"score": 0.1}, {"other": 0.1}, _rule(), "champion has no metric"),
        # A misspelt guardrail fails the first run, not the run it would have decided.
        ({"score": 0.5}, None, _rule(guardrails={"other": 0.1}), "has no metric 'other'"),
        ({"score": 0.5}, None, _rule(floors={"other": 0.1}), "has no metric 'other'"),
    ],
)
def test_decide_missing_or_invalid_metric_is_clear(
    candidate: dict[str, float],
    champion: dict[str, float] | None,
    declaration: EvaluationDeclaration,
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        decide(candidate, champion, declaration)


def test_decide_unknown_force_value_is_refused() -> None:
    with pytest.raises(ValueError, match="force_decision"):
        decide({"score": 0.1}, None, _rule(), force="maybe")


def test_decision_reported_metrics_are_prefixed_by_role_and_reference() -> None:
    decision = decide(
        {"score": 0.4},
        {"score": 0.3},
        _rule(),
        references={"seasonal_naive": {"score": 0.2}},
        intervals={"reference:seasonal_naive": _interval("reference:seasonal_naive", 0.1, 0.3)},
    )
    assert decision.reported_metrics() == {
        "candidate_score": 0.4,
        "champion_score": 0.3,
        "reference_seasonal_naive_score": 0.2,
        "interval_reference_seasonal_naive_point": 0.2,
        "interval_reference_seasonal_naive_low": 0.1,
        "interval_reference_seasonal_naive_high": 0.3,
        "is_better": 1.0,
    }
    evidence = decision.evidence()
    assert evidence["intervals"]["reference:seasonal_naive"]["low"] == 0.1
    assert evidence["champion_comparison"] == "compared"


def test_decide_reason_shows_the_interval_as_improvements_and_whether_it_includes_0() -> None:
    declaration = _lower()
    # candidate - champion in RMSE: [-0.5, +0.1]; as improvements: [-0.1, +0.5], includes 0.
    unsure = {"champion": _interval("champion", -0.5, 0.1)}
    reason = decide({"rmse": 9.8}, {"rmse": 10.0}, declaration, intervals=unsure).reason
    assert "rmse (lower is better) improved by +0.2000" in reason
    assert "95% interval of the improvement -0.1000 to +0.5000, includes 0" in reason
    sure = {"champion": _interval("champion", -0.5, -0.1)}
    reason = decide({"rmse": 9.8}, {"rmse": 10.0}, declaration, intervals=sure).reason
    assert "interval of the improvement +0.1000 to +0.5000," in reason
    assert "includes 0" not in reason
    worse = decide({"rmse": 10.2}, {"rmse": 10.0}, declaration, intervals=sure).reason
    assert "rmse (lower is better) did not improve (-0.2000)" in worse

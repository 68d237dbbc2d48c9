"""The champion/challenger rule, as the evaluation declaration states it, in both directions."""

from __future__ import annotations

import math
from typing import Any

import pytest

from vertex_retrain.contracts.evaluation_declaration import (
    EvaluationDeclaration,
    parse_evaluation_declaration,
)
from vertex_retrain.steps.decision import NO_CHAMPION_SCORE, decide


def _rule(**fields: Any) -> EvaluationDeclaration:
    return parse_evaluation_declaration(
        {"primary": "score", "metrics": {"score": "higher", "other": "higher"}, **fields}
    )


def _lower(**fields: Any) -> EvaluationDeclaration:
    return parse_evaluation_declaration(
        {"primary": "rmse", "metrics": {"rmse": "lower", "mae": "lower"}, **fields}
    )


def test_decide_without_champion_promotes_candidate() -> None:
    decision = decide({"score": 0.1}, None, _rule())
    assert decision.is_better
    assert decision.champion_score == NO_CHAMPION_SCORE
    assert "no champion" in decision.reason
    assert decision.rule["primary"] == "score"


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
        assert "promotion needs more than" in decision.reason


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
    name = str(declaration.reference)
    decision = decide(candidate, None, declaration, references={name: reference})
    assert decision.is_better is beats
    if not beats:
        assert f"does not beat reference {name!r}" in decision.reason
    assert decision.reference_metrics == {name: reference}


def test_decide_refuses_a_declared_reference_the_metrics_file_lacks() -> None:
    with pytest.raises(ValueError, match=r"reference 'usual' is not in the metrics file"):
        decide({"score": 0.5}, None, _rule(reference="usual"), references={"popularity": {}})


def test_decide_force_overrides_rule_and_says_so() -> None:
    worse = decide({"score": 0.1}, {"score": 0.5}, _rule(), force="better")
    assert worse.is_better and "forced" in worse.reason
    assert not decide({"score": 0.9}, None, _rule(), force="worse").is_better


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
        {"score": 0.4}, {"score": 0.3}, _rule(), references={"seasonal_naive": {"score": 0.2}}
    )
    assert decision.reported_metrics() == {
        "candidate_score": 0.4,
        "champion_score": 0.3,
        "reference_seasonal_naive_score": 0.2,
        "is_better": 1.0,
    }

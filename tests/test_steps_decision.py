"""The champion/challenger rule."""

from __future__ import annotations

import math

import pytest

from vertex_retrain.steps.decision import NO_CHAMPION_SCORE, decide


def test_decide_without_champion_promotes_candidate() -> None:
    decision = decide({"ndcg_at_10": 0.1}, None, primary_metric="ndcg_at_10")
    assert decision.is_better
    assert decision.champion_score == NO_CHAMPION_SCORE
    assert "no champion" in decision.reason


def test_decide_requires_minimum_improvement() -> None:
    candidate, champion = {"ndcg_at_10": 0.305}, {"ndcg_at_10": 0.30}
    assert decide(candidate, champion, primary_metric="ndcg_at_10", min_improvement=0.0).is_better
    refused = decide(candidate, champion, primary_metric="ndcg_at_10", min_improvement=0.01)
    assert not refused.is_better
    assert "+0.0050" in refused.reason and "+0.0100" in refused.reason


def test_decide_tie_keeps_champion() -> None:
    decision = decide({"ndcg_at_10": 0.3}, {"ndcg_at_10": 0.3}, primary_metric="ndcg_at_10")
    assert not decision.is_better


def test_decide_guardrail_regression_blocks_promotion() -> None:
    candidate = {"ndcg_at_10": 0.40, "recall_at_10": 0.50}
    champion = {"ndcg_at_10": 0.30, "recall_at_10": 0.60}
    decision = decide(
        candidate, champion, primary_metric="ndcg_at_10", guardrails={"recall_at_10": 0.05}
    )
    assert not decision.is_better
    assert "recall_at_10" in decision.reason
    allowed = decide(
        candidate, champion, primary_metric="ndcg_at_10", guardrails={"recall_at_10": 0.2}
    )
    assert allowed.is_better


def test_decide_force_overrides_rule_and_says_so() -> None:
    worse = decide(
        {"ndcg_at_10": 0.1}, {"ndcg_at_10": 0.5}, primary_metric="ndcg_at_10", force="better"
    )
    assert worse.is_better and "forced" in worse.reason
    better = decide({"ndcg_at_10": 0.9}, None, primary_metric="ndcg_at_10", force="worse")
    assert not better.is_better


@pytest.mark.parametrize(
    ("candidate", "champion", "message"),
    [
        ({"recall_at_10": 0.1}, None, "has no metric 'ndcg_at_10'"),
        ({"ndcg_at_10": math.nan}, None, "finite"),
        ({"ndcg_at_10": 0.1}, {"recall_at_10": 0.1}, "champion has no metric"),
    ],
)
def test_decide_missing_or_invalid_metric_is_clear(
    candidate: dict, champion: dict | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        decide(candidate, champion, primary_metric="ndcg_at_10")


def test_decide_unknown_force_value_is_refused() -> None:
    with pytest.raises(ValueError, match="force_decision"):
        decide({"ndcg_at_10": 0.1}, None, primary_metric="ndcg_at_10", force="maybe")


def test_decision_reported_metrics_are_prefixed() -> None:
    decision = decide({"ndcg_at_10": 0.4}, {"ndcg_at_10": 0.3}, primary_metric="ndcg_at_10")
    reported = decision.reported_metrics()
    assert reported["candidate_ndcg_at_10"] == 0.4
    assert reported["champion_ndcg_at_10"] == 0.3
    assert reported["is_better"] == 1.0


def test_decide_checks_guardrail_names_even_without_champion() -> None:
    with pytest.raises(ValueError, match="recal_at_10"):
        decide({"ndcg_at_10": 0.5}, None, primary_metric="ndcg_at_10",
               guardrails={"recal_at_10": 0.01})  # fmt: skip


@pytest.mark.parametrize(
    ("min_improvement", "guardrails", "message"),
    [
        (math.nan, {}, "min_improvement"),
        (0.0, {"recall_at_10": -0.1}, "guardrail 'recall_at_10'"),
        (0.0, {"recall_at_10": math.inf}, "guardrail 'recall_at_10'"),
    ],
)
def test_decide_refuses_a_rule_that_cannot_decide(
    min_improvement: float, guardrails: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        decide(
            {"ndcg_at_10": 0.5, "recall_at_10": 0.5},
            {"ndcg_at_10": 0.6, "recall_at_10": 0.5},
            primary_metric="ndcg_at_10",
            min_improvement=min_improvement,
            guardrails=guardrails,
        )


def test_decide_minimum_blocks_a_candidate_that_does_not_beat_usual() -> None:
    floor = {"ndcg_at_10_usual_margin": 0.0}
    losing = {"ndcg_at_10": 0.7, "ndcg_at_10_usual_margin": -0.01}
    winning = {"ndcg_at_10": 0.7, "ndcg_at_10_usual_margin": 0.03}
    first = decide(losing, None, primary_metric="ndcg_at_10", minimums=floor)
    assert not first.is_better and "ndcg_at_10_usual_margin is -0.0100" in first.reason
    assert first.champion_score == NO_CHAMPION_SCORE
    better = decide(losing, {"ndcg_at_10": 0.5}, primary_metric="ndcg_at_10", minimums=floor)
    assert not better.is_better and better.champion_score == 0.5
    assert decide(winning, None, primary_metric="ndcg_at_10", minimums=floor).is_better
    assert decide(winning, {"ndcg_at_10": 0.5}, primary_metric="ndcg_at_10",
                  minimums=floor).is_better  # fmt: skip


@pytest.mark.parametrize(
    ("minimums", "message"),
    [({"usual_margin": 0.0}, "no metric 'usual_margin'"), ({"ndcg_at_10": math.nan}, "minimum")],
)
def test_decide_refuses_a_minimum_it_cannot_check(minimums: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decide({"ndcg_at_10": 0.5}, None, primary_metric="ndcg_at_10", minimums=minimums)

"""``history``'s cost column: the price of the strategy the job ran with, none for a run that
trained nothing, the fallback's total when Spot fell back."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.cli.history_command import history_row
from vertex_retrain.run_record import record_from_summary

COST = {"assumed_training_hours": 2.0, "on_demand": 1.68, "spot": 0.71, "currency": "USD"}


def _facts(**changes: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "pipeline_run": "r",
        "state": "SUCCEEDED",
        "data_window": {"as_of": "2026-11-23"},
        "training": {"goodput": 1.0},
        "cost_on_vertex": dict(COST),
    }
    facts.update(changes)
    return facts


def _cost(facts: dict[str, Any]) -> str | None:
    record = record_from_summary(facts, model="m", backend="local")
    return history_row(record)["cost"]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [("SPOT", "0.71 USD"), ("STANDARD", "1.68 USD"), ("FLEX_START", "1.68 USD")],
)
def test_history_cost_is_the_plan_of_the_jobs_strategy(strategy: str, expected: str) -> None:
    facts = _facts(cost_on_vertex={**COST, "scheduling_strategy": strategy})
    assert _cost(facts) == expected


def test_history_cost_of_a_record_without_a_strategy_is_the_spot_plan() -> None:
    # Records written before the strategy was kept.
    assert _cost(_facts()) == "0.71 USD"


def test_history_cost_is_none_for_a_run_that_trained_nothing() -> None:
    stopped = _facts(data_gate={"passed": False, "verdict": "stopped"})
    del stopped["training"]
    record = record_from_summary(stopped, model="m", backend="local")
    assert record.cost["trained"] is False
    assert history_row(record)["cost"] is None


def test_history_cost_after_a_fallback_is_the_total_marked() -> None:
    facts = _facts(spot_fallback={"total_cost": 0.775, "currency": "USD"})
    assert _cost(facts) == "0.78 USD*"


def test_summary_cost_names_the_strategy_it_priced() -> None:
    from vertex_retrain.steps.summary import build_summary

    facts = build_summary(
        {},
        run_name="r",
        state="SUCCEEDED",
        error_message="",
        job_shape={"scheduling_strategy": "STANDARD"},
        expected_training_hours=1.0,
    )
    assert facts["cost_on_vertex"]["scheduling_strategy"] == "STANDARD"

"""``plan_training``: each week's whole plan (kind, reason, arguments, both label sets), each
reason for a full retrain on both sides of its rule."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.rules.warm_start import (
    FULL_AS_OF_LABEL,
    KIND_LABEL,
    TrainingPlan,
    plan_training,
)

WEEK = "2026-03-30"
CHAMPION = "gs://b/models/v7"
FULL_LABELS = {KIND_LABEL: "full", FULL_AS_OF_LABEL: WEEK}


def _plan(**changes: Any) -> TrainingPlan:
    arguments: dict[str, Any] = {
        "as_of": WEEK,
        "warm_start": True,
        "full_retrain_every_weeks": 4,
        "flag": "--warm_start_from",
        "champion_uri": CHAMPION,
        "champion_labels": {"data_as_of": "2026-03-23", FULL_AS_OF_LABEL: "2026-03-09"},
    }
    arguments.update(changes)
    return plan_training(**arguments)


def _full(reason: str) -> TrainingPlan:
    return TrainingPlan("full", reason, [], FULL_LABELS, FULL_LABELS)


def test_plan_training_warm_start_is_the_whole_plan() -> None:
    assert _plan() == TrainingPlan(
        "warm",
        f"warm start from the champion ({CHAMPION}); last full retrain 3 weeks ago (2026-03-09)",
        [f"--warm_start_from={CHAMPION}"],
        {KIND_LABEL: "warm", FULL_AS_OF_LABEL: "2026-03-09"},
        FULL_LABELS,
    )


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"warm_start": False}, "full retrain: warm_start is off"),
        (
            {"flag": ""},
            "full retrain: the trainer declares no warm start ([tool.vertex-retrain] "
            "warm-start-flag in its pyproject.toml)",
        ),
        ({"tune": True}, "full retrain: the week tunes hyperparameters, which the champion lacks"),
        ({"champion_uri": None}, "full retrain: there is no champion to start from"),
        (
            {"full_retrain_every_weeks": 1},
            "full retrain: full_retrain_every_weeks is 1 (every week)",
        ),
        (
            {"champion_labels": {"data_as_of": "2026-03-31", FULL_AS_OF_LABEL: "2026-03-09"}},
            "full retrain: the champion learned from data up to 2026-03-31, after this week "
            f"({WEEK}): a replay starts afresh",
        ),
        (
            {"champion_labels": {"data_as_of": "2026-03-23"}},
            f"full retrain: the champion records no last full retrain ({FULL_AS_OF_LABEL} label)",
        ),
        (
            {"champion_labels": {FULL_AS_OF_LABEL: "2026-03-02"}},
            "full retrain: due every 4 weeks, the last was 4 weeks ago (2026-03-02)",
        ),
    ],
)
def test_plan_training_full_retrain_is_the_whole_plan_with_its_reason(
    changes: dict[str, Any], reason: str
) -> None:
    assert _plan(**changes) == _full(reason)


def test_plan_training_champion_of_this_very_week_still_warm_starts() -> None:
    # Its data ends on as_of itself (a re-run of the week): not after it, so no replay.
    plan = _plan(champion_labels={"data_as_of": WEEK, FULL_AS_OF_LABEL: "2026-03-09"})
    assert plan.kind == "warm"


def test_plan_training_champion_without_a_data_label_warm_starts() -> None:
    plan = _plan(champion_labels={FULL_AS_OF_LABEL: "2026-03-09"})
    assert plan.kind == "warm"
    assert plan.labels == {KIND_LABEL: "warm", FULL_AS_OF_LABEL: "2026-03-09"}


@pytest.mark.parametrize(("every", "kind"), [(0, "warm"), (2, "full"), (3, "full"), (4, "warm")])
def test_plan_training_due_after_exactly_every_weeks(every: int, kind: str) -> None:
    # The last full retrain was 3 weeks before the week: due when every <= 3 (0: never due).
    assert _plan(full_retrain_every_weeks=every).kind == kind


@pytest.mark.parametrize("flag", ["--warm start", "-w", "--w=1", 3])
def test_declared_flag_refuses_what_is_not_one_flag_naming_the_field(flag: object) -> None:
    from vertex_retrain.rules.warm_start import declared_flag

    text = f"[tool.vertex-retrain]\nwarm-start-flag = {flag!r}\n".replace("'", '"')
    with pytest.raises(ValueError) as raised:
        declared_flag(text)
    assert str(raised.value) == (
        f"pyproject.toml: [tool.vertex-retrain] warm-start-flag is {flag!r}; expected a flag "
        "such as '--warm_start_from' (the trainer gets --flag=<champion model folder>)"
    )


def test_declared_flag_refuses_a_file_that_is_not_toml() -> None:
    from vertex_retrain.rules.warm_start import declared_flag

    with pytest.raises(ValueError, match=r"^pyproject.toml: not valid TOML \(.+\)$"):
        declared_flag("[tool\n")
    assert declared_flag("") == "" and declared_flag(None) == ""

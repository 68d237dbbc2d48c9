"""A champion is judged on a gate period only when it did not train on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vertex_retrain.steps.champion_window import champion_window
from vertex_retrain.steps.evaluate import judge_window

TRAINED = {"data_from": "2026-01-05", "data_gate_from": "2026-03-02", "data_as_of": "2026-03-09"}


def _manifest(*periods: str, period: str = "week") -> dict:
    return {"period": period, "gate": {"periods": list(periods), "files": [], "rows": 1}}


@pytest.mark.parametrize(
    ("gate", "comparable"),
    [
        ("2026-03-02", True),  # the champion's own gate week: it never trained on it
        ("2026-03-09", True),  # the week after
        ("2026-02-23", False),  # its last selection week: it chose on it
        ("2026-01-05", False),  # its first week
        ("2025-12-29", True),  # the week before its window began
    ],
)
def test_champion_window_refuses_a_gate_period_inside_the_training_window(
    gate: str, comparable: bool
) -> None:
    verdict = champion_window(TRAINED, _manifest(gate))
    assert verdict.comparable is comparable
    if not comparable:
        assert verdict.note.startswith("not comparable: the gate period")
        assert "(2026-01-05 to 2026-03-01)" in verdict.note


def test_champion_window_counts_every_day_of_a_multi_period_gate() -> None:
    days = [f"2026-03-0{d}" for d in range(1, 8)]  # a daily gate ending in the window's end
    assert not champion_window(TRAINED, _manifest(*days, period="day")).comparable
    assert champion_window(TRAINED, _manifest(*days[1:], period="day")).comparable


def test_champion_window_falls_back_to_as_of_and_says_when_it_knows_nothing() -> None:
    older = {"data_from": "2026-01-05", "data_as_of": "2026-03-09"}  # before data_gate_from
    assert not champion_window(older, _manifest("2026-03-02")).comparable
    unknown = champion_window({}, _manifest("2026-03-02"))
    assert unknown.comparable and "not recorded" in unknown.note
    with pytest.raises(ValueError, match="names no gate period"):
        champion_window(TRAINED, {"period": "week", "train": {}})


def test_judge_window_compares_when_the_dataset_has_no_manifest(tmp_path: Path) -> None:
    verdict = judge_window("local", str(tmp_path), TRAINED)
    assert verdict.comparable and "no manifest naming a gate period" in verdict.note
    (tmp_path / "manifest.json").write_text(json.dumps(_manifest("2026-02-23")))
    assert not judge_window("local", str(tmp_path), TRAINED).comparable


@pytest.mark.parametrize(
    ("labels", "gate", "keeps"),
    [
        (TRAINED, "2026-02-23", True),  # replaying an earlier week: the champion saw later data
        ({"data_from": "2026-01-05", "data_as_of": "2026-03-09"}, "2026-03-02", False),
        ({"data_from": "2026-01-05", "data_as_of": "2026-03-09"}, "2026-02-23", True),
        ({"data_from": "2026-01-05", "data_gate_from": "2026-03-02"}, "2026-02-23", False),
    ],
    ids=["earlier-week", "same-end", "one-week-earlier", "end-unknown"],
)
def test_champion_window_keeps_a_champion_that_learned_from_later_data(
    labels: dict[str, str], gate: str, keeps: bool
) -> None:
    verdict = champion_window(labels, _manifest(gate))
    assert not verdict.comparable
    assert verdict.keeps_champion is keeps
    assert ("so the replay does not replace it" in verdict.note) is keeps
    if keeps:
        assert "learned from data up to 2026-03-08, after this run's window" in verdict.note


def test_decide_keeps_the_champion_of_later_data_unless_forced() -> None:
    from vertex_retrain.contracts.evaluation_declaration import parse_evaluation_declaration
    from vertex_retrain.steps.decision import decide

    declaration = parse_evaluation_declaration(
        {"primary": "ndcg", "metrics": {"ndcg": "higher"}, "reference": "usual"}
    )
    arguments = {
        "references": {"usual": {"ndcg": 0.4}},
        "champion_comparison": "not comparable: ... so the replay does not replace it",
    }
    kept = decide({"ndcg": 0.6}, None, declaration, keep_champion=True, **arguments)
    assert not kept.is_better
    assert kept.reason == "not comparable: ... so the replay does not replace it"
    taken = decide({"ndcg": 0.6}, None, declaration, **arguments)
    assert taken.is_better  # without the later champion, the floors and references decide
    forced = decide({"ndcg": 0.6}, None, declaration, keep_champion=True, force="better",
                    force_reason="roll back on purpose", **arguments)  # fmt: skip
    assert forced.is_better and forced.override["reason"] == "roll back on purpose"
    below = decide({"ndcg": 0.3}, None, declaration, keep_champion=True, **arguments)
    assert not below.is_better and "usual" in below.reason  # the reference refuses it first

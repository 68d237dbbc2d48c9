"""Which run of a week `history` shows: the one that decided it, re-runs since as notes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.cli.history_weeks import later_run_note, rows_of_weeks, standing
from vertex_retrain.cli.main import main
from vertex_retrain.run_record import RunRecord, decision_word

WEEK = "2026-11-16"
RULE = {"primary": "score", "metrics": {"score": "higher"}}


def _run(run: str, at: str, *, as_of: str = WEEK, **changes: Any) -> RunRecord:
    """A run of the week, recorded at ``at`` (hh:mm of the week's Monday)."""
    fields: dict[str, Any] = {"state": "SUCCEEDED", **changes}
    return RunRecord(
        run=run,
        model="m",
        backend="local",
        recorded_at=f"{WEEK}T{at}:00+00:00",
        as_of=as_of,
        **fields,
    )


def _decided(run: str, at: str, is_better: bool = True, **changes: Any) -> RunRecord:
    decision = {"is_better": is_better, "reason": "score improved", "primary_metric": "score"}
    return _run(run, at, decision=decision, **{"candidate": {"score": 0.6}, **changes})


def _itself(run: str, at: str) -> RunRecord:
    """A re-run whose candidate was the champion (version 1) itself."""
    decision = {
        "is_better": False,
        "reason": "the candidate is the current champion (version 1): nothing to decide",
        "primary_metric": "score",
        "champion_comparison": "same model: version 1",
    }
    return _run(run, at, decision=decision, candidate={"score": 0.6}, champion={"score": 0.6})


def _cancelled(run: str, at: str) -> RunRecord:
    error = "interrupted at step train-custom-job; nothing after it ran"
    return _run(run, at, state="CANCELLED", error=error)


def _history(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["history", "m", "--no-plot", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_decision_word_says_unchanged_when_the_candidate_was_the_champion() -> None:
    assert decision_word(_itself("r", "10:00").decision) == "unchanged"
    assert decision_word(_decided("r", "10:00", is_better=False).decision) == "challenger"
    assert decision_word(_cancelled("r", "10:00").decision) == ""
    runs = (_itself("a", "1"), _decided("b", "2", is_better=False), _decided("c", "3"))
    assert [standing(r) for r in runs] == [0, 1, 2]
    assert _itself("r", "10:00").experiment_params()["decision"] == "unchanged"


def test_rows_of_weeks_keep_the_deciding_run_and_note_a_later_cancelled_one() -> None:
    done, cancelled = _decided("r1", "10:00"), _cancelled("r2", "11:00")
    (row,) = rows_of_weeks([done, cancelled])
    assert (row.record, row.later, row.earlier) == (done, (cancelled,), 0)
    assert later_run_note(cancelled) == (
        "re-run r2: cancelled: interrupted at step train-custom-job; nothing after it ran"
    )


def test_rows_of_weeks_a_rerun_of_the_champion_itself_does_not_decide_the_week() -> None:
    promoted, again = _decided("r1", "10:00"), _itself("r2", "11:00")
    (row,) = rows_of_weeks([promoted, again])
    assert row.record == promoted and row.later == (again,)
    assert later_run_note(again) == (
        "re-run r2: the candidate is the current champion (version 1): nothing to decide"
    )


def test_rows_of_weeks_a_later_promotion_replaces_the_earlier_runs() -> None:
    failed, refused, promoted = (
        _run("r1", "09:00", state="FAILED", error="boom\nstack"),
        _decided("r2", "10:00", is_better=False),
        _decided("r3", "11:00"),
    )
    (row,) = rows_of_weeks([failed, refused, promoted])
    assert (row.record, row.later, row.earlier) == (promoted, (), 2)
    assert later_run_note(failed) == "re-run r1: failed: boom"  # the first line only
    again = _decided("r4", "12:00")  # another promotion (a forced drill): the week's latest
    assert rows_of_weeks([failed, refused, promoted, again])[0].record == again


def test_rows_of_weeks_a_refused_rerun_does_not_hide_the_weeks_promotion() -> None:
    promoted, refused = _decided("r1", "10:00"), _decided("r2", "11:00", is_better=False)
    (row,) = rows_of_weeks([promoted, refused])
    assert (row.record, row.later) == (promoted, (refused,))
    assert later_run_note(refused) == "re-run r2: challenger: score improved"
    other_candidate = _decided("r0", "09:00", is_better=False, candidate={"score": 0.5})
    (latest,) = rows_of_weeks([other_candidate, refused])
    assert (latest.record, latest.earlier) == (refused, 1)  # no promotion: the latest refusal


def test_rows_of_weeks_a_repeated_refusal_leaves_the_first_one_standing() -> None:
    first = _decided("r1", "10:00", is_better=False, cost={"spot_plan": 0.7})
    again = _decided("r2", "11:00", is_better=False, cost={"spot_plan": 0.0})  # from the cache
    (row,) = rows_of_weeks([first, again])
    assert (row.record, row.later, row.earlier) == (first, (again,), 0)
    assert later_run_note(again) == "re-run r2: challenger: score improved"
    other_reason = replace(again, decision={**again.decision, "reason": "below the floor"})
    assert rows_of_weeks([first, other_reason])[0].record == other_reason
    other_candidate = replace(again, candidate={"score": 0.61})
    assert rows_of_weeks([first, other_candidate])[0].record == other_candidate
    promoted_again = (_decided("p1", "10:00"), _decided("p2", "11:00"))
    assert rows_of_weeks(list(promoted_again))[0].record.run == "p2"  # a promotion moves aliases


def test_rows_of_weeks_without_a_decision_show_the_latest_run() -> None:
    gated = _run("r1", "10:00", data={"passed": False})
    (row,) = rows_of_weeks([gated, _cancelled("r2", "11:00")])
    assert (row.record.run, row.later, row.earlier) == ("r2", (), 1)
    assert later_run_note(gated) == "re-run r1: stopped by the data gate"
    (only,) = rows_of_weeks([_itself("r3", "12:00")])  # nothing else of the week on record
    assert only.record.run == "r3"


def test_rows_of_weeks_break_a_tie_by_run_name_and_keep_weekless_runs() -> None:
    same_time = [_decided("b", "10:00"), _decided("a", "10:00")]
    assert [row.record.run for row in rows_of_weeks(same_time)] == ["b"]
    weekless = [_run("x", "10:00", as_of=""), _run("y", "10:00", as_of="")]
    assert [row.record.run for row in rows_of_weeks(weekless)] == ["x", "y"]
    other_week = _decided("z", "09:00", as_of="2026-11-23")
    rows = rows_of_weeks([_decided("a", "10:00"), other_week, _cancelled("c", "11:00")])
    assert [(row.record.run, len(row.later)) for row in rows] == [("a", 1), ("z", 0)]


def test_later_run_note_is_bounded() -> None:
    note = later_run_note(_run("r", "10:00", state="FAILED", error="x" * 500))
    assert len(note) < 200 and note.endswith("...")


def test_history_marks_a_week_re_run_since_its_decision_and_notes_each_re_run(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = RunHistory()
    for record in (_decided("r1", "10:00"), _itself("r2", "11:00"), _cancelled("r3", "12:00")):
        history.record(record)
    lines = _history(capsys)
    assert lines[0].endswith(", + = re-run since, promoting nothing (below)")
    assert lines[2].split()[:2] == [WEEK, "champion+"]
    assert lines[3:] == [
        f"{WEEK}: re-run r2: the candidate is the current champion (version 1): nothing to decide",
        f"{WEEK}: re-run r3: cancelled: interrupted at step train-custom-job; nothing after it ran",
    ]
    documented = (Path(__file__).parent.parent / "docs" / "operations.md").read_text()
    assert "\n".join(lines) + "\n" in documented  # the example of docs/operations.md
    every = _history(capsys, "--all-runs")
    assert [line.split()[1] for line in every[2:]] == ["champion", "unchanged", "CANCELLED"]
    assert "+ = re-run" not in every[0]
    (shown,) = json.loads("\n".join(_history(capsys, "--json")))
    assert shown["run"] == "r1"
    assert [(r["run"], r["state"]) for r in shown["later_runs"]] == [
        ("r2", "SUCCEEDED"),
        ("r3", "CANCELLED"),
    ]
    assert shown["later_runs"][1]["note"].startswith("re-run r3: cancelled: interrupted")
    assert len(json.loads("\n".join(_history(capsys, "--json", "--all-runs")))) == 3


def test_history_notes_are_printable(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = RunHistory()
    history.record(_decided("r1", "10:00"))
    history.record(replace(_cancelled("r2", "11:00"), error="\x1b[31mred\x1b[0m"))
    note = _history(capsys)[-1]
    assert "\x1b" not in note and note.startswith(f"{WEEK}: re-run r2: cancelled: ")

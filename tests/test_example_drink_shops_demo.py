"""``make demo``'s plan (examples/drink_shops/demo.py): the first demo runs the newest week and
the one appended after it; another demo runs only the next week, never one already on record.

The pipeline runs are faked here (a demo week takes about half a minute): these tests hold the
plan, and `make demo` itself runs the weeks.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, example_module
from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.run_record import RunRecord

DEMO = example_module(DRINK_SHOPS, "demo")
NEWEST = "2023-07-03"
ANNOUNCED = "as_of not given: this local run replays the newest period of its data, as_of="


@pytest.fixture
def ran(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    """The weeks the demo ran, as (number, as_of); data generation and appends succeed."""
    runs: list[tuple[int, str]] = []

    def run_week(pipeline: Any, arguments: dict[str, Any], number: int, out: Any) -> Any:
        runs.append((number, str(arguments["as_of"])))
        outcome = SimpleNamespace(
            succeeded=True, summary=None, wall_seconds=1.0, log_path="log", run_dir=root
        )
        return DEMO.DemoWeek(number, dict(arguments), outcome)

    monkeypatch.setattr(DEMO, "run_week", run_week)
    monkeypatch.setattr(DEMO, "ensure_data", lambda uri, out: True)
    monkeypatch.setattr(DEMO, "append_week", lambda uri, out: True)

    def newest_week(arguments: dict[str, Any], out: Any) -> dict[str, Any]:
        print(f"{ANNOUNCED}{NEWEST} (newest row ...)", file=out)  # as the local runner says
        return {**arguments, "as_of": NEWEST}

    monkeypatch.setattr("vertex_retrain.cli.run_window.with_local_as_of", newest_week)
    return runs


def _record(as_of: str, state: str) -> None:
    chain = DEMO.load_pipelines()
    RunHistory().record(
        RunRecord(run=f"run-{as_of}-{state}", model=chain.MODEL, backend="local", state=state,
                  as_of=as_of)
    )  # fmt: skip


def test_demo_first_time_runs_the_newest_week_then_the_appended_one(
    ran: list[tuple[int, str]],
) -> None:
    out = io.StringIO()
    assert DEMO.main([], out=out) == 0
    assert ran == [(1, NEWEST), (2, "2023-07-10")]
    assert f"{ANNOUNCED}{NEWEST}" in out.getvalue()


def test_demo_again_runs_only_the_next_week(ran: list[tuple[int, str]]) -> None:
    _record(NEWEST, "SUCCEEDED")
    _record("2023-06-26", "SUCCEEDED")
    out = io.StringIO()
    assert DEMO.main([], out=out) == 0
    assert ran == [(3, "2023-07-10")]
    # The week it runs is the one it announces: never the newest week that ran already.
    assert ANNOUNCED not in out.getvalue()
    assert (
        f"the week before {NEWEST} (the newest of the data) ran already: the demo appends the "
        "next week and runs as_of=2023-07-10"
    ) in out.getvalue()


@pytest.mark.parametrize(
    ("done", "line"),
    [
        (set(), "CHOSEN"),
        ({"2023-06-26"}, "CHOSEN"),
        ({NEWEST}, f"the week before {NEWEST} (the newest of the data) ran already: the demo "
                   "appends the next week and runs as_of=2023-07-10"),
    ],
    ids=["first", "older-week-done", "newest-done"],
)  # fmt: skip
def test_demo_first_week_line_announces_the_week_that_runs(done: set[str], line: str) -> None:
    assert DEMO.first_week_line({"as_of": NEWEST}, done, "CHOSEN") == line


def test_demo_runs_the_newest_week_again_when_its_run_failed(
    ran: list[tuple[int, str]],
) -> None:
    _record(NEWEST, "FAILED")
    assert DEMO.main([], out=io.StringIO()) == 0
    assert ran == [(1, NEWEST), (2, "2023-07-10")]


@pytest.mark.parametrize(
    ("periods", "shown"),
    [
        (["2023-01-02", "2023-06-12"], "2023-01-02..2023-06-12"),
        (["2023-06-19"], "2023-06-19"),
        (["2023-06-19", "2023-06-19"], "2023-06-19"),
        ([], "-"),
        (None, "-"),
    ],
)
def test_demo_period_span_reads_as_a_range(periods: Any, shown: str) -> None:
    assert DEMO.period_span(periods) == shown

"""bench_weekly_warm: the verdicts on the warm-started week, and a full week never taken for one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_weekly_warm as ww  # noqa: E402
from bench.bench_weekly_seed import SEED_SCALE, WeeklyRun  # noqa: E402
from bench.figures import check_figure  # noqa: E402
from bench.report_plots import check_plot  # noqa: E402

WARM = {"kind": "warm", "planned": "warm", "reason": "warm start from champion version 1"}


def _run(wall: float, peak: int, kind: dict[str, str] | None) -> WeeklyRun:
    summary = {"training_kind": kind} if kind is not None else {}
    return WeeklyRun(wall, {"train-custom-job": wall / 2}, {}, peak, summary)


FULL = _run(1200.0, 3 * 10**9, {"kind": "full", "reason": "no champion yet"})


@pytest.mark.parametrize(
    ("wall", "peak", "met"),
    [
        (360.0, 4 * 10**9, True),  # both exactly on their limits
        (360.5, 10**9, False),
        (120.0, 4 * 10**9 + 1, False),
    ],
)
def test_warm_figure_judges_the_warm_week_on_both_limits(wall: float, peak: int, met: bool) -> None:
    result = ww.warm_figure(FULL, _run(wall, peak, WARM), SEED_SCALE, quick=False)
    check_figure(result)
    check_plot(result["plot"])
    assert result["met"] is met
    assert result["baseline"]["value"] == 1200.0 and result["measured"]["value"] == wall
    assert result["ratio"] == pytest.approx(wall / 1200.0)
    rows = {row[0]: row[1] for row in result["rows"]}
    assert rows["week 1 (full): training kind"] == "full"
    assert rows["week 2 (warm): why"] == "warm start from champion version 1"
    assert rows["week 2 (warm): peak RSS"] == pytest.approx(peak / 1e9)


def test_warm_figure_quick_has_no_verdict() -> None:
    result = ww.warm_figure(FULL, _run(60.0, 10**8, WARM), SEED_SCALE, quick=True)
    assert result["target"] is None and result["met"] is None
    assert result["notes"].startswith("Quick pass, no targets")


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ({"kind": "full", "reason": "the trainer declares no warm start"}, "trained full (the "),
        ({"kind": "warm+full", "reason": "refused"}, "trained warm+full (refused)"),
        (None, "trained with no training kind (no reason given)"),
    ],
)
def test_warm_figure_refuses_a_second_week_that_did_not_warm_start(
    kind: dict[str, str] | None, said: str
) -> None:
    with pytest.raises(RuntimeError, match=r"not warm-started") as caught:
        ww.warm_figure(FULL, _run(100.0, 10**9, kind), SEED_SCALE, quick=False)
    assert said in str(caught.value)


def test_training_kind_reads_the_run_summary() -> None:
    assert ww.training_kind({"training_kind": WARM}) == "warm"
    assert ww.training_kind({"training_kind": None}) == ""
    assert ww.training_kind({}) == ""


def test_warm_figure_lists_each_steps_peak_of_the_warm_week() -> None:
    peaks = {"train-custom-job": 3 * 10**9, "evaluate-model": 2 * 10**9, "orchestrator": 10**8,
             "register-model": 0}  # fmt: skip
    warm = WeeklyRun(300.0, {"train-custom-job": 150.0, "register-model": 0.1}, peaks, 10**9,
                     {"training_kind": WARM})  # fmt: skip
    rows = {row[0]: row[1] for row in ww.warm_figure(FULL, warm, SEED_SCALE, False)["rows"]}
    assert rows["week 2 train-custom-job: peak RSS"] == pytest.approx(3.0)
    assert rows["week 2 evaluate-model: peak RSS"] == pytest.approx(2.0)
    assert rows["week 2 orchestrator: peak RSS"] == pytest.approx(0.1)
    assert "week 2 register-model: peak RSS" not in rows  # ended before a sample: no figure

"""bench_warm_start: the per-week means over seeds and the two verdicts (time, quality)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_warm_start as bws  # noqa: E402


def _kind(wall: float, ndcg: float) -> dict[str, float]:
    return {"wall_seconds": wall, "loop_seconds": wall / 2, "peak_rss_gib": 1.0, "ndcg_at_10": ndcg}


def _seed(warm_wall: float, warm_ndcg: float) -> dict[str, Any]:
    weeks = [
        {"week": week, "full": _kind(10.0, 0.60), "warm": _kind(warm_wall, warm_ndcg)}
        for week in (1, 2)
    ]
    return {"seed": 0, "weeks": weeks}


def test_summarize_means_each_week_over_seeds() -> None:
    summary = bws.summarize([_seed(1.0, 0.60), _seed(3.0, 0.602)])
    week = summary["weeks"][0]
    assert week["warm_wall_seconds"] == pytest.approx(2.0)
    assert week["wall_ratio"] == pytest.approx(0.2)
    assert week["ndcg_gap"] == pytest.approx(0.001)
    assert summary["time_met"] and summary["quality_met"]


@pytest.mark.parametrize(
    ("warm_wall", "warm_ndcg", "time_met", "quality_met"),
    [(2.0, 0.6049, True, True), (2.1, 0.60, False, True), (1.0, 0.5949, True, False)],
)
def test_summarize_verdicts_at_their_bounds(
    warm_wall: float, warm_ndcg: float, time_met: bool, quality_met: bool
) -> None:
    summary = bws.summarize([_seed(warm_wall, warm_ndcg)])
    assert (summary["time_met"], summary["quality_met"]) == (time_met, quality_met)

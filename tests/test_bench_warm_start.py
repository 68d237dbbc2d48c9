"""bench_warm_start: the per-week means over seeds, the two verdicts (time, quality), and the
kept steps a stopped seed resumes from."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_warm_start as bws  # noqa: E402


def _kind(cpu: float, ndcg: float, wall: float | None = None) -> dict[str, float]:
    return {"wall_seconds": cpu if wall is None else wall, "cpu_seconds": cpu,
            "loop_seconds": cpu / 2, "peak_rss_gib": 1.0, "ndcg_at_10": ndcg}  # fmt: skip


def _seed(warm_cpu: float, warm_ndcg: float, warm_wall: float | None = None) -> dict[str, Any]:
    weeks = [
        {"week": week, "full": _kind(10.0, 0.60), "warm": _kind(warm_cpu, warm_ndcg, warm_wall)}
        for week in (1, 2)
    ]
    return {"seed": 0, "weeks": weeks}


def test_summarize_means_each_week_over_seeds() -> None:
    summary = bws.summarize([_seed(1.0, 0.60), _seed(3.0, 0.602)])
    week = summary["weeks"][0]
    assert week["warm_wall_seconds"] == pytest.approx(2.0)
    assert week["cpu_ratio"] == pytest.approx(0.2)
    assert week["ndcg_gap"] == pytest.approx(0.001)
    assert summary["time_met"] and summary["quality_met"]


@pytest.mark.parametrize(
    ("warm_cpu", "warm_ndcg", "time_met", "quality_met"),
    [(2.0, 0.6049, True, True), (2.1, 0.60, False, True), (1.0, 0.5949, True, False)],
)
def test_summarize_verdicts_at_their_bounds(
    warm_cpu: float, warm_ndcg: float, time_met: bool, quality_met: bool
) -> None:
    summary = bws.summarize([_seed(warm_cpu, warm_ndcg)])
    assert (summary["time_met"], summary["quality_met"]) == (time_met, quality_met)


@pytest.mark.parametrize(("warm_cpu", "warm_wall", "met"), [(2.0, 9.0, True), (2.1, 1.0, False)])
def test_summarize_time_verdict_reads_cpu_time_not_wall(
    warm_cpu: float, warm_wall: float, met: bool
) -> None:
    # A loaded machine stretches the wall time of a one-thread training, not its CPU time.
    assert bws.summarize([_seed(warm_cpu, 0.60, warm_wall)])["time_met"] is met


def test_kept_reuses_a_kept_step_without_running_it(tmp_path: Path) -> None:
    path = tmp_path / "step.json"
    assert bws._kept(path, lambda: {"ndcg_at_10": 0.5}) == {"ndcg_at_10": 0.5}

    def again() -> dict[str, Any]:
        raise AssertionError("a kept step ran again")

    assert bws._kept(path, again) == {"ndcg_at_10": 0.5}


def test_kept_keeps_nothing_from_a_step_that_stopped(tmp_path: Path) -> None:
    path = tmp_path / "step.json"

    def stopped() -> dict[str, Any]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bws._kept(path, stopped)
    assert not path.exists()


def _weeks(data: Path) -> int:
    return len(json.loads((data / "generation.json").read_text())["weeks"])


def test_week_split_appends_a_week_once_across_a_stop(tmp_path: Path) -> None:
    from trainer.data import generate
    from trainer.world import WorldConfig

    scale = {"members": 60, "stores": 5, "weeks": 6}
    data = tmp_path / "data"
    generate(WorldConfig(**scale, seed=2), data)
    manifest = tmp_path / "week1" / "manifest.json"
    bws._week_split(data, scale, 1, manifest)
    assert _weeks(data) == 7 and manifest.is_file()
    # Stopped after the append, before the split was written: the rerun splits, appends nothing.
    manifest.unlink()
    bws._week_split(data, scale, 1, manifest)
    assert _weeks(data) == 7 and manifest.is_file()
    bws._week_split(data, scale, 2, tmp_path / "week2" / "manifest.json")
    assert _weeks(data) == 8

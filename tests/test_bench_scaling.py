"""bench_scaling and bench.measure: the curve's verdict and plot, process-tree measurement."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_scaling as bs  # noqa: E402
from bench.figures import check_figure  # noqa: E402
from bench.measure import run_measured, tree_rss  # noqa: E402
from bench.report_plots import check_plot, draw_plot  # noqa: E402


def _fake_size(step_seconds: float) -> Any:
    def size(members: int, weeks: int, steps: int, scratch: Path) -> dict[str, Any]:
        rows = members * weeks
        return {
            "members": members,
            "rows": rows,
            "generate": {"seconds": 1.0 + rows / 1e6, "peak_rss_gib": 0.3},
            "prepare": {"seconds": 0.5 + rows / 1e7, "peak_rss_gib": 0.1},
            "train": {
                "seconds": 10.0,
                "peak_rss_gib": 0.5 + members / 1e6,
                "steps_seconds": step_seconds * (1 + members / 1e7),
                "startup_seconds": 3.0,
            },
            "evaluate": {"seconds": 2.0 + rows / 2e6, "peak_rss_gib": 0.4},
        }

    return size


def test_scaling_figure_judges_flat_training_and_plots_against_members(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(bs, "_size", _fake_size(5.0))
    result = bs.run(quick=False)
    check_figure(result)
    check_plot(result["plot"])
    assert result["met"] is True  # 1.05x the step time at 50x the members
    assert result["plot"]["x"] == list(bs.SIZES) and result["plot"]["log"] is True
    assert "train 1,000 steps time p = 0.01" in result["notes"]
    assert "Every curve, time and peak RSS, is linear or better" in result["notes"]
    assert "does not grow with the member table" in result["notes"]
    # 26 weeks: 50,000 members are 1.3 M member-weeks (one process), 100,000 are 2.6 M.
    assert "here between 50,000 and 100,000 members" in result["notes"]
    assert len(result["rows"]) == 10 * len(bs.SIZES)
    assert "prepare (s)" in result["plot"]["series"]
    assert "prepare peak RSS (GiB)" in result["plot"]["series"]
    draw_plot(result["plot"], result["name"], tmp_path / "curve.png")
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_scaling_figure_flags_training_that_slows_with_the_member_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def slowing(members: int, weeks: int, steps: int, scratch: Path) -> dict[str, Any]:
        result: dict[str, Any] = _fake_size(5.0)(members, weeks, steps, scratch)
        result["train"]["steps_seconds"] = 5.0 * members / 10_000  # dense updates: linear
        return result

    monkeypatch.setattr(bs, "_size", slowing)
    result = bs.run(quick=False)
    assert result["met"] is False
    assert "grows with the member table" in result["notes"]


def test_scaling_notes_name_each_curve_and_segment_worse_than_linear(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def quadratic_prepare(members: int, weeks: int, steps: int, scratch: Path) -> dict[str, Any]:
        result: dict[str, Any] = _fake_size(5.0)(members, weeks, steps, scratch)
        if members >= 100_000:  # only the last two segments bend upwards
            result["prepare"]["peak_rss_gib"] = (members / 50_000) ** 2
        return result

    monkeypatch.setattr(bs, "_size", quadratic_prepare)
    notes = bs.run(quick=False)["notes"]
    assert "Not linear or better: prepare peak RSS (GiB) from 50,000 to 100,000 members" in notes
    assert "prepare peak RSS (GiB) from 100,000 to 500,000 members (p = 2.00)" in notes
    assert "from 10,000 to 50,000" not in notes
    assert "prepare time from" not in notes


def test_plot_x_values_must_match_the_points() -> None:
    with pytest.raises(ValueError, match="one value per point"):
        check_plot({"kind": "line", "x": [1, 2], "series": {"a": [1.0, 2.0, 3.0]}})
    with pytest.raises(ValueError, match="x is for line plots"):
        check_plot({"kind": "bar", "x": [1], "series": {"a": [1.0]}})


def test_run_measured_sums_the_process_tree_and_reports_failures() -> None:
    assert tree_rss(__import__("os").getpid()) > 0
    grandchild = "import time; x = b'x' * 50_000_000; time.sleep(2)"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grandchild!r}])"
    measured = run_measured([sys.executable, "-c", child])
    assert measured.peak_rss_bytes > 50_000_000  # the grandchild's buffer is counted
    assert measured.wall_seconds > 0 and measured.cpu_seconds > 0
    with pytest.raises(RuntimeError, match="exited 3: boom"):
        run_measured([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"])

"""bench_cli: one round of each command gives a well-formed figure with every YAML compiled."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_cli  # noqa: E402
from bench.figures import check_figure  # noqa: E402
from bench.report_plots import check_plot  # noqa: E402


@pytest.mark.slow
def test_bench_cli_run_quick_is_well_formed() -> None:
    result = bench_cli.run(quick=True)
    check_figure(result)
    check_plot(result["plot"])
    assert result["baseline"]["value"] > 0 and result["measured"]["value"] > 0
    assert result["target"] is None and result["met"] is None
    rows = {label: value for label, value, _ in result["rows"]}
    assert rows["rounds"] == 1
    assert rows["YAML files compiled"] >= 2  # every pipeline and component
    assert set(result["plot"]["series"]) == {"import kfp", "compile.py --help", "compile"}
    assert all(len(samples) == 1 for samples in result["plot"]["series"].values())

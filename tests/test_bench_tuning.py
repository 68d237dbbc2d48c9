"""bench_tuning: the surrogate, the trial counting, and a well-formed quick run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_tuning as bt  # noqa: E402
from bench.figures import check_figure  # noqa: E402
from bench.report_plots import check_plot  # noqa: E402


def test_surrogate_ndcg_peaks_at_each_sizes_best_rate() -> None:
    for dim, best_lr in bt.BEST_LR.items():
        assert bt.surrogate_ndcg(best_lr, dim) == pytest.approx(bt.PEAK[dim])
        assert bt.surrogate_ndcg(best_lr * 10, dim) < bt.PEAK[dim]
        assert bt.surrogate_ndcg(best_lr / 10, dim) < bt.PEAK[dim]


def test_trials_to_reach_counts_from_one_and_censors_at_budget_plus_one() -> None:
    assert bt.trials_to_reach([0.1, 0.5, 0.9], 0.5, 3) == 2
    assert bt.trials_to_reach([0.1, 0.2], 0.5, 2) == 3


def test_best_so_far_is_the_running_maximum() -> None:
    assert bt.best_so_far([0.2, 0.1, 0.4, 0.3]) == [0.2, 0.2, 0.4, 0.4]


def test_run_study_grid_stops_when_the_grid_is_exhausted() -> None:
    values = bt.run_study("GRID_SEARCH", 0, 100, bt.surrogate_ndcg)
    assert len(values) == bt.GRID_LR_POINTS * len(bt.EMBEDDING_DIMS)
    assert len(set(values)) == len(values)  # every grid point visited once


def test_run_study_is_reproducible_for_a_seed() -> None:
    first = bt.run_study("RANDOM_SEARCH", 3, 10, bt.surrogate_ndcg)
    assert first == bt.run_study("RANDOM_SEARCH", 3, 10, bt.surrogate_ndcg)
    assert first != bt.run_study("RANDOM_SEARCH", 4, 10, bt.surrogate_ndcg)


def test_run_study_parallel_spends_the_budget_in_rounds_blind_to_their_results() -> None:
    sequential = bt.run_study("ALGORITHM_UNSPECIFIED", 0, 13, bt.surrogate_ndcg)
    parallel = bt.run_study("ALGORITHM_UNSPECIFIED", 0, 13, bt.surrogate_ndcg, parallel=3)
    assert len(parallel) == 13  # the last round is cut to the budget
    assert parallel == bt.run_study("ALGORITHM_UNSPECIFIED", 0, 13, bt.surrogate_ndcg, 3)
    # Past the sampler's 10 start-up trials, a round cannot see its own members' results.
    assert parallel[:10] == sequential[:10] and parallel[10:] != sequential[10:]


def test_bench_tuning_run_quick_is_well_formed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Smaller than the quick pass (3 seeds x 16 trials): each Bayesian trial past the
    # sampler's 10 start-up trials fits a Gaussian process, most of this test's time. 13
    # trials still give every study Bayesian trials, and the parallel arms a last round cut
    # to the budget (4 rounds of 3, then 1); 2 seeds still take a median.
    monkeypatch.setitem(bt.SIZES, "quick", (2, 13))
    result = bt.run(quick=True)
    check_figure(result)
    check_plot(result["plot"])
    parallel_arms = {f"{label}, {bt.PARALLEL} at a time" for label in bt.PAIR}
    assert set(result["plot"]["series"]) == set(bt.ALGORITHMS) | parallel_arms
    rows = {label: value for label, value, _ in result["rows"]}
    parallel_ratio = rows[f"Bayesian / random, {bt.PARALLEL} at a time"]
    assert result["met"] is (max(result["ratio"], parallel_ratio) <= bt.TARGET_RATIO)
    seeds, budget = bt.SIZES["quick"]
    assert f"median over {seeds} seeds, {budget} trials per study" in result["what"]
    # A study that never got within 1% counts as budget + 1 trials.
    assert 1 <= result["baseline"]["value"] <= budget + 1
    assert 1 <= result["measured"]["value"] <= budget + 1
    assert result["ratio"] == pytest.approx(
        result["measured"]["value"] / result["baseline"]["value"]
    )
    for curve in result["plot"]["series"].values():
        assert curve == sorted(curve)  # a best-so-far curve never goes down

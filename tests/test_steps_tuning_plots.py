"""The tuning report's plots: Optuna's own visualisation over any study's trials."""

from __future__ import annotations

from vertex_retrain.steps.trials_report import TrialRow, render_trials_report
from vertex_retrain.steps.tuning_plots import study_from_trials, study_plots_html

ROWS = [
    TrialRow("1", "SUCCEEDED", {"learning_rate": 1e-4, "embedding_dim": 16}, 0.52),
    TrialRow("2", "FAILED", {"learning_rate": 3e-2, "embedding_dim": 64}, None, "exit 1"),
    TrialRow("3", "SUCCEEDED", {"learning_rate": 3e-3, "embedding_dim": 32}, 0.61),
    TrialRow("4", "SUCCEEDED", {"learning_rate": 1e-2, "embedding_dim": 64}, 0.58),
]


def test_study_from_trials_loads_states_values_and_distributions() -> None:
    study = study_from_trials(ROWS, metric_id="ndcg_at_10", goal="MAXIMIZE")
    assert [t.state.name for t in study.trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert study.best_trial.user_attrs["trial_id"] == "3"
    rate = study.trials[0].distributions["learning_rate"]
    assert rate.log and (rate.low, rate.high) == (1e-4, 3e-2)  # two decades: a log axis
    dim = study.trials[0].distributions["embedding_dim"]
    assert (dim.low, dim.high) == (16, 64)
    assert study_from_trials(ROWS, metric_id="loss", goal="MINIMIZE").best_trial.value == 0.52


def test_study_plots_html_draws_three_plots_with_plotly_inlined_once() -> None:
    page = study_plots_html(ROWS, metric_id="ndcg_at_10", goal="MAXIMIZE")
    titles = ["Optimisation history", "Parameter importances", "Parallel coordinates"]
    assert [f"<h3>{t}</h3>" in page for t in titles] == [True, True, True]
    assert page.count("Plotly.newPlot") == 3 and page.count("window.PlotlyConfig") == 1
    assert "Not drawn" not in page


def test_study_plots_html_without_a_completed_trial_says_so() -> None:
    failed = [TrialRow("1", "FAILED", {"x": 1}, None)]
    assert "nothing to plot" in study_plots_html(failed, metric_id="m", goal="MAXIMIZE")


def test_render_trials_report_puts_the_plots_above_the_trials_table() -> None:
    page = render_trials_report(ROWS, metric_id="ndcg_at_10", goal="MAXIMIZE", best_trial_id="3")
    assert page.index("Optimisation history") < page.index("<table>")
    assert "<tr class='best'>" in page and page.count("<tr class='failed'>") == 1

"""The second example, a scikit-learn demand forecaster on daily partitions, runs the library's
weekly template locally end to end, unchanged (examples/daily_demand/pipelines.py).

Two Mondays: the first run on an empty root makes the first champion (it must beat the
seasonal naive reference) and serves it; the generator then appends a week of sales and the
next Monday's run judges a new candidate against that champion by the lower-is-better RMSE
rule. The package source is a copy made for the test, so the build's cache key stays put
while the tree is edited. One test: the second week needs the first, and a module fixture
shared by several tests would run once per xdist worker that gets one of them.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.examples import DAILY_DEMAND, example_module
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.cli import main as cli
from vertex_retrain.cli.local_run import cached_tasks

DEMAND = example_module(DAILY_DEMAND, "pipelines")
DEMO = example_module(DAILY_DEMAND, "demo")
MODEL = DEMAND.MODEL
# A few seconds of training: fewer, smaller trees than the team's defaults.
QUICK = {"hyperparameters": {"learning_rate": 0.15, "max_iter": 60, "max_leaf_nodes": 15}}
FIRST_MONDAY = dt.date(2025, 2, 3)  # four weeks of sales from Monday 2025-01-06


@pytest.fixture
def local_root(tmp_path: Path) -> Iterator[Path]:
    from demand_forecast.data import generate
    from demand_forecast.synthetic import WorldConfig

    with pytest.MonkeyPatch.context() as monkey:
        monkey.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
        monkey.chdir(tmp_path)
        # 20 items: each store has 20 rows a day, what the team's gate compares mixes from.
        generate(DEMAND.DATA_URI, WorldConfig(stores=4, items=20, seed=3), days=28)
        shutil.copytree(
            DAILY_DEMAND / "demand_forecast",
            tmp_path / "demand-source",
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"),
        )
        try:
            yield tmp_path
        finally:  # no model server outlives the test, whether it passed or not
            if (tmp_path / "registry.db").is_file():
                for endpoint in LocalEndpoints().list_endpoints():
                    stop_servers(endpoint.display_name)


def test_daily_demand_weekly_promotes_a_first_champion_then_judges_the_next_week_by_lower_rmse(
    local_root: Path,
) -> None:
    printed = io.StringIO()
    # warm_start on (the template's default, given here to say so): the forecaster declares
    # no warm start, so both weeks retrain fully, and say why.
    source = {"source_uri": str(local_root / "demand-source"), "warm_start": True}
    first, second = DEMO.run_demo(DEMAND, {**QUICK, **source}, printed)
    assert first.succeeded, first.log_path.read_text()[-3000:]
    assert second.succeeded, second.log_path.read_text()[-3000:]

    # Week 1: no as_of, so the local run replays the newest day: the Monday after the data.
    summary = first.summary
    window = summary["data_window"]
    assert window["as_of"] == FIRST_MONDAY.isoformat()
    gate_days = [(FIRST_MONDAY - dt.timedelta(days=n)).isoformat() for n in range(7, 0, -1)]
    assert window["gate_periods"] == gate_days  # daily periods, a week of them
    selection_days = [(FIRST_MONDAY - dt.timedelta(days=n)).isoformat() for n in range(14, 7, -1)]
    assert window["selection_periods"] == selection_days  # the week before: what training chose on
    assert window["train_periods"][0] == "2025-01-06"
    assert window["train_periods"][-1] == "2025-01-19"
    assert summary["data_gate"]["passed"] is True
    metrics, decision = summary["metrics"], summary["decision"]
    # The first champion has no champion to beat, but must beat last week's sales.
    assert decision["is_better"] is True
    assert decision["reason"] == (
        "no champion yet: the candidate beat reference 'seasonal_naive', and becomes the champion"
    )
    assert metrics["candidate_rmse"] < metrics["reference_seasonal_naive_rmse"]

    # Week 2: next Monday, after the nightly feed appended the week's sales.
    summary = second.summary
    assert summary["data_window"]["as_of"] == (FIRST_MONDAY + dt.timedelta(days=7)).isoformat()
    assert summary["data_window"]["gate_periods"][0] == FIRST_MONDAY.isoformat()
    assert summary["data_window"]["content_hash"] != window["content_hash"]
    assert summary["data_gate"]["passed"] is True
    assert "build-container" in cached_tasks(second.run_dir)  # same code: the build is reused
    kind = summary["training_kind"]
    assert kind["kind"] == "full" and "the trainer declares no warm start" in kind["reason"]
    metrics, decision = summary["metrics"], summary["decision"]
    # Lower is better: the candidate, trained on a week more of the trend, has the lower RMSE
    # (the same seeded data gives the same models), so it wins by the champion's RMSE minus its
    # own. A rule read as higher-is-better would have refused it, and refused week 1's too.
    gain = metrics["champion_rmse"] - metrics["candidate_rmse"]
    assert gain > 0 and metrics["candidate_mae"] <= metrics["champion_mae"] + 0.05, metrics
    assert decision["is_better"] is True
    assert decision["reason"] == (
        f"rmse (lower is better) improved by {gain:+.4f} and every guardrail held"
    )

    # Each week registered a version with its window; the second is champion and serves.
    old, new = ModelRegistry().list_versions(MODEL)
    assert [v.labels["data_as_of"] for v in (old, new)] == [
        FIRST_MONDAY.isoformat(),
        (FIRST_MONDAY + dt.timedelta(days=7)).isoformat(),
    ]
    assert "champion" in new.aliases and "champion" not in old.aliases
    assert (
        new.labels["training_kind"] == "full"
        and new.labels["full_retrain_as_of"] == (FIRST_MONDAY + dt.timedelta(days=7)).isoformat()
    )
    deployed = LocalEndpoints().get(MODEL).deployed_models
    assert {m.model_version_id: m.traffic_percentage for m in deployed} == {
        new.version_id: 100,
        old.version_id: 0,
    }
    # Each week's report served a forecast over HTTP through the local endpoint router.
    text = printed.getvalue()
    forecasts = re.findall(r"^forecast for .*: (\d+\.\d\d) units \(traffic ", text, re.MULTILINE)
    assert len(forecasts) == 2 and all(float(units) > 0 for units in forecasts), text[-2000:]
    assert "decision: NEW CHAMPION: rmse (lower is better) improved by" in text
    # The demo leaves the endpoint deployed and no model server running.
    assert text.rstrip().endswith(
        "model servers stopped; `vertex-retrain serve daily-demand` serves again"
    )
    assert stop_servers(MODEL) == 0
    # Week 2's report named the rollback to week 1's split, and it does what it says.
    old_id = next(m.deployed_model_id for m in deployed if m.model_version_id == old.version_id)
    assert re.findall(r"^roll back: (.*)$", text, re.MULTILINE) == [
        f"vertex-retrain endpoints rollback {MODEL} restores the split before this deployment, "
        f"100% to deployed model id {old_id}"
    ]
    assert cli.main(["endpoints", "rollback", MODEL]) == 0
    after = LocalEndpoints().get(MODEL).deployed_models
    assert {m.model_version_id: m.traffic_percentage for m in after} == {
        new.version_id: 0,
        old.version_id: 100,
    }
    assert ModelRegistry().get_version(MODEL, "champion").version_id == new.version_id

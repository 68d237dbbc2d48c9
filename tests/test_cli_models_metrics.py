"""``vertex-retrain models MODEL``: a version's METRICS cell leads with the evaluation
declaration's primary metric and says how many metrics it left out; ``--json`` has them all."""

from __future__ import annotations

import argparse
import json

import pytest

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_records import Lineage
from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.cli.registry_commands import cli_models, metrics_cell
from vertex_retrain.run_record import RunRecord

METRICS = {"alpha": 0.1, "beta_long_name": 0.2, "gamma_long_name": 0.3, "zeta": 0.9}


def _register(registry: ModelRegistry, run: str, metrics: dict[str, float]) -> None:
    registry.upload_version(
        "m", artifact_uri=f"gs://b/{run}", container_spec={"imageUri": "i"}, metrics=metrics,
        lineage=Lineage(pipeline_run=run),
    )  # fmt: skip


def _record(run: str, as_of: str, primary: str) -> None:
    decision = {"primary_metric": primary}
    RunHistory().record(RunRecord(run, "m", "local", "SUCCEEDED", as_of=as_of, decision=decision))


def _table(wide: bool, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert cli_models(argparse.Namespace(model="m", wide=wide)) == 0
    return capsys.readouterr().out.splitlines()


def test_models_metrics_lead_with_the_primary_metric_and_count_the_rest(
    registry: ModelRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    _register(registry, "r1", METRICS)
    _record("r1", "2026-11-02", "zeta")
    (row,) = _table(False, capsys)[1:]
    assert "zeta=0.9, alpha=0.1, +2 more" in row and "…" not in row
    (whole,) = _table(True, capsys)[1:]
    assert "zeta=0.9, alpha=0.1, beta_long_name=0.2, gamma_long_name=0.3" in whole
    assert "more" not in whole
    assert cli_models(argparse.Namespace(model="m", json=True)) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["metrics"] == METRICS and record["primary_metric"] == "zeta"


def test_models_metrics_of_a_version_without_its_run_take_the_latest_runs_primary(
    registry: ModelRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    _register(registry, "by-hand", {"alpha": 0.1, "zeta": 0.9})
    (alphabetical,) = _table(False, capsys)[1:]
    assert "alpha=0.1, zeta=0.9" in alphabetical  # no run on record: by name
    _record("r1", "2026-11-02", "alpha")
    _record("r2", "2026-11-09", "zeta")
    (row,) = _table(False, capsys)[1:]
    assert "zeta=0.9, alpha=0.1" in row


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (18, "b=2, a=1, c=3, d=4"),  # 18 characters: all fit
        (17, "b=2, a=1, +2 more"),  # 17: the count fits exactly where all do not
        (16, "b=2, +3 more"),
        (None, "b=2, a=1, c=3, d=4"),
    ],
)
def test_metrics_cell_fits_whole_metrics_and_counts_the_others(
    width: int | None, expected: str
) -> None:
    assert metrics_cell({"a": 1, "b": 2, "c": 3, "d": 4}, "b", width) == expected


def test_metrics_cell_of_no_metrics_is_a_dash() -> None:
    assert metrics_cell({}, None, 40) == "-"


def test_metrics_cell_leads_with_a_run_versions_own_score_then_the_champions() -> None:
    # What a run registers: the decision's metrics, named by whose they are.
    registered = {"candidate_mae": 4.8, "candidate_rmse": 6.1, "champion_rmse": 6.4,
                  "is_better": 1.0, "reference_last_week_rmse": 7.0}  # fmt: skip
    assert metrics_cell(registered, "rmse", None) == (
        "candidate_rmse=6.1, champion_rmse=6.4, candidate_mae=4.8, "
        "reference_last_week_rmse=7, is_better=1"
    )
    # Without a primary metric known: by name, the decision's flag still last.
    assert metrics_cell(registered, None, None).endswith("reference_last_week_rmse=7, is_better=1")

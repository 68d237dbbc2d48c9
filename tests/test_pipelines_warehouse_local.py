"""The drink shops' weekly pipeline runs from a warehouse (DuckDB standing in for BigQuery)
end to end, with the gate verdict, the split and the metrics it gets from the Parquet folder.

Two runs of the same week on tiny data, each on an empty root of its own: one reads the
Parquet folder, the other the same rows through ``extract_window`` from ``warehouse.duckdb``
(examples/drink_shops/warehouse.py). A declared floor no candidate meets keeps both out of
serving (no model server to start), so the runs stay short.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, evaluation_declaration, example_module
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.local_run import local_arguments, run_pipeline_locally, task_errors

CHAIN = example_module(DRINK_SHOPS, "pipelines")
WAREHOUSE = example_module(DRINK_SHOPS, "warehouse")
TINY = {
    "training_args": ["--epochs", "1", "--batch_size", "256"],
    "hyperparameters": {"learning_rate": 0.01, "embedding_dim": 16},
}


def _floored() -> dict[str, Any]:
    rule = evaluation_declaration(DRINK_SHOPS)
    return {
        **rule,
        "metrics": {**rule["metrics"], "ndcg_at_10_usual_margin": "higher"},
        "floors": {"ndcg_at_10_usual_margin": 1.0},
    }


def _week(
    root: Path, monkeypatch: pytest.MonkeyPatch, overrides: dict[str, Any], succeeds: bool = True
) -> Any:
    from trainer.data import generate
    from trainer.world import WorldConfig

    root.mkdir()
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(root))
    monkeypatch.chdir(root)
    data = root / "gcs" / "drink-shops-ml" / "transactions"
    generate(WorldConfig(members=200, stores=5, weeks=5, seed=3), str(data), workers=1)
    WAREHOUSE.load_duckdb(data)
    source = root / "trainer-source"
    shutil.copytree(
        DRINK_SHOPS / "trainer", source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    spec = compile_to_dict(CHAIN.weekly)
    arguments = local_arguments(
        default_arguments(spec),
        {**TINY, "source_uri": str(source), "evaluation_declaration": _floored(), **overrides},
    )
    with open(os.devnull, "w") as quiet:
        outcome = run_pipeline_locally(CHAIN.weekly, arguments, console=quiet)
    if not succeeds:
        return outcome
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    return outcome.summary


def test_warehouse_weekly_from_duckdb_matches_the_parquet_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _week(tmp_path / "folder", monkeypatch, {})
    warehouse = _week(
        tmp_path / "warehouse",
        monkeypatch,
        {"dataset_declaration": WAREHOUSE.WAREHOUSE_DECLARATION},
    )
    for key in ("data_gate", "decision", "metrics"):
        assert warehouse[key] == folder[key], (key, warehouse[key], folder[key])
    assert warehouse["data_gate"]["verdict"].startswith("data gate passed")
    assert folder["metrics"] and folder["decision"]["candidate_score"] > 0
    windows = list((tmp_path / "warehouse").rglob("warehouse-windows/*/_COMPLETE"))
    assert len(windows) == 1
    assert not list((tmp_path / "folder").rglob("warehouse-windows"))


def test_warehouse_weekly_missing_table_stops_before_training_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declaration = dict(WAREHOUSE.WAREHOUSE_DECLARATION)
    declaration["source"] = {**declaration["source"], "table": "drink_shops.purchases"}
    outcome = _week(
        tmp_path / "missing", monkeypatch, {"dataset_declaration": declaration}, succeeds=False
    )
    # The run's output names the failed step and its one-line cause.
    errors = task_errors(outcome.log_path.read_text().splitlines())
    assert errors == [
        "vertex_retrain.steps.warehouse_readers.WarehouseError: DuckDB table "
        f"'drink_shops.purchases' of {tmp_path / 'missing' / 'gcs' / 'drink-shops-ml'}"
        "/transactions/warehouse.duckdb "
        "cannot be read: Catalog Error: Table with name purchases does not exist!"
    ]
    assert not outcome.succeeded
    assert not list((tmp_path / "missing" / "pipeline-root").glob("*/train-custom-job"))

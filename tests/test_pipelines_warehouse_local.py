"""The drink shops' weekly pipeline runs from a warehouse (DuckDB standing in for BigQuery)
end to end, with the gate verdict, the split and the metrics it gets from the Parquet folder.

Runs of a week on tiny data, each on an empty root of its own, reading the rows through
``extract_window`` from ``warehouse.duckdb`` (examples/drink_shops/warehouse.py); the window
it extracts splits into the Parquet folder's rows exactly. A declared floor no candidate
meets keeps the runs out of serving (no model server to start), so they stay short.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
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
    root = tmp_path / "warehouse"
    summary = _week(root, monkeypatch, {"dataset_declaration": WAREHOUSE.WAREHOUSE_DECLARATION})
    assert summary["data_gate"]["verdict"].startswith("data gate passed")
    assert summary["metrics"] and summary["decision"]["candidate_score"] > 0
    windows = list(root.rglob("warehouse-windows/*/_COMPLETE"))
    assert len(windows) == 1
    # The run's window, split as the run split it, holds the Parquet folder's rows exactly:
    # the same periods in each part and the same rows in each period (training is
    # deterministic on the same rows; the folder's own weekly run is the other tests').
    as_of = summary["data_window"]["as_of"]
    window = _split(windows[0].parent, WAREHOUSE.WAREHOUSE_DECLARATION, as_of, tmp_path / "w")
    folder = _split(
        root / "gcs" / "drink-shops-ml" / "transactions",
        _folder_declaration(),
        as_of,
        tmp_path / "f",
    )
    assert window.keys() == folder.keys() == {"train", "selection", "gate"}
    for part, (periods, rows) in folder.items():
        assert window[part][0] == periods and periods, part
        assert window[part][1].equals(rows), part
        assert summary["data_window"][f"{part}_rows"] == rows.num_rows, part


def _folder_declaration() -> dict[str, Any]:
    """The example's dataset declaration of the Parquet folder (the template's default)."""
    spec = compile_to_dict(CHAIN.weekly)
    return dict(default_arguments(spec)["dataset_declaration"])


def _split(
    data: Path, declaration: dict[str, Any], as_of: str, out: Path
) -> dict[str, tuple[list[str], pa.Table]]:
    """Each part's periods and its fact rows (columns by name, rows sorted)."""
    from vertex_retrain.steps.prepare import prepare

    manifest = prepare(
        backend="local",
        data_uri=str(data),
        dataset_declaration=declaration,
        output_dir=str(out),
        as_of=as_of,
    ).manifest
    columns = sorted(declaration["table"]["columns"])
    parts = {}
    for part in ("train", "selection", "gate"):
        tables = [pq.read_table(data / rel).select(columns) for rel in manifest[part]["files"]]
        rows = pa.concat_tables(tables).sort_by([(name, "ascending") for name in columns])
        parts[part] = (manifest[part]["periods"], rows)
    return parts


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
        "WarehouseError: DuckDB table "
        f"'drink_shops.purchases' of {tmp_path / 'missing' / 'gcs' / 'drink-shops-ml'}"
        "/transactions/warehouse.duckdb "
        "cannot be read: Catalog Error: Table with name purchases does not exist!"
    ]
    assert not outcome.succeeded
    assert not list((tmp_path / "missing" / "pipeline-root").glob("*/train-custom-job"))

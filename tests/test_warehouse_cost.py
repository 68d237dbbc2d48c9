"""A BigQuery source's bytes: billed in the run summary, priced at the budget in the estimate."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, example_module
from vertex_retrain.backends.base import TaskOutputs
from vertex_retrain.cli.compile_commands import cli_estimate
from vertex_retrain.specs.bigquery_cost import TIB, bigquery_query_cost, warehouse_line
from vertex_retrain.steps.summary import build_summary, render_markdown

WAREHOUSE = example_module(DRINK_SHOPS, "warehouse")
WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"


def _summary(parameters: dict[str, Any]) -> dict[str, Any]:
    outputs = {"extract-window": TaskOutputs(parameters=parameters)}
    return build_summary(
        outputs,
        run_name="r",
        state="SUCCEEDED",
        error_message="",
        job_shape={},
        expected_training_hours=1.0,
    )


def test_warehouse_cost_summary_prices_the_bytes_billed() -> None:
    facts = _summary(
        {
            "digest": "sha256:ab",
            "rows": 10,
            "bytes_scanned": TIB,
            "bytes_billed": TIB,
            "data_uri": "gs://b/w/ab",
        }
    )
    assert facts["warehouse"]["bytes_billed"] == TIB
    assert facts["warehouse"]["cost_usd"] == 6.25
    assert "**Warehouse:** BigQuery billed 1,099,511,627,776 bytes: 6.2500 USD" in (
        render_markdown(facts)
    )


def test_warehouse_cost_summary_leaves_a_parquet_folder_run_alone() -> None:
    facts = _summary({"digest": "", "rows": 0, "bytes_billed": 0, "data_uri": "gs://b/d"})
    assert "warehouse" not in facts and "Warehouse" not in render_markdown(facts)


def test_warehouse_cost_line_without_a_budget_says_it_is_unbounded() -> None:
    assert "no source.max_bytes declared" in warehouse_line({"max_bytes": 0})
    assert bigquery_query_cost(TIB // 2) == 3.125


def _estimate(tmp_path: Path, declaration: dict[str, Any] | None, as_json: bool) -> str:
    params = []
    if declaration is not None:
        path = tmp_path / "declaration.json"
        path.write_text(json.dumps(declaration))
        params = [f"dataset_declaration=@{path}"]
    args = argparse.Namespace(
        name=WEEKLY, param=params, training_hours=None, location=None, json=as_json
    )
    out = io.StringIO()
    assert cli_estimate(args, out=out) == 0
    return out.getvalue()


def test_warehouse_cost_estimate_prices_the_declared_budget(tmp_path: Path) -> None:
    text = _estimate(tmp_path, WAREHOUSE.WAREHOUSE_DECLARATION, as_json=False)
    assert (
        "BigQuery window query: at most 53,687,091,200 bytes (source.max_bytes): at most "
        "0.3052 USD a run" in text
    )
    document = json.loads(_estimate(tmp_path, WAREHOUSE.WAREHOUSE_DECLARATION, as_json=True))
    assert document["warehouse"]["table"] == "drink_shops.transactions"
    assert document["warehouse"]["at_most_usd"] == pytest.approx(0.305176, abs=1e-6)


def test_warehouse_cost_estimate_of_a_parquet_folder_has_no_warehouse_line(
    tmp_path: Path,
) -> None:
    assert "BigQuery" not in _estimate(tmp_path, None, as_json=False)
    assert "warehouse" not in json.loads(_estimate(tmp_path, None, as_json=True))

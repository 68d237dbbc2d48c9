"""The dataset declaration's ``source`` and the window query the library writes from it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from vertex_retrain.contracts.dataset import DatasetDeclarationError, parse_dataset_declaration
from vertex_retrain.contracts.window_query import (
    bigquery_bytes_of_row,
    dimension_query,
    relations,
    size_query,
    time_column_problem,
    window_end_of,
    window_query,
)

TABLE = {
    "folder": "sales",
    "time_column": "at",
    "period": "week",
    "columns": {"at": "timestamp[ms]", "store": "string", "units": "int32"},
}
DIMENSIONS = {"stores": {"file": "stores.parquet", "key": "store", "columns": {"store": "string"}}}


def _declaration(source: Any = None, **table: Any) -> dict[str, Any]:
    declared: dict[str, Any] = {
        "format": "vertex-retrain-dataset/v1",
        "table": {**TABLE, **table},
        "dimensions": DIMENSIONS,
    }
    if source is not None:
        declared["source"] = source
    return declared


BIGQUERY = {"kind": "bigquery", "table": "my-project.sales.tx", "max_bytes": 1000}
DUCKDB = {"kind": "duckdb", "database": "wh.duckdb", "table": "tx"}


def test_dataset_source_absent_is_the_parquet_folder_and_round_trips_unchanged() -> None:
    parsed = parse_dataset_declaration(_declaration())
    assert parsed.source.kind == "parquet_folder" and not parsed.source.is_warehouse
    assert "source" not in parsed.to_dict()
    explicit = parse_dataset_declaration(_declaration({"kind": "parquet_folder"}))
    assert explicit.to_dict() == parsed.to_dict()


def test_dataset_source_bigquery_defaults_dimension_tables_and_local_database() -> None:
    source = parse_dataset_declaration(_declaration(BIGQUERY)).source
    assert source.dimension_tables == {"stores": "my-project.sales.stores"}
    assert source.database == "warehouse.duckdb" and source.max_bytes == 1000
    again = parse_dataset_declaration(parse_dataset_declaration(_declaration(BIGQUERY)).to_dict())
    assert again.source == source


def test_dataset_source_max_bytes_accepts_a_whole_double_from_a_pipeline_parameter() -> None:
    source = parse_dataset_declaration(_declaration({**BIGQUERY, "max_bytes": 5.0e10})).source
    assert source.max_bytes == 50_000_000_000 and isinstance(source.max_bytes, int)


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ({"kind": "oracle"}, "source.kind is 'oracle'; expected one of parquet_folder, bigquery"),
        ({**BIGQUERY, "table": "tx"}, "source.table is 'tx'; expected a BigQuery table"),
        ({**BIGQUERY, "max_bytes": -1}, "source.max_bytes is -1"),
        ({**BIGQUERY, "max_bytes": 1.5}, "source.max_bytes is 1.5"),
        ({**BIGQUERY, "glob": "a/*.parquet"}, "source.glob is 'a/*.parquet'"),
        ({**BIGQUERY, "dimension_tables": {"items": "d.t"}}, "source.dimension_tables key"),
        ({**DUCKDB, "glob": "a/*.parquet"}, "either database (a DuckDB file) with table, or glob"),
        ({"kind": "duckdb", "database": "../wh.duckdb", "table": "tx"}, "source.database is"),
        ({"kind": "duckdb", "glob": "a/*.parquet", "table": "tx"}, "no table with glob"),
        ({**DUCKDB, "table": "tx; DROP"}, "source.table is 'tx; DROP'"),
        ({"kind": "parquet_folder", "table": "tx"}, "nothing else with kind parquet_folder"),
        ({**DUCKDB, "sql": "SELECT 1"}, "source.sql is 'SELECT 1'; expected one of the keys"),
    ],
)
def test_dataset_source_malformed_names_the_field_and_what_works(
    source: dict[str, Any], field: str
) -> None:
    with pytest.raises(DatasetDeclarationError) as error:
        parse_dataset_declaration(_declaration(source))
    assert field in str(error.value) and "\n" not in str(error.value)
    assert 'see "Warehouse sources" in the Components guide' in str(error.value)


def test_window_end_of_leaves_the_period_in_progress_out_whole() -> None:
    declaration = parse_dataset_declaration(_declaration(DUCKDB))
    assert window_end_of(declaration, dt.date(2026, 1, 14)) == dt.date(2026, 1, 12)
    assert window_end_of(declaration, dt.date(2026, 1, 12)) == dt.date(2026, 1, 12)


def test_window_query_one_declaration_two_engines() -> None:
    declaration = parse_dataset_declaration(_declaration(BIGQUERY))
    end = dt.date(2026, 1, 12)
    bigquery, _ = relations(declaration, "bigquery")
    assert window_query(declaration, bigquery, end) == (
        "SELECT `at`, `store`, `units` FROM `my-project.sales.tx` "
        "WHERE `at` < DATETIME '2026-01-12 00:00:00' ORDER BY `at`, `store`, `units`"
    )
    # Locally, the same declaration reads the stand-in table of the same dataset and name.
    duckdb, dimensions = relations(declaration, "duckdb")
    assert window_query(declaration, duckdb, end) == (
        'SELECT "at", "store", "units" FROM "sales"."tx" '
        "WHERE \"at\" < TIMESTAMP '2026-01-12 00:00:00'"
    )
    assert dimension_query(declaration, "stores", dimensions["stores"]) == (
        'SELECT "store" FROM "sales"."stores"'
    )


def test_window_query_date_column_and_glob() -> None:
    declaration = parse_dataset_declaration(
        _declaration(
            {"kind": "duckdb", "glob": "raw/*.parquet"},
            time_column="day",
            columns={"day": "date32[day]", "store": "string"},
        )
    )
    fact, dimensions = relations(declaration, "duckdb", "/data/it's")
    assert window_query(declaration, fact, dt.date(2026, 1, 12)) == (
        "SELECT \"day\", \"store\" FROM read_parquet('/data/it''s/raw/*.parquet') "
        "WHERE \"day\" < DATE '2026-01-12'"
    )
    assert dimensions["stores"].sql() == "read_parquet('/data/it''s/stores.parquet')"


def test_window_query_refuses_a_column_it_cannot_quote() -> None:
    declaration = parse_dataset_declaration(
        _declaration(BIGQUERY, columns={**TABLE["columns"], "a`b": "int32"})
    )
    fact, _ = relations(declaration, "bigquery")
    with pytest.raises(DatasetDeclarationError, match="column 'a`b' holds `"):
        window_query(declaration, fact, dt.date(2026, 1, 12))


def test_size_query_counts_rows_and_string_bytes_of_the_whole_table() -> None:
    declaration = parse_dataset_declaration(_declaration(DUCKDB))
    fact, _ = relations(declaration, "duckdb")
    assert size_query(declaration, fact) == (
        'SELECT count(*), coalesce(sum(octet_length(CAST("store" AS BLOB))), 0) FROM "tx"'
    )
    # timestamp 8 + string 2 (its bytes come from the query) + int32 8 (BigQuery's INT64).
    assert bigquery_bytes_of_row(declaration) == 18


@pytest.mark.parametrize(
    ("engine", "found", "problem"),
    [
        ("bigquery", {"at": "DATETIME"}, None),
        ("bigquery", {"at": "TIMESTAMP"}, "column 'at' (table.time_column) is TIMESTAMP"),
        ("bigquery", {"when": "DATETIME"}, "has no column 'at' (table.time_column)"),
        ("duckdb", {"at": "TIMESTAMP_MS"}, None),
        ("duckdb", {"at": "VARCHAR"}, "needs TIMESTAMP or TIMESTAMP_S"),
    ],
)
def test_time_column_problem_both_sides(
    engine: str, found: dict[str, str], problem: str | None
) -> None:
    declaration = parse_dataset_declaration(_declaration(BIGQUERY))
    line = time_column_problem(declaration, engine, found, "the table")
    assert (line is None) if problem is None else (problem in (line or ""))

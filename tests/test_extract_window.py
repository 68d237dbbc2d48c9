"""extract_window: a warehouse's window as the Parquet folder the data steps read.

DuckDB runs for real on a few rows; BigQuery is a fake at the client boundary (no Google API
call), recording the requests the step builds with the official client's types.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from google.api_core import exceptions
from google.cloud import bigquery

from vertex_retrain.steps.extract_window import WarehouseError, extract_window
from vertex_retrain.steps.prepare import prepare

COLUMNS = {"day": "date32[day]", "store": "string", "units": "int32"}
DIMENSIONS = {"stores": {"file": "stores.parquet", "key": "store", "columns": {"store": "string"}}}
ROWS = [  # weeks start on Monday: 2026-01-05, -12, -19
    ("2026-01-05", "a", 1),
    ("2026-01-07", "b", 2),
    ("2026-01-12", "a", 3),
    ("2026-01-19", "b", 4),
    ("2026-01-21", "a", 5),
]


def _declaration(source: dict[str, Any], **table: Any) -> dict[str, Any]:
    return {
        "format": "vertex-retrain-dataset/v1",
        "table": {
            "folder": "sales",
            "time_column": "day",
            "period": "week",
            "columns": COLUMNS,
            **table,
        },
        "dimensions": DIMENSIONS,
        "source": source,
    }


DUCKDB = {"kind": "duckdb", "database": "wh.duckdb", "table": "sales"}


def _database(root: Path, rows: list[tuple[str, str, int]] = ROWS, day: str = "DATE") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "wh.duckdb"
    path.unlink(missing_ok=True)
    with duckdb.connect(str(path)) as connection:
        connection.execute(f"CREATE TABLE sales(day {day}, store VARCHAR, units INTEGER)")
        connection.executemany("INSERT INTO sales VALUES (?, ?, ?)", rows)
        connection.execute("CREATE TABLE stores AS SELECT DISTINCT store FROM sales")
    return path


def _extract(root: Path, declaration: dict[str, Any], as_of: str = "2026-01-21", **kw: Any):
    return extract_window(
        backend="local",
        data_uri=str(root),
        dataset_declaration=declaration,
        as_of=as_of,
        output_root=str(root / "pipeline-root"),
        **kw,
    )


def test_extract_window_writes_one_file_per_whole_period_that_prepare_reads(
    tmp_path: Path,
) -> None:
    _database(tmp_path)
    window = _extract(tmp_path, _declaration(DUCKDB))
    folder = Path(window.data_uri)
    assert folder.parent == tmp_path / "pipeline-root" / "warehouse-windows"
    assert folder.name == window.digest.removeprefix("sha256:")
    # The week holding as_of (from 2026-01-19) is in progress: left out whole.
    assert sorted(p.name for p in (folder / "sales").iterdir()) == [
        "2026-01-05.parquet",
        "2026-01-12.parquet",
    ]
    first = pq.read_table(folder / "sales" / "2026-01-05.parquet")
    assert first.schema.field("units").type == pa.int32()  # the declared type
    assert first.column("units").to_pylist() == [1, 2]
    assert (window.rows, window.periods, window.bytes_billed) == (3, 2, 0)
    assert pq.read_table(folder / "stores.parquet").num_rows == 2
    prepared = prepare(
        backend="local",
        data_uri=window.data_uri,
        dataset_declaration=_declaration(DUCKDB),
        output_dir=str(tmp_path / "d"),
        selection_periods=0,
        as_of="2026-01-19",
    )
    assert (prepared.train_rows, prepared.gate_rows) == (2, 1)


def test_extract_window_unchanged_window_reuses_its_folder_changed_one_does_not(
    tmp_path: Path,
) -> None:
    _database(tmp_path)
    first = _extract(tmp_path, _declaration(DUCKDB))
    again = _extract(tmp_path, _declaration(DUCKDB))
    assert (again.data_uri, again.reused, first.reused) == (first.data_uri, True, False)
    # A row after the window changes nothing; a row inside it changes the digest.
    _database(tmp_path, [*ROWS, ("2026-01-20", "a", 9)])
    assert _extract(tmp_path, _declaration(DUCKDB)).digest == first.digest
    _database(tmp_path, [*ROWS, ("2026-01-06", "a", 9)])
    changed = _extract(tmp_path, _declaration(DUCKDB))
    assert changed.digest != first.digest and not changed.reused


def test_extract_window_parquet_folder_source_passes_the_uri_on(tmp_path: Path) -> None:
    declaration = _declaration({"kind": "parquet_folder"})
    window = _extract(tmp_path, declaration)
    assert (window.data_uri, window.digest) == (str(tmp_path), "")
    assert not (tmp_path / "pipeline-root").exists()


def test_extract_window_duckdb_glob_reads_parquet_files(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    days = [dt.date.fromisoformat(r[0]) for r in ROWS]
    table = pa.table(
        {
            "day": pa.array(days, pa.date32()),
            "store": [r[1] for r in ROWS],
            "units": pa.array([r[2] for r in ROWS], pa.int64()),
        }
    )
    pq.write_table(table.slice(0, 2), raw / "a.parquet")
    pq.write_table(table.slice(2), raw / "b.parquet")
    pq.write_table(pa.table({"store": ["a", "b"]}), tmp_path / "stores.parquet")
    window = _extract(tmp_path, _declaration({"kind": "duckdb", "glob": "raw/*.parquet"}))
    assert (window.rows, window.periods) == (3, 2)


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"source": {**DUCKDB, "table": "nope"}}, "Table with name nope does not exist"),
        ({"source": {**DUCKDB, "database": "other.duckdb"}}, "no DuckDB database at"),
        (
            {"table": {"time_column": "store", "columns": {**COLUMNS, "store": "date32[day]"}}},
            "column 'store' (table.time_column) is VARCHAR; the declaration's date32[day] needs "
            "DATE",
        ),
        (
            {"table": {"time_column": "when", "columns": {**COLUMNS, "when": "date32[day]"}}},
            "has no column 'when' (table.time_column)",
        ),
        (
            {"table": {"columns": {**COLUMNS, "price": "double"}}},
            "lacks the declared column(s) price",
        ),
        ({"as_of": "2026-01-06"}, "has no rows before 2026-01-05 (the window's end"),
        ({"source": {**DUCKDB, "max_bytes": 50}}, "would scan 95 bytes, over source.max_bytes 50"),
        (
            {
                "table": {"columns": {**COLUMNS, "units": "int8"}},
                "rows": [("2026-01-05", "a", 300)],
            },
            "column 'units' is int32, which does not convert to the declared int8",
        ),
    ],
)
def test_extract_window_bad_input_fails_with_one_line(
    tmp_path: Path, change: dict[str, Any], line: str
) -> None:
    _database(tmp_path, change.get("rows", ROWS))
    table = change.get("table", {})
    declaration = _declaration(change.get("source", DUCKDB), **table)
    with pytest.raises(WarehouseError) as error:
        _extract(tmp_path, declaration, change.get("as_of", "2026-01-21"))
    assert line in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "pipeline-root").exists()


def test_extract_window_budget_boundary_equal_passes(tmp_path: Path) -> None:
    _database(tmp_path)
    # 5 rows x (date 8 + string 2 + int 8) + 5 one-byte store names = 95 bytes.
    assert _extract(tmp_path, _declaration({**DUCKDB, "max_bytes": 95})).bytes_scanned == 95
    with pytest.raises(WarehouseError, match=r"would scan 95 bytes, over source\.max_bytes 94"):
        _extract(tmp_path, _declaration({**DUCKDB, "max_bytes": 94}))


# BigQuery, at the client boundary.


@dataclass
class FakeJob:
    rows: pa.Table | None
    total_bytes_processed: int = 0
    total_bytes_billed: int = 0
    storage_api: list[bool] = field(default_factory=list)

    def to_arrow(self, create_bqstorage_client: bool = False) -> pa.Table:
        self.storage_api.append(create_bqstorage_client)
        assert self.rows is not None
        return self.rows


@dataclass
class FakeBigQuery:
    schema: dict[str, str] | None
    rows: pa.Table
    processed: int = 120
    refuse: Exception | None = None
    queries: list[tuple[str, Any]] = field(default_factory=list)
    jobs: list[FakeJob] = field(default_factory=list)

    def get_table(self, name: str) -> Any:
        if self.schema is None:
            raise exceptions.NotFound(f"Not found: Table {name}")
        fields = [bigquery.SchemaField(n, t) for n, t in self.schema.items()]
        return bigquery.Table(name.replace(":", "."), schema=fields)

    def query(self, sql: str, job_config: bigquery.QueryJobConfig) -> FakeJob:
        self.queries.append((sql, job_config))
        if self.refuse is not None and job_config.dry_run:
            raise self.refuse
        if job_config.dry_run:
            return FakeJob(None, total_bytes_processed=self.processed)
        stores = pa.table({"store": ["a", "b"]})
        job = FakeJob(stores if "stores" in sql else self.rows, total_bytes_billed=10_485_760)
        self.jobs.append(job)
        return job


BIGQUERY = {"kind": "bigquery", "table": "my-project.shop.sales", "max_bytes": 1000}
BQ_SCHEMA = {"day": "DATE", "store": "STRING", "units": "INTEGER"}


def _bigquery_rows() -> pa.Table:
    days = [dt.date.fromisoformat(r[0]) for r in ROWS[:3]]
    return pa.table(
        {
            "day": pa.array(days, pa.date32()),
            "store": [r[1] for r in ROWS[:3]],
            "units": pa.array([r[2] for r in ROWS[:3]], pa.int64()),
        }
    )


def test_extract_window_bigquery_dry_runs_then_queries_capped_through_the_storage_api(
    tmp_path: Path,
) -> None:
    client = FakeBigQuery(BQ_SCHEMA, _bigquery_rows())
    window = _extract(tmp_path, _declaration(BIGQUERY), client=client)
    (dry_sql, dry), (sql, config), (dimension_sql, _) = client.queries
    assert dry.dry_run is True and dry.use_query_cache is False
    assert sql == dry_sql and "FROM `my-project.shop.sales` WHERE `day` < DATE '2026-01-19'" in sql
    assert not config.dry_run and config.maximum_bytes_billed == 1000
    assert dimension_sql == "SELECT `store` FROM `my-project.shop.stores` ORDER BY `store`"
    assert all(job.storage_api == [True] for job in client.jobs)
    assert (window.rows, window.periods) == (3, 2)
    assert window.bytes_scanned == 120 and window.bytes_billed == 2 * 10_485_760


@pytest.mark.parametrize(
    ("client", "declaration", "line"),
    [
        (
            FakeBigQuery(None, pa.table({})),
            BIGQUERY,
            "BigQuery table my-project.shop.sales does not exist (source.table)",
        ),
        (
            FakeBigQuery({**BQ_SCHEMA, "day": "TIMESTAMP"}, pa.table({})),
            BIGQUERY,
            "column 'day' (table.time_column) is TIMESTAMP; the declaration's date32[day] "
            "needs DATE",
        ),
        (
            FakeBigQuery(BQ_SCHEMA, pa.table({}), processed=1001),
            BIGQUERY,
            "would scan 1,001 bytes, over source.max_bytes 1,000",
        ),
        (
            FakeBigQuery(BQ_SCHEMA, _bigquery_rows().slice(0, 0)),
            BIGQUERY,
            "BigQuery table my-project.shop.sales has no rows before 2026-01-19",
        ),
    ],
)
def test_extract_window_bigquery_bad_input_fails_before_any_billed_query(
    tmp_path: Path, client: FakeBigQuery, declaration: dict[str, Any], line: str
) -> None:
    with pytest.raises(WarehouseError) as error:
        _extract(tmp_path, _declaration(declaration), client=client)
    assert line in str(error.value) and "\n" not in str(error.value)
    billed = [config for _, config in client.queries if not config.dry_run]
    assert len(billed) == (1 if "no rows" in line else 0)


def test_extract_window_bigquery_client_runs_in_the_pipelines_project_and_region(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[dict[str, Any]] = []
    fake = FakeBigQuery(BQ_SCHEMA, _bigquery_rows())

    def client(**kwargs: Any) -> FakeBigQuery:
        made.append(kwargs)
        return fake

    monkeypatch.setattr(bigquery, "Client", client)
    mounted = str(tmp_path) + "/"
    monkeypatch.setattr(
        "vertex_retrain.steps.extract_window.readable_path",
        lambda backend, uri: Path(uri.replace("gs://", mounted)),
    )
    window = extract_window(
        backend="vertex",
        data_uri="gs://b/data",
        dataset_declaration=_declaration(BIGQUERY),
        as_of="2026-01-21",
        output_root="gs://b/root",
        project="p-1",
        location="europe-west4",
    )
    assert made == [{"project": "p-1", "location": "europe-west4"}]
    assert window.data_uri.startswith("gs://b/root/warehouse-windows/")
    assert (tmp_path / window.data_uri.removeprefix("gs://") / "_COMPLETE").is_file()


def test_extract_window_bigquery_source_runs_locally_on_its_duckdb_stand_in(
    tmp_path: Path,
) -> None:
    path = _database(tmp_path)
    with duckdb.connect(str(path)) as connection:
        connection.execute("CREATE SCHEMA shop")
        connection.execute("CREATE TABLE shop.sales AS SELECT * FROM sales")
        connection.execute("CREATE TABLE shop.outlets AS SELECT * FROM stores")
    path.rename(tmp_path / "stand-in.duckdb")
    source = {
        **BIGQUERY,
        "database": "stand-in.duckdb",
        "dimension_tables": {"stores": "my-project.shop.outlets"},
    }
    window = _extract(tmp_path, _declaration(source))
    assert (window.rows, window.periods, window.bytes_billed) == (3, 2, 0)
    # The dimension came from the table dimension_tables names.
    assert pq.read_table(Path(window.data_uri) / "stores.parquet").num_rows == 2
    with pytest.raises(WarehouseError, match="no DuckDB database at"):
        _extract(tmp_path, _declaration(BIGQUERY))  # the default stand-in is not there


def test_extract_window_bigquery_refused_dry_run_is_one_line_before_any_bill(
    tmp_path: Path,
) -> None:
    refusal = exceptions.NotFound(
        "Not found: Dataset my-project:shop was not found in location europe-west4"
    )
    client = FakeBigQuery(BQ_SCHEMA, _bigquery_rows(), refuse=refusal)
    with pytest.raises(WarehouseError) as error:
        _extract(tmp_path, _declaration(BIGQUERY), client=client)
    assert str(error.value) == (
        "BigQuery refused a query of BigQuery table my-project.shop.sales's window: Not found: "
        "Dataset my-project:shop was not found in location europe-west4"
    )
    assert all(config.dry_run for _, config in client.queries)


def test_extract_window_bigquery_missing_dimension_table_is_one_line(tmp_path: Path) -> None:
    refusal = exceptions.NotFound("Not found: Table my-project:shop.stores")

    class RefusingDimensions(FakeBigQuery):
        def query(self, sql: str, job_config: bigquery.QueryJobConfig) -> FakeJob:
            if "stores" in sql:
                raise refusal
            return super().query(sql, job_config)

    refusing = RefusingDimensions(BQ_SCHEMA, _bigquery_rows())
    with pytest.raises(WarehouseError, match=r"Not found: Table my-project:shop\.stores$"):
        _extract(tmp_path, _declaration(BIGQUERY), client=refusing)
    assert not (tmp_path / "pipeline-root").exists()

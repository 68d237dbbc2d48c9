"""The two engines a window extraction reads through: BigQuery (Vertex) and DuckDB (local).

Each answers the same three questions about the declared source: its columns (with the
engine's type names), how many bytes the window query would scan, and the query's rows as an
Arrow table. BigQuery goes through the official client (``google-cloud-bigquery``) in the
pipeline's project and region, as whatever account runs the step (the pipeline's service
account on Vertex); it reads the query's result through the Storage Read API
(``google-cloud-bigquery-storage``), as Arrow, without an export job
(docs/components.md#warehouse-sources says why). Tests pass a fake client.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vertex_retrain.contracts.dataset import DatasetDeclaration
from vertex_retrain.contracts.window_query import (
    Relation,
    bigquery_bytes_of_row,
    relations,
    size_query,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["BigQueryReader", "DuckDBReader", "WarehouseError", "WindowReader"]


class WarehouseError(ValueError):
    """The source cannot give the window: one line saying what and what to do."""


class WindowReader(Protocol):
    """What the extraction needs of an engine."""

    engine: str
    where: str
    bytes_billed: int
    fact: Relation
    dimensions: dict[str, Relation]

    def columns(self) -> dict[str, str]:
        """The fact table's columns as ``{name: engine type name}``."""
        ...

    def scanned_bytes(self, query: str) -> int:
        """The bytes the query would scan (BigQuery's dry run; DuckDB's estimate)."""
        ...

    def read(self, query: str, max_bytes: int) -> pa.Table:
        """The query's rows."""
        ...


class DuckDBReader:
    """A DuckDB database file, or Parquet files read through DuckDB, opened read-only.

    A BigQuery source read locally is read here too, from its stand-in database
    (``source.database``; :data:`~vertex_retrain.contracts.dataset_source.LOCAL_DATABASE`).

    Args:
        declaration: The declaration (its source is ``duckdb`` or ``bigquery``).
        data_root: The local dataset folder the database or glob is relative to.
    """

    engine = "duckdb"
    bytes_billed = 0

    def __init__(self, declaration: DatasetDeclaration, data_root: Path) -> None:
        import duckdb

        self._declaration = declaration
        source = declaration.source
        self.fact, self.dimensions = relations(declaration, self.engine, str(data_root))
        if source.glob:
            self.where = f"DuckDB glob {source.glob!r} under {data_root}"
            self._connection = duckdb.connect(":memory:")
        else:
            database = data_root / source.database
            self.where = f"DuckDB table {self.fact.table!r} of {database}"
            if not database.is_file():
                raise WarehouseError(
                    f"no DuckDB database at {database} (source.database "
                    f"{source.database!r}, relative to the data URI)"
                )
            self._connection = duckdb.connect(str(database), read_only=True)

    def _run(self, query: str) -> Any:
        import duckdb

        try:
            return self._connection.execute(query)
        except (duckdb.CatalogException, duckdb.IOException) as error:
            first = str(error).splitlines()[0]
            raise WarehouseError(f"{self.where} cannot be read: {first}") from None

    def columns(self) -> dict[str, str]:
        """The source's columns with DuckDB's type names (``DESCRIBE``)."""
        rows = self._run(f"DESCRIBE SELECT * FROM {self.fact.sql()}").fetchall()
        return {str(row[0]): str(row[1]).upper() for row in rows}

    def scanned_bytes(self, query: str) -> int:
        """BigQuery's logical size of the declared columns over the whole table.

        DuckDB bills nothing; the estimate stands in for what BigQuery would scan of the same
        table (every row of each column read, the table unpartitioned), so a budget that
        passes here holds on Vertex for the same data.
        """
        del query  # the estimate is of the table the query reads, not of its result
        counts = self._run(size_query(self._declaration, self.fact)).fetchone()
        rows, strings = int(counts[0]), sum(int(v) for v in counts[1:])
        return rows * bigquery_bytes_of_row(self._declaration) + strings

    def read(self, query: str, max_bytes: int) -> pa.Table:
        """The query's rows as Arrow."""
        del max_bytes  # checked against the estimate before; DuckDB has no billing cap
        return self._run(query).to_arrow_table()


class BigQueryReader:
    """The declared BigQuery table, through the official client.

    Args:
        declaration: The declaration (its source is ``bigquery``).
        project: The pipeline's project: queries run and are billed there.
        location: The pipeline's region: queries run there.
        client: A ``google.cloud.bigquery.Client`` (a test's fake); built when None.
    """

    engine = "bigquery"

    def __init__(
        self, declaration: DatasetDeclaration, project: str, location: str, client: Any = None
    ) -> None:
        if client is None:
            from google.cloud import bigquery

            client = bigquery.Client(project=project or None, location=location or None)
        self._client = client
        self.fact, self.dimensions = relations(declaration, self.engine)
        self.where = f"BigQuery table {self.fact.table}"
        self.bytes_billed = 0

    def columns(self) -> dict[str, str]:
        """The table's columns with BigQuery's type names (``DATETIME``, ``DATE``...)."""
        from google.api_core import exceptions

        try:
            table = self._client.get_table(self.fact.table)
        except exceptions.NotFound:
            raise WarehouseError(
                f"{self.where} does not exist (source.table), or the run's account cannot see it"
            ) from None
        except exceptions.Forbidden as error:
            raise WarehouseError(f"{self.where} cannot be read: {error.message}") from None
        return {field.name: str(field.field_type).upper() for field in table.schema}

    def _config(self, **values: Any) -> Any:
        from google.cloud import bigquery

        return bigquery.QueryJobConfig(**values)

    def _query(self, query: str, config: Any) -> Any:
        """Starts a query job; a query BigQuery refuses is one line (:class:`WarehouseError`)."""
        from google.api_core import exceptions

        try:
            return self._client.query(query, job_config=config)
        except (exceptions.BadRequest, exceptions.NotFound, exceptions.Forbidden) as error:
            first = " ".join(str(error.message).split())
            message = f"BigQuery refused a query of {self.where}'s window: {first}"
            raise WarehouseError(message) from None

    def scanned_bytes(self, query: str) -> int:
        """BigQuery's dry run: the bytes the query would process, billed nothing.

        A query BigQuery refuses (a dataset in another location, a column it cannot read)
        is refused here, in one line, before anything is billed.
        """
        job = self._query(query, self._config(dry_run=True, use_query_cache=False))
        return int(job.total_bytes_processed or 0)

    def read(self, query: str, max_bytes: int) -> pa.Table:
        """Runs the query (capped at ``max_bytes`` billed) and reads its rows as Arrow."""
        config = self._config(maximum_bytes_billed=max_bytes) if max_bytes else self._config()
        job = self._query(query, config)
        rows = job.to_arrow(create_bqstorage_client=True)
        self.bytes_billed += int(job.total_bytes_billed or 0)
        return rows

"""The window extraction: a warehouse source's window, written as the Parquet folder the flow reads.

The declared source (BigQuery on Vertex, DuckDB locally) is queried with the window query the
library writes (:mod:`vertex_retrain.contracts.window_query`): the declared columns, rows
before the start of the period holding ``as_of``. The rows are cast to the declared types
and written one file per period (``<table.folder>/<period start>.parquet``, as a
Parquet folder holds them), with each dimension's file. The folder's name is the content's
digest (``<output_root>/warehouse-windows/<hex>``), so the steps after it, keyed on its URI,
reuse their cached outputs when the window is unchanged and run again when it is not.

Before any row is read, one clear line refuses: a missing table, a time column that is
missing or of another type, a window query over ``source.max_bytes``; after, an empty window.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.atomic_files import atomic_write_bytes
from vertex_retrain.contracts.as_of import parse_as_of
from vertex_retrain.contracts.dataset import (
    Column,
    DatasetDeclaration,
    parse_dataset_declaration,
)
from vertex_retrain.contracts.window_query import (
    dimension_query,
    time_column_problem,
    window_end_of,
    window_query,
)
from vertex_retrain.steps.backend import readable_path
from vertex_retrain.steps.warehouse_readers import (
    BigQueryReader,
    DuckDBReader,
    WarehouseError,
    WindowReader,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["WINDOWS_FOLDER", "ExtractedWindow", "WarehouseError", "extract_window"]

WINDOWS_FOLDER = "warehouse-windows"
"""Under the output root: one folder per extracted window, named by its content digest."""

_COMPLETE = "_COMPLETE"  # written last: a folder without it is an interrupted write


@dataclass(frozen=True)
class ExtractedWindow:
    """What an extraction gave the flow.

    Attributes:
        data_uri: The Parquet folder the data steps read (the input ``data_uri`` for a Parquet
            folder source).
        digest: ``sha256:<hex>`` of the window's content; empty for a Parquet folder source.
        rows: Rows extracted.
        periods: Files written, one per period.
        bytes_scanned: The window query's scan (BigQuery's dry run; DuckDB's estimate).
        bytes_billed: What BigQuery billed for the queries (0 locally).
        reused: The folder of the same content was there already.
    """

    data_uri: str
    digest: str = ""
    rows: int = 0
    periods: int = 0
    bytes_scanned: int = 0
    bytes_billed: int = 0
    reused: bool = False


def _arrow_type(column: Column) -> pa.DataType:
    import pyarrow as pa

    try:
        return pa.type_for_alias(column.type)
    except ValueError:
        if column.type.startswith("timestamp["):
            unit, _, zone = column.type[10:-1].partition(", tz=")
            return pa.timestamp(unit, tz=zone or None)
        precision, scale = column.type.split("(")[1].rstrip(")").split(", ")
        make = pa.decimal256 if column.type.startswith("decimal256") else pa.decimal128
        return make(int(precision), int(scale))


def _as_declared(rows: pa.Table, columns: tuple[Column, ...], where: str) -> pa.Table:
    """The rows with exactly the declared types, in the order the query gave them."""
    import pyarrow as pa

    arrays = []
    for column in columns:
        try:
            arrays.append(rows.column(column.name).cast(_arrow_type(column), safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            found = rows.schema.field(column.name).type
            raise WarehouseError(
                f"{where} column {column.name!r} is {found}, which does not convert to the "
                f"declared {column.type}: {str(error).splitlines()[0]}"
            ) from None
    return pa.table(arrays, names=[c.name for c in columns])


def _parquet_bytes(table: pa.Table) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _by_period(rows: pa.Table, declaration: DatasetDeclaration) -> dict[dt.date, pa.Table]:
    import pyarrow as pa
    import pyarrow.compute as pc

    table = declaration.table
    days = pc.cast(rows.column(table.time_column), pa.date32())
    starts = {day: table.period_start(day) for day in pc.unique(days).to_pylist()}
    periods: dict[dt.date, list[dt.date]] = {}
    for day, start in starts.items():
        periods.setdefault(start, []).append(day)
    return {
        start: rows.filter(pc.is_in(days, value_set=pa.array(members, pa.date32())))
        for start, members in sorted(periods.items())
    }


def _reader(
    backend: str,
    declaration: DatasetDeclaration,
    data_uri: str,
    project: str,
    location: str,
    client: Any,
) -> WindowReader:
    """BigQuery for a BigQuery source on Vertex (or with a client given); DuckDB otherwise."""
    if declaration.source.kind == "bigquery" and (backend == "vertex" or client is not None):
        return BigQueryReader(declaration, project, location, client)
    return DuckDBReader(declaration, readable_path(backend, data_uri))


def _check_columns(declaration: DatasetDeclaration, reader: WindowReader) -> None:
    found, where = reader.columns(), reader.where
    problem = time_column_problem(declaration, reader.engine, found, where)
    if problem:
        raise WarehouseError(problem)
    missing = [c.name for c in declaration.table.columns if c.name not in found]
    if missing:
        raise WarehouseError(
            f"{where} lacks the declared column(s) {', '.join(missing)} (table.columns); its "
            f"columns: {', '.join(sorted(found))}"
        )


def extract_window(
    *,
    backend: str,
    data_uri: str,
    dataset_declaration: Mapping[str, Any],
    as_of: str,
    output_root: str,
    project: str = "",
    location: str = "",
    client: Any = None,
) -> ExtractedWindow:
    """Writes the declared source's window as a Parquet folder; see the module docstring.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        data_uri: The dataset folder a DuckDB database or glob is relative to.
        dataset_declaration: The dataset declaration (its JSON object).
        as_of: The window end, ``YYYY-MM-DD`` (from ``data_window``).
        output_root: Where the window's folder goes (the pipeline root).
        project: The pipeline's project (BigQuery runs and bills the query there).
        location: The pipeline's region (BigQuery runs the query there).
        client: A BigQuery client (a test's fake); the official one when None.

    Raises:
        WarehouseError: The table is missing, the time column missing or mistyped, the window
            query over the byte budget, a column not convertible, or the window empty.
    """
    declaration = parse_dataset_declaration(dataset_declaration)
    source = declaration.source
    if not source.is_warehouse:
        return ExtractedWindow(data_uri=data_uri)
    end = window_end_of(declaration, parse_as_of(as_of))
    reader = _reader(backend, declaration, data_uri, project, location, client)
    _check_columns(declaration, reader)
    query = window_query(declaration, reader.fact, end)
    scanned = reader.scanned_bytes(query)
    if source.max_bytes and scanned > source.max_bytes:
        raise WarehouseError(
            f"the window query of {reader.where} would scan {scanned:,} bytes, over "
            f"source.max_bytes {source.max_bytes:,}; raise the budget, or declare a view or a "
            "partitioned table that holds less"
        )
    rows = reader.read(query, source.max_bytes)
    if rows.num_rows == 0:
        raise WarehouseError(
            f"{reader.where} has no rows before {end.isoformat()} (the window's end: the start "
            f"of the {declaration.table.period} holding as_of {as_of}); check the table and as_of"
        )
    files: dict[str, bytes] = {}
    declared = _as_declared(rows, declaration.table.columns, reader.where)
    for start, part in _by_period(declared, declaration).items():
        files[f"{declaration.table.folder}/{start.isoformat()}.parquet"] = _parquet_bytes(part)
    for name, dimension in declaration.dimensions.items():
        query = dimension_query(declaration, name, reader.dimensions[name])
        found = reader.read(query, source.max_bytes)
        files[dimension.file] = _parquet_bytes(
            _as_declared(found, dimension.columns, f"{reader.where} dimension {name!r}")
        )
    digest = _digest(declaration, end, files)
    folder_uri = f"{output_root.rstrip('/')}/{WINDOWS_FOLDER}/{digest}"
    reused = _write_once(readable_path(backend, folder_uri), files)
    return ExtractedWindow(
        data_uri=folder_uri,
        digest=f"sha256:{digest}",
        rows=rows.num_rows,
        periods=sum(1 for rel in files if rel.startswith(declaration.table.folder + "/")),
        bytes_scanned=scanned,
        bytes_billed=reader.bytes_billed,
        reused=reused,
    )


def _digest(declaration: DatasetDeclaration, end: dt.date, files: Mapping[str, bytes]) -> str:
    """The window's identity: the declaration, its end, and every file's content."""
    record = {
        "declaration": declaration.to_dict(),
        "end": end.isoformat(),
        "files": {rel: hashlib.sha256(data).hexdigest() for rel, data in sorted(files.items())},
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def _write_once(folder: Path, files: Mapping[str, bytes]) -> bool:
    """Writes the files unless a complete folder of the same digest is there; True if it was."""
    if (folder / _COMPLETE).is_file():
        return True
    for rel, data in files.items():
        atomic_write_bytes(folder / rel, data)
    atomic_write_bytes(folder / _COMPLETE, b"")
    return False

"""The window query the library writes from a dataset declaration, for BigQuery or DuckDB.

One declaration, two engines: the declared columns of the declared table, rows whose time
column is before the window's end (the start of the period holding ``as_of``, so only whole
periods are extracted). Identifiers are quoted in each engine's way; nothing of the query is
written by the user. This module is pure: it returns text and checks types by name.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from vertex_retrain.contracts.dataset import DatasetDeclaration, DatasetDeclarationError

__all__ = [
    "bigquery_bytes_of_row",
    "dimension_query",
    "fact_table_sql",
    "size_query",
    "time_column_problem",
    "window_end_of",
    "window_query",
]

# The warehouse types a declared time column may have (the declaration says naive local time).
_TIME_TYPES = {
    "bigquery": {"date32[day]": ("DATE",), "timestamp": ("DATETIME",)},
    "duckdb": {
        "date32[day]": ("DATE",),
        "timestamp": ("TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"),
    },
}

# BigQuery's logical size of a value, by declared Arrow type (its "data size calculation"):
# what an on-demand query is billed for each row of a column it reads. Strings: 2 + length.
_FIXED_BYTES = {"bool": 1, "date32[day]": 8, "date64[ms]": 8, "halffloat": 8, "float": 8}


def window_end_of(declaration: DatasetDeclaration, as_of: dt.date) -> dt.date:
    """The first day not extracted: the start of the period holding ``as_of``.

    The period in progress at ``as_of`` is left out whole, as a Parquet folder's would be.
    """
    return declaration.table.period_start(as_of)


def _quote(name: str, kind: str) -> str:
    mark = "`" if kind == "bigquery" else '"'
    if mark in name:
        raise DatasetDeclarationError(
            f"dataset declaration: column {name!r} holds {mark}, which the {kind} window query "
            "cannot quote; rename the column (a view can)"
        )
    return f"{mark}{name}{mark}"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _from(declaration: DatasetDeclaration, table: str, glob: str, data_root: str) -> str:
    source = declaration.source
    if source.kind == "bigquery":
        return f"`{table}`"
    if glob:
        return f"read_parquet({_literal(data_root.rstrip('/') + '/' + glob)})"
    return ".".join(f'"{part}"' for part in table.split("."))


def fact_table_sql(declaration: DatasetDeclaration, data_root: str = "") -> str:
    """The fact table as a query's ``FROM`` names it (a DuckDB glob: ``read_parquet(...)``)."""
    source = declaration.source
    return _from(declaration, source.table, source.glob, data_root)


def window_query(declaration: DatasetDeclaration, end: dt.date, data_root: str = "") -> str:
    """``SELECT`` the declared columns of the rows before ``end`` (midnight, local time).

    Args:
        declaration: A declaration whose source is ``bigquery`` or ``duckdb``.
        end: The window's end (:func:`window_end_of`).
        data_root: The local dataset folder a DuckDB glob is relative to.
    """
    kind = declaration.source.kind
    table = declaration.table
    columns = ", ".join(_quote(c.name, kind) for c in table.columns)
    time = _quote(table.time_column, kind)
    if table.schema()[table.time_column].startswith("date32"):
        bound = f"DATE {_literal(end.isoformat())}"
    else:
        keyword = "DATETIME" if kind == "bigquery" else "TIMESTAMP"
        bound = f"{keyword} {_literal(end.isoformat() + ' 00:00:00')}"
    return (
        f"SELECT {columns} FROM {fact_table_sql(declaration, data_root)} "
        f"WHERE {time} < {bound} ORDER BY {time}"
    )


def dimension_query(declaration: DatasetDeclaration, name: str, data_root: str = "") -> str:
    """``SELECT`` a dimension's declared columns (its table, or its file with a DuckDB glob)."""
    kind = declaration.source.kind
    dimension = declaration.dimensions[name]
    columns = ", ".join(_quote(c.name, kind) for c in dimension.columns)
    table = declaration.source.dimension_tables.get(name, "")
    glob = "" if table else dimension.file
    return f"SELECT {columns} FROM {_from(declaration, table, glob, data_root)}"


def size_query(declaration: DatasetDeclaration, data_root: str = "") -> str:
    """DuckDB: the row count and the string columns' bytes of the whole fact table.

    The whole table, not the window: BigQuery bills every row of the columns a query reads
    unless the table is partitioned, so the local estimate is the larger of the two.
    """
    table = declaration.table
    parts = ["count(*)"] + [
        f"coalesce(sum(octet_length(CAST({_quote(c.name, 'duckdb')} AS BLOB))), 0)"
        for c in table.columns
        if "string" in c.type or "binary" in c.type
    ]
    return f"SELECT {', '.join(parts)} FROM {fact_table_sql(declaration, data_root)}"


def bigquery_bytes_of_row(declaration: DatasetDeclaration) -> int:
    """The fixed part of a row's BigQuery size: every declared column but strings' contents.

    Strings and bytes count 2 each here; their contents come from :func:`size_query`.
    """
    total = 0
    for column in declaration.table.columns:
        if "string" in column.type or "binary" in column.type:
            total += 2
        elif column.type.startswith("decimal256"):
            total += 32
        elif column.type.startswith("decimal"):
            total += 16
        else:
            total += _FIXED_BYTES.get(column.type, 8)
    return total


def time_column_problem(
    declaration: DatasetDeclaration, found: Mapping[str, str], where: str
) -> str | None:
    """One line when the warehouse table lacks the time column or types it otherwise.

    Args:
        declaration: The declaration (its source's kind names the engine).
        found: The table's columns as ``{name: engine type name}`` (upper case).
        where: The table, for the message.
    """
    kind = declaration.source.kind
    table = declaration.table
    name = table.time_column
    declared = table.schema()[name]
    allowed = _TIME_TYPES[kind]["date32[day]" if declared.startswith("date32") else "timestamp"]
    if name not in found:
        return (
            f"{where} has no column {name!r} (table.time_column); its columns: "
            f"{', '.join(sorted(found)) or 'none'}"
        )
    if found[name].upper() not in allowed:
        return (
            f"{where} column {name!r} (table.time_column) is {found[name]}; the declaration's "
            f"{declared} needs {' or '.join(allowed)} (naive local time; a view can convert it)"
        )
    return None

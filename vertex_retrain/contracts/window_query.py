"""The window query the library writes from a dataset declaration, for BigQuery or DuckDB.

One declaration, two engines: the declared columns of the declared table, rows whose time
column is before the window's end (the start of the period holding ``as_of``, so only whole
periods are extracted). Identifiers are quoted in each engine's way; nothing of the query is
written by the user. This module is pure: it returns text and checks types by name.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from vertex_retrain.contracts.dataset import DatasetDeclaration, DatasetDeclarationError

__all__ = [
    "Relation",
    "bigquery_bytes_of_row",
    "dimension_query",
    "relations",
    "size_query",
    "time_column_problem",
    "window_end_of",
    "window_query",
]

# The warehouse types a declared time column may have (the declaration says naive local time).
_TIME_TYPES: dict[str, dict[str, tuple[str, ...]]] = {
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


@dataclass(frozen=True)
class Relation:
    """What a query reads, as one engine names it.

    Attributes:
        engine: ``bigquery`` or ``duckdb``.
        table: The engine's table name; empty when ``path`` is read.
        path: Local Parquet files (a path or glob) DuckDB reads instead of a table.
    """

    engine: str
    table: str = ""
    path: str = ""

    def sql(self) -> str:
        """The relation as a ``FROM`` clause names it."""
        if self.path:
            return f"read_parquet({_literal(self.path)})"
        if self.engine == "bigquery":
            return f"`{self.table}`"
        return ".".join(f'"{part}"' for part in self.table.split("."))


def relations(
    declaration: DatasetDeclaration, engine: str, data_root: str = ""
) -> tuple[Relation, dict[str, Relation]]:
    """The fact table's and each dimension's relation for ``engine``.

    DuckDB reading a BigQuery declaration (the local backend) reads the table of the same
    dataset and name in the local database: ``project.sales.items`` is ``sales.items``.

    Args:
        declaration: A declaration whose source is ``bigquery`` or ``duckdb``.
        engine: The engine that runs the queries.
        data_root: The local dataset folder a DuckDB glob or a dimension file is under.
    """
    source = declaration.source
    root = data_root.rstrip("/")

    def named(table: str) -> Relation:
        if source.kind == "bigquery" and engine == "duckdb":
            table = ".".join(table.split(".")[-2:])
        return Relation(engine, table)

    if source.glob:
        fact = Relation(engine, path=f"{root}/{source.glob}")
        dimensions = {
            name: Relation(engine, path=f"{root}/{d.file}")
            for name, d in declaration.dimensions.items()
        }
        return fact, dimensions
    return named(source.table), {n: named(t) for n, t in source.dimension_tables.items()}


def _quote(name: str, engine: str) -> str:
    mark = "`" if engine == "bigquery" else '"'
    if mark in name:
        raise DatasetDeclarationError(
            f"dataset declaration: column {name!r} holds {mark}, which the {engine} window "
            "query cannot quote; rename the column (a view can)"
        )
    return f"{mark}{name}{mark}"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def window_query(declaration: DatasetDeclaration, fact: Relation, end: dt.date) -> str:
    """``SELECT`` the declared columns of the rows before ``end`` (midnight, local time).

    Args:
        declaration: The declaration: its table's columns and time column.
        fact: The fact table's relation (:func:`relations`).
        end: The window's end (:func:`window_end_of`).
    """
    engine = fact.engine
    table = declaration.table
    columns = ", ".join(_quote(c.name, engine) for c in table.columns)
    time = _quote(table.time_column, engine)
    if table.schema()[table.time_column].startswith("date32"):
        bound = f"DATE {_literal(end.isoformat())}"
    else:
        keyword = "DATETIME" if engine == "bigquery" else "TIMESTAMP"
        bound = f"{keyword} {_literal(end.isoformat() + ' 00:00:00')}"
    return f"SELECT {columns} FROM {fact.sql()} WHERE {time} < {bound}{_order(columns, engine)}"


def _order(columns: str, engine: str) -> str:
    """The rows' order: what makes the extracted files, and so their digest, repeatable.

    DuckDB keeps the order the rows were stored in (``preserve_insertion_order``), the order
    a Parquet folder's files hold them in, so a model trained on either sees the same rows in
    the same order. BigQuery has no stored order: every column sorts its rows.
    """
    return f" ORDER BY {columns}" if engine == "bigquery" else ""


def dimension_query(declaration: DatasetDeclaration, name: str, relation: Relation) -> str:
    """``SELECT`` a dimension's declared columns."""
    dimension = declaration.dimensions[name]
    columns = ", ".join(_quote(c.name, relation.engine) for c in dimension.columns)
    return f"SELECT {columns} FROM {relation.sql()}{_order(columns, relation.engine)}"


def size_query(declaration: DatasetDeclaration, fact: Relation) -> str:
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
    return f"SELECT {', '.join(parts)} FROM {fact.sql()}"


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
    declaration: DatasetDeclaration, engine: str, found: Mapping[str, str], where: str
) -> str | None:
    """One line when the warehouse table lacks the time column or types it otherwise.

    Args:
        declaration: The declaration.
        engine: The engine whose type names ``found`` holds.
        found: The table's columns as ``{name: engine type name}`` (upper case).
        where: The table, for the message.
    """
    table = declaration.table
    name = table.time_column
    declared = table.schema()[name]
    allowed = _TIME_TYPES[engine]["date32[day]" if declared.startswith("date32") else "timestamp"]
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

"""Where the declared table's rows come from: a Parquet folder, BigQuery or DuckDB.

The dataset declaration's optional ``source`` key (docs/components.md#warehouse-sources)::

    source:                         # absent: a Parquet folder under data_uri (one file a period)
      kind: bigquery                # parquet_folder | bigquery | duckdb
      table: my-project.sales.transactions   # [project.]dataset.table (a view works too)
      dimension_tables: {items: my-project.sales.items}   # default: <table's dataset>.<name>
      max_bytes: 20000000000        # the window query's byte budget (optional)
      database: warehouse.duckdb    # locally: DuckDB reads sales.transactions from this file

    source:
      kind: duckdb
      database: warehouse.duckdb    # a DuckDB file, relative to data_uri
      table: sales                  # a table or view in it
      # or, instead of database and table, Parquet files read through DuckDB:
      glob: raw/*.parquet           # relative to data_uri; dimensions stay their declared files
      max_bytes: 20000000000

The same declaration runs on both backends: on Vertex a BigQuery source is queried in
BigQuery; locally the embedded DuckDB runs the same window over the DuckDB file ``database``
(default ``warehouse.duckdb``), where the table ``<dataset>.<table>`` stands in for it. The
user declares the table and its time column (the declaration's ``table.time_column``); the
library writes the window query (:mod:`vertex_retrain.contracts.window_query`). This
module is pure: it validates values only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from vertex_retrain.contracts.shown import shown

__all__ = [
    "LOCAL_DATABASE",
    "SOURCE_KINDS",
    "WAREHOUSE_KINDS",
    "SourceDeclaration",
    "SourceDeclarationError",
    "parse_source",
]

SOURCE_KINDS = ("parquet_folder", "bigquery", "duckdb")
"""The ``source.kind`` values."""

WAREHOUSE_KINDS = ("bigquery", "duckdb")

LOCAL_DATABASE = "warehouse.duckdb"
"""The local stand-in of a BigQuery source: the DuckDB file, relative to the data URI, whose
``<dataset>.<table>`` tables the local backend reads instead of ``<project>.<dataset>.<table>``."""
"""The kinds whose rows a window extraction writes as a Parquet folder first."""

# [project.]dataset.table: a project id (6-30 characters, may hold dashes and a domain
# prefix), a dataset (letters, digits, underscores) and a table (also dashes).
_BIGQUERY_TABLE = re.compile(
    r"(?:(?:[a-z][a-z0-9.-]*:)?[a-z][a-z0-9-]{4,28}[a-z0-9]\.)?[A-Za-z0-9_]{1,1024}"
    r"\.[A-Za-z0-9_-]{1,1024}"
)
_DUCKDB_TABLE = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*")
_KEYS = ("kind", "table", "dimension_tables", "max_bytes", "database", "glob")


class SourceDeclarationError(ValueError):
    """The ``source`` is malformed; the message names the field, the value and what works."""


@dataclass(frozen=True)
class SourceDeclaration:
    """A validated ``source``.

    Attributes:
        kind: ``parquet_folder``, ``bigquery`` or ``duckdb``.
        table: The fact table: ``[project.]dataset.table`` (BigQuery) or a table of the DuckDB
            database; empty for a Parquet folder or a DuckDB glob.
        database: The DuckDB file, relative to the data URI (for BigQuery: its local
            stand-in).
        glob: Parquet files read through DuckDB, relative to the data URI (DuckDB only).
        dimension_tables: Each dimension's table, by dimension name (defaults filled in).
        max_bytes: The window query's byte budget; 0: none.
    """

    kind: str = "parquet_folder"
    table: str = ""
    database: str = ""
    glob: str = ""
    dimension_tables: dict[str, str] = field(default_factory=dict)
    max_bytes: int = 0

    @property
    def is_warehouse(self) -> bool:
        """Whether a window extraction writes the Parquet folder the flow reads."""
        return self.kind in WAREHOUSE_KINDS

    def to_dict(self) -> dict[str, Any]:
        """The JSON object it parses from (defaults written out)."""
        out: dict[str, Any] = {"kind": self.kind}
        for key in ("table", "database", "glob"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.dimension_tables:
            out["dimension_tables"] = dict(self.dimension_tables)
        if self.max_bytes:
            out["max_bytes"] = self.max_bytes
        return out


def _fail(path: str, value: Any, expected: str) -> NoReturn:
    raise SourceDeclarationError(f"{path} is {shown(value)}; expected {expected}")


def _text(value: Any, path: str, pattern: re.Pattern[str] | None, expected: str) -> str:
    if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
        _fail(path, value, expected)
    return value


def _relative(value: Any, path: str, example: str) -> str:
    text = _text(value, path, None, f"a path relative to the dataset URI (e.g. {example!r})")
    parts = text.split("/")
    if not text or text.startswith("/") or ".." in parts or "://" in text or "'" in text:
        _fail(path, value, f"a path relative to the dataset URI, without '..' (e.g. {example!r})")
    return text


def _bigquery(raw: Mapping[str, Any], dimensions: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    expected = "a BigQuery table as [project.]dataset.table, e.g. 'my-project.sales.transactions'"
    table = _text(raw.get("table"), "source.table", _BIGQUERY_TABLE, expected)
    dataset = table.rsplit(".", 1)[0]
    tables = {name: f"{dataset}.{name}" for name in dimensions}
    for name, value in _dimension_tables(raw, dimensions).items():
        tables[name] = _text(value, f"source.dimension_tables.{name}", _BIGQUERY_TABLE, expected)
    return table, tables


def _dimension_tables(raw: Mapping[str, Any], dimensions: tuple[str, ...]) -> Mapping[str, Any]:
    given = raw.get("dimension_tables") or {}
    if not isinstance(given, Mapping):
        _fail("source.dimension_tables", given, "an object of dimension name -> table")
    for name in given:
        if name not in dimensions:
            known = ", ".join(dimensions) or "none"
            _fail("source.dimension_tables key", name, f"a declared dimension: {known}")
    return given


def _duckdb(
    raw: Mapping[str, Any], dimensions: tuple[str, ...]
) -> tuple[str, str, str, dict[str, str]]:
    has_glob, has_database = raw.get("glob") is not None, raw.get("database") is not None
    if has_glob == has_database:
        _fail(
            "source",
            {k: raw[k] for k in ("database", "glob") if k in raw},
            "either database (a DuckDB file) with table, or glob (Parquet files)",
        )
    if has_glob:
        if raw.get("table") is not None or raw.get("dimension_tables") is not None:
            _fail(
                "source.table",
                raw.get("table", raw.get("dimension_tables")),
                "no table with glob: the glob is the table, dimensions are their files",
            )
        return "", "", _relative(raw["glob"], "source.glob", "raw/*.parquet"), {}
    expected = "a table of the DuckDB database, e.g. 'sales' or 'main.sales'"
    table = _text(raw.get("table"), "source.table", _DUCKDB_TABLE, expected)
    tables = {name: name for name in dimensions}
    for name, value in _dimension_tables(raw, dimensions).items():
        tables[name] = _text(value, f"source.dimension_tables.{name}", _DUCKDB_TABLE, expected)
    database = _relative(raw["database"], "source.database", "warehouse.duckdb")
    return table, database, "", tables


def parse_source(raw: Any, dimensions: tuple[str, ...]) -> SourceDeclaration:
    """Validates the declaration's ``source`` (None: a Parquet folder).

    Args:
        raw: The decoded ``source`` value.
        dimensions: The declared dimensions' names (their tables default to these names).

    Raises:
        SourceDeclarationError: The first problem, as ``<field> is <value>; expected <what works>``.
    """
    if raw is None:
        return SourceDeclaration()
    if not isinstance(raw, Mapping):
        _fail("source", raw, f"an object with keys {', '.join(_KEYS)}")
    for key in raw:
        if key not in _KEYS:
            _fail(f"source.{key}", raw[key], f"one of the keys {', '.join(_KEYS)}")
    kind = raw.get("kind")
    if kind not in SOURCE_KINDS:
        _fail("source.kind", kind, f"one of {', '.join(SOURCE_KINDS)}")
    budget = raw.get("max_bytes", 0)
    # A pipeline's dict parameter travels as a protobuf Struct, whose numbers are doubles.
    if isinstance(budget, float) and budget.is_integer():
        budget = int(budget)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        _fail("source.max_bytes", budget, "a whole number of bytes, 0 or more (0: no budget)")
    if kind == "parquet_folder":
        extra = sorted(k for k in raw if k not in ("kind",))
        if extra:
            _fail(f"source.{extra[0]}", raw[extra[0]], "nothing else with kind parquet_folder")
        return SourceDeclaration()
    if kind == "bigquery":
        if raw.get("glob") is not None:
            _fail("source.glob", raw["glob"], "no glob with kind bigquery")
        table, tables = _bigquery(raw, dimensions)
        given = raw.get("database", LOCAL_DATABASE)
        database = _relative(given, "source.database", LOCAL_DATABASE)
        return SourceDeclaration(kind, table, database, "", tables, budget)
    table, database, glob, tables = _duckdb(raw, dimensions)
    return SourceDeclaration(kind, table, database, glob, tables, budget)

"""The dataset declaration: the user's time-partitioned table, as the data steps read it.

A team declares its data once, as a JSON or YAML object, and passes it to ``check_data`` and
``prepare_dataset`` (the pipelines' ``dataset_declaration`` parameter)::

    format: vertex-retrain-dataset/v1
    table:                        # the fact table: one Parquet file per period
      folder: sales               # <data_uri>/sales/*.parquet
      time_column: day            # timestamp (naive local time) or date32
      period: day                 # day | week
      week_start: monday          # period week only: the weekday a week starts on
      columns: {day: "date32[day]", store: string, item: string, units: double}
      key_columns: [day, store, item]     # may hold no nulls
      distinct_columns: [item]            # distinct values compared with the period before
      group_column: store                 # groups that vanished; mix drift per group
    dimensions:                   # optional lookup tables in <data_uri>/
      items: {file: items.parquet, key: item, columns: {item: string, family: string}}
    mix:                          # optional: category mix drift per group
      category_column: family
      dimension: items            # when the category is a column of a dimension

Every declared column must be in the files with exactly the declared Arrow type (written as
``str(pyarrow_type)``: ``int32``, ``float`` for float32, ``double``, ``timestamp[ms]``,
``date32[day]``...); extra columns are allowed and ignored. A file holds rows of one period
only, because the split moves whole files. A dimension's key column is a table column of the
same name, and every table row's key must be in the dimension (the data gate's
``unknown_keys``). This module is pure: it validates values and builds no Arrow object.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from vertex_retrain.contracts.dataset_source import (
    SourceDeclaration,
    SourceDeclarationError,
    parse_source,
)
from vertex_retrain.contracts.guide import DATASET_DECLARATION, WAREHOUSE_SOURCES, see
from vertex_retrain.contracts.shown import shown

__all__ = [
    "DATASET_FORMAT",
    "PERIODS",
    "WEEKDAYS",
    "Column",
    "DatasetDeclaration",
    "DatasetDeclarationError",
    "Dimension",
    "MixDeclaration",
    "SchemaMismatchError",
    "TableDeclaration",
    "load_dataset_declaration",
    "parse_dataset_declaration",
]

DATASET_FORMAT = "vertex-retrain-dataset/v1"
"""The ``format`` value of a declaration of this shape."""

PERIODS: dict[str, int] = {"day": 1, "week": 7}
"""Partition period -> its length in days."""

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# str(pyarrow type) of the types a declaration may name.
_ARROW_TYPE = re.compile(
    r"(u?int(8|16|32|64)|halffloat|float|double|bool|string|large_string|binary|large_binary"
    r"|date32\[day\]|date64\[ms\]|timestamp\[(s|ms|us|ns)(, tz=[^\]]+)?\]"
    r"|decimal(128|256)\(\d+, \d+\))"
)
_TIME_TYPE = re.compile(r"date32\[day\]|timestamp\[(s|ms|us|ns)\]")
_EXAMPLE_TYPES = "int32, int64, float, double, bool, string, date32[day], timestamp[ms]"


class DatasetDeclarationError(ValueError):
    """The declaration is malformed; the message names the field, the value and what works."""


class SchemaMismatchError(ValueError):
    """A file's columns or types differ from the declaration; the message names each column."""


@dataclass(frozen=True)
class Column:
    """One declared column: its name and Arrow type text (``str(pyarrow_type)``)."""

    name: str
    type: str


def schema_problems(columns: Sequence[Column], found: Mapping[str, str], what: str) -> list[str]:
    """One sentence per declared column missing from ``found`` or of another type.

    Args:
        columns: The declared columns.
        found: The file's schema as ``{name: type text}``.
        what: The table's name in the sentences (``the table``, ``dimension items``).
    """
    problems = []
    for column in columns:
        if column.name not in found:
            problems.append(
                f"column {column.name!r} is missing; {what} declares it with type "
                f"{column.type} (found columns: {', '.join(sorted(found)) or 'none'})"
            )
        elif found[column.name] != column.type:
            problems.append(
                f"column {column.name!r} has type {found[column.name]}; {what} declares "
                f"{column.type}"
            )
    return problems


def check_schema(
    columns: Sequence[Column], found: Mapping[str, str], *, what: str, where: str
) -> None:
    """Raises :class:`SchemaMismatchError` listing every problem of ``found``.

    Args:
        columns: The declared columns.
        found: The file's schema as ``{name: type text}``.
        what: The table's name, for the message.
        where: The file checked, for the message.
    """
    problems = schema_problems(columns, found, what)
    if problems:
        raise SchemaMismatchError(
            f"{where} does not match the dataset declaration "
            f"({see(DATASET_DECLARATION)}):\n  " + "\n  ".join(problems)
        )


@dataclass(frozen=True)
class TableDeclaration:
    """The time-partitioned fact table.

    Attributes:
        folder: Folder of its Parquet files, relative to the dataset URI.
        time_column: The rows' time: ``timestamp[...]`` (naive local time) or ``date32[day]``.
        period: ``day`` or ``week``: each file holds one period.
        week_start: The weekday a week starts on (period ``week``).
        columns: Required columns with their exact types.
        key_columns: Columns that may hold no nulls.
        distinct_columns: Columns whose distinct values are compared with the period before.
        group_column: The column whose groups the gate follows (vanished groups, mix drift).
    """

    folder: str
    time_column: str
    period: str
    columns: tuple[Column, ...]
    week_start: str = "monday"
    key_columns: tuple[str, ...] = ()
    distinct_columns: tuple[str, ...] = ()
    group_column: str | None = None

    def schema(self) -> dict[str, str]:
        """The declared columns as ``{name: type}``, in declaration order."""
        return {column.name: column.type for column in self.columns}

    @property
    def period_days(self) -> int:
        """The period's length in days."""
        return PERIODS[self.period]

    def period_start(self, moment: dt.datetime | dt.date) -> dt.date:
        """The first day of the period holding ``moment``."""
        day = moment.date() if isinstance(moment, dt.datetime) else moment
        if self.period == "day":
            return day
        offset = (day.weekday() - WEEKDAYS.index(self.week_start)) % 7
        return day - dt.timedelta(days=offset)


@dataclass(frozen=True)
class Dimension:
    """A lookup table the fact table's rows name by key.

    Attributes:
        name: Its name in the declaration (and in the gate's messages).
        file: Its Parquet file, relative to the dataset URI.
        key: Its key column; the fact table has a column of the same name.
        columns: Required columns with their exact types (the key among them).
    """

    name: str
    file: str
    key: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class MixDeclaration:
    """Category mix drift per group: which column holds the category, and where.

    Attributes:
        category_column: The category's column.
        dimension: The dimension holding it (joined on its key), or None for a table column.
    """

    category_column: str
    dimension: str | None = None


@dataclass(frozen=True)
class DatasetDeclaration:
    """A validated dataset declaration (see the module docstring).

    Attributes:
        table: The fact table.
        dimensions: Lookup tables, by name.
        mix: Category mix drift per group, or None.
        source: Where the rows come from (:mod:`.dataset_source`); a Parquet folder by default.
    """

    table: TableDeclaration
    dimensions: dict[str, Dimension] = field(default_factory=dict)
    mix: MixDeclaration | None = None
    source: SourceDeclaration = field(default_factory=SourceDeclaration)

    def to_dict(self) -> dict[str, Any]:
        """The declaration as the JSON object it parses from (a pipeline parameter value)."""
        table = self.table
        out: dict[str, Any] = {
            "format": DATASET_FORMAT,
            "table": {
                "folder": table.folder,
                "time_column": table.time_column,
                "period": table.period,
                "week_start": table.week_start,
                "columns": table.schema(),
                "key_columns": list(table.key_columns),
                "distinct_columns": list(table.distinct_columns),
            },
        }
        if table.group_column:
            out["table"]["group_column"] = table.group_column
        if self.dimensions:
            out["dimensions"] = {
                name: {
                    "file": d.file,
                    "key": d.key,
                    "columns": {c.name: c.type for c in d.columns},
                }
                for name, d in self.dimensions.items()
            }
        if self.mix is not None:
            out["mix"] = {"category_column": self.mix.category_column}
            if self.mix.dimension:
                out["mix"]["dimension"] = self.mix.dimension
        if self.source.is_warehouse:
            out["source"] = self.source.to_dict()
        return out


def _fail(path: str, value: Any, expected: str) -> NoReturn:
    raise DatasetDeclarationError(
        f"dataset declaration: {path} is {shown(value)}; expected {expected} "
        f"({see(DATASET_DECLARATION)})"
    )


def _mapping(value: Any, path: str, known: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        _fail(path, value, f"an object with keys {', '.join(known)}")
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        _fail(f"{path}.{unknown[0]}", value[unknown[0]], f"one of the keys {', '.join(known)}")
    return value


def _name(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        _fail(path, value, "a non-empty name without surrounding spaces")
    return value


def _relative(value: Any, path: str) -> str:
    text = _name(value, path)
    parts = text.replace("\\", "/").split("/")
    if text.startswith("/") or ".." in parts or "" in parts or "://" in text:
        _fail(path, value, "a path relative to the dataset URI, without '..' (e.g. 'sales')")
    return text


def _columns(value: Any, path: str) -> tuple[Column, ...]:
    if not isinstance(value, Mapping) or not value:
        _fail(path, value, "an object of column name -> Arrow type, e.g. {'day': 'date32[day]'}")
    columns = []
    for name, kind in value.items():
        _name(name, f"{path} key")
        if not isinstance(kind, str) or not _ARROW_TYPE.fullmatch(kind):
            _fail(f"{path}.{name}", kind, f"an Arrow type as str(pyarrow type): {_EXAMPLE_TYPES}")
        columns.append(Column(name, kind))
    return tuple(columns)


def _names_in(value: Any, path: str, allowed: Mapping[str, str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        _fail(path, value, "a list of declared column names")
    for item in value:
        if item not in allowed:
            _fail(f"{path}", item, f"a declared column: {', '.join(allowed)}")
    return tuple(value)


def _table(value: Any) -> TableDeclaration:
    known = (
        "folder", "time_column", "period", "week_start", "columns", "key_columns",
        "distinct_columns", "group_column",
    )  # fmt: skip
    table = _mapping(value, "table", known)
    columns = _columns(table.get("columns"), "table.columns")
    schema = {c.name: c.type for c in columns}
    time_column = _name(table.get("time_column"), "table.time_column")
    if time_column not in schema:
        _fail("table.time_column", time_column, f"a declared column: {', '.join(schema)}")
    if not _TIME_TYPE.fullmatch(schema[time_column]):
        _fail(
            f"table.columns.{time_column}",
            schema[time_column],
            "date32[day] or a timestamp without time zone (timestamp[ms]...) for the time column",
        )
    period = table.get("period")
    if not isinstance(period, str) or period not in PERIODS:  # a list is unhashable
        _fail("table.period", period, f"one of {', '.join(PERIODS)}")
    week_start = table.get("week_start", "monday")
    if week_start not in WEEKDAYS:
        _fail("table.week_start", week_start, f"one of {', '.join(WEEKDAYS)}")
    group = table.get("group_column")
    if group is not None and (not isinstance(group, str) or group not in schema):
        _fail("table.group_column", group, f"a declared column: {', '.join(schema)}")
    return TableDeclaration(
        folder=_relative(table.get("folder"), "table.folder"),
        time_column=time_column,
        period=period,
        week_start=week_start,
        columns=columns,
        key_columns=_names_in(table.get("key_columns"), "table.key_columns", schema),
        distinct_columns=_names_in(table.get("distinct_columns"), "table.distinct_columns", schema),
        group_column=group,
    )


def _dimension(name: str, value: Any, table: TableDeclaration) -> Dimension:
    path = f"dimensions.{name}"
    dimension = _mapping(value, path, ("file", "key", "columns"))
    columns = _columns(dimension.get("columns"), f"{path}.columns")
    key = _name(dimension.get("key"), f"{path}.key")
    own = {c.name: c.type for c in columns}
    if key not in own:
        _fail(f"{path}.key", key, f"one of its declared columns: {', '.join(own)}")
    if key not in table.schema():
        _fail(
            f"{path}.key",
            key,
            f"a column the table declares too (the rows name the {name} by it): "
            f"{', '.join(table.schema())}",
        )
    return Dimension(name, _relative(dimension.get("file"), f"{path}.file"), key, columns)


def _mix(
    value: Any, table: TableDeclaration, dimensions: Mapping[str, Dimension]
) -> MixDeclaration:
    mix = _mapping(value, "mix", ("category_column", "dimension"))
    if table.group_column is None:
        _fail("table.group_column", None, "a declared column when 'mix' is declared")
    category = _name(mix.get("category_column"), "mix.category_column")
    where = mix.get("dimension")
    if where is None:
        if category not in table.schema():
            _fail("mix.category_column", category, f"a table column: {', '.join(table.schema())}")
        return MixDeclaration(category)
    if not isinstance(where, str) or where not in dimensions:
        _fail("mix.dimension", where, f"a declared dimension: {', '.join(dimensions) or 'none'}")
    own = [c.name for c in dimensions[where].columns]
    if category not in own:
        _fail("mix.category_column", category, f"a column of dimension {where}: {', '.join(own)}")
    return MixDeclaration(category, where)


def parse_dataset_declaration(value: Any) -> DatasetDeclaration:
    """Validates a decoded declaration (see the module docstring).

    Args:
        value: The decoded JSON or YAML object.

    Returns:
        The declaration.

    Raises:
        DatasetDeclarationError: The first problem found, naming the field (``table.period``),
            its value and what is expected.
    """
    if isinstance(value, Mapping) and not value:
        _fail(
            "the declaration",
            value,
            "a dataset declaration (format, table, and optionally dimensions and mix); "
            "pass --param dataset_declaration=@dataset.yaml",
        )
    top = _mapping(value, "the declaration", ("format", "table", "dimensions", "mix", "source"))
    if top.get("format") != DATASET_FORMAT:
        _fail("format", top.get("format"), repr(DATASET_FORMAT))
    table = _table(top.get("table"))
    raw_dimensions = top.get("dimensions") or {}
    if not isinstance(raw_dimensions, Mapping):
        _fail("dimensions", raw_dimensions, "an object of name -> {file, key, columns}")
    dimensions = {
        _name(name, "dimensions key"): _dimension(name, item, table)
        for name, item in raw_dimensions.items()
    }
    mix = _mix(top["mix"], table, dimensions) if top.get("mix") is not None else None
    try:
        source = parse_source(top.get("source"), tuple(dimensions))
    except SourceDeclarationError as error:
        raise DatasetDeclarationError(
            f"dataset declaration: {error} ({see(WAREHOUSE_SOURCES)})"
        ) from None
    return DatasetDeclaration(table=table, dimensions=dimensions, mix=mix, source=source)


def load_dataset_declaration(path: str | Path) -> dict[str, Any]:
    """Reads and validates a declaration file (JSON or YAML, bounded); returns its JSON object.

    The object, not the dataclass, is what a pipeline parameter carries.

    Raises:
        DatasetDeclarationError: The file is unreadable or the declaration malformed.
    """
    from vertex_retrain.specs.safe_load import JOB_FILE_LIMITS, LoadError, load_file

    try:
        value = load_file(path, limits=JOB_FILE_LIMITS)
    except LoadError as error:
        raise DatasetDeclarationError(f"{path}: {error}") from None
    return parse_dataset_declaration(value).to_dict()

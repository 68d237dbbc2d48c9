"""check_data's logic: measure the window's newest period and the one before, then judge them.

The statistics are computed with ``pyarrow.compute`` on the period's files (read with the
declared columns only); the judgement is :func:`vertex_retrain.contracts.gate_rules.
evaluate_gate`. A period whose columns cannot be read as the declared types is reported as a
``schema`` breach and not measured.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.contracts.as_of import (
    DataWindowError,
    check_after_start,
    cut_of,
    select_before,
)
from vertex_retrain.contracts.dataset import DatasetDeclaration, parse_dataset_declaration
from vertex_retrain.contracts.gate_report import (
    DataGateInputError,
    GateReport,
    PeriodStatistics,
    SchemaProblem,
    parse_accept,
    thresholds_from,
)
from vertex_retrain.contracts.gate_rules import evaluate_gate
from vertex_retrain.steps.table_files import (
    DatasetFolder,
    ScannedFile,
    as_datetime,
    open_dataset,
    scan_file,
)
from vertex_retrain.steps.window import window_end

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "DataGateBreachError",
    "DataGateInputError",
    "DataWindowError",
    "GateReport",
    "check_data",
    "period_statistics",
]


class DataGateBreachError(RuntimeError):
    """The period broke the data gate; the message is the gate's one-line verdict."""


def check_data(
    *,
    backend: str,
    data_uri: str,
    dataset_declaration: Mapping[str, Any],
    as_of: str = "",
    thresholds: Mapping[str, Any] | None = None,
    accept: str = "",
    now: dt.datetime | None = None,
) -> GateReport:
    """Checks the newest period before ``as_of`` against the declaration and the one before.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        data_uri: The dataset folder the declaration describes.
        dataset_declaration: The dataset declaration (its JSON object).
        as_of: The window end, ``YYYY-MM-DD``; empty: today (UTC).
        thresholds: Partial :class:`~vertex_retrain.contracts.gate_report.GateThresholds`.
        accept: Comma-separated check names whose breaches do not stop the run.
        now: The clock (a test's).

    Returns:
        The report; the caller stops the run when ``passed`` is False.

    Raises:
        DatasetDeclarationError: The declaration is malformed.
        DataGateInputError: An unknown threshold or check name.
        DataWindowError: ``as_of`` is malformed, in the future, or before the data.
        FileNotFoundError: The dataset folder or one of its parts is missing.
    """
    import pyarrow.parquet as pq

    declaration = parse_dataset_declaration(dataset_declaration)
    table = declaration.table
    limits = thresholds_from(thresholds)
    accepted = parse_accept(accept)
    end = window_end(as_of, now=now)
    folder = open_dataset(backend, data_uri, declaration)
    scanned = [scan_file(pq.ParquetFile(p), p, folder.rel(p), table) for p in folder.files]
    placed = [s for s in scanned if s.rows == 0 or (s.span.first and s.periods)]
    unplaced = [s for s in scanned if s not in placed]
    selection = select_before((s.span for s in placed), cut_of(end))
    if not selection.included and not unplaced:
        starts = [s.first for s in selection.partial + selection.after if s.first is not None]
        if starts:
            check_after_start(end, min(starts))
        raise DataWindowError(
            f"as_of {end.isoformat()} leaves no complete {table.period} in {folder.shown}; "
            "give a later date"
        )
    included = {span.path for span in selection.included}
    in_window = [s for s in placed if s.rel in included]
    problems = [p for s in in_window + unplaced for p in _schema_problems(s, declaration)]
    by_period: dict[dt.date, list[ScannedFile]] = {}
    for item in in_window:
        if item.periods is not None:
            by_period.setdefault(item.periods[0], []).append(item)
    newest = sorted(by_period, reverse=True)[:2]
    lookups = _dimension_keys(folder, declaration)
    measured = [
        _measure(by_period[period], period, declaration, lookups) if lookups is not None else None
        for period in newest
    ]
    report = evaluate_gate(
        declaration=declaration,
        as_of=end,
        current=measured[0] if measured else None,
        previous=measured[1] if len(measured) > 1 else None,
        schema_problems=problems,
        empty_files=[span.path for span in selection.empty],
        thresholds=limits,
        accept=accepted,
    )
    files = [s.path for s in in_window + unplaced] + list(folder.dimensions.values())
    return replace(report, window_digest=files_digest(folder, files))


def files_digest(folder: DatasetFolder, paths: Sequence[Path]) -> str:
    """``sha256:<hex>`` of each file's path in the folder, size and modification time.

    What the files are, without reading them: a file rewritten in place (a corrected or
    re-exported period) has a new time, so the steps keyed on this run again. Reading every
    byte would cost a full read of the window each week; a copy that changes only the time
    costs a recomputation, never a stale answer.
    """
    entries = []
    for path in sorted(paths):
        found = path.stat()
        entries.append(f"{folder.rel(path)}\t{found.st_size}\t{found.st_mtime_ns}")
    return "sha256:" + hashlib.sha256("\n".join(entries).encode()).hexdigest()


def _schema_problems(item: ScannedFile, declaration: DatasetDeclaration) -> list[SchemaProblem]:
    return [
        SchemaProblem(item.rel, column.name, item.schema.get(column.name, "missing"), column.type)
        for column in declaration.table.columns
        if item.schema.get(column.name) != column.type
    ]


def _dimension_keys(
    folder: DatasetFolder, declaration: DatasetDeclaration
) -> dict[str, pa.Table] | None:
    """Each dimension's key column (and the mix category, where it lives there).

    None when a dimension cannot be read as declared: ``prepare_dataset``'s check names what
    is wrong with it.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    mix = declaration.mix
    found: dict[str, pa.Table] = {}
    try:
        for name, path in folder.dimensions.items():
            dimension = declaration.dimensions[name]
            columns = [dimension.key]
            if mix is not None and mix.dimension == name:
                columns.append(mix.category_column)
            types = {c.name: pa.type_for_alias(c.type) for c in dimension.columns}
            table = pq.read_table(path, columns=columns)
            found[name] = table.cast(pa.schema([(c, types[c]) for c in columns]))
    except (KeyError, ValueError, pa.ArrowException):
        return None
    return found


def _measure(
    files: list[ScannedFile],
    period: dt.date,
    declaration: DatasetDeclaration,
    lookups: Mapping[str, pa.Table],
) -> PeriodStatistics | None:
    """Reads the period's files as the declared types; None when they cannot be read so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    declared = declaration.table.schema()
    target = pa.schema([(name, pa.type_for_alias(kind)) for name, kind in declared.items()])
    try:
        tables = [
            pq.read_table(item.path, columns=list(declared)).select(list(declared)).cast(target)
            for item in files
        ]
    except (KeyError, ValueError, pa.ArrowException):
        return None  # reported as a schema breach
    return period_statistics(pa.concat_tables(tables), period, declaration, lookups)


def _counts(keys: pa.Array, values: pa.Array | None = None) -> dict[str, Any]:
    """Rows per key (as text), or per key and value when ``values`` is given."""
    import pyarrow as pa

    if values is None:
        grouped = pa.table({"k": keys}).group_by("k").aggregate([("k", "count")])
        return {
            str(k): int(n)
            for k, n in zip(grouped["k"].to_pylist(), grouped["k_count"].to_pylist(), strict=True)
            if k is not None
        }
    pairs = pa.table({"k": keys, "v": values}).group_by(["k", "v"]).aggregate([("k", "count")])
    nested: dict[str, dict[str, int]] = {}
    for k, v, n in zip(
        pairs["k"].to_pylist(), pairs["v"].to_pylist(), pairs["k_count"].to_pylist(), strict=True
    ):
        if k is not None and v is not None:
            nested.setdefault(str(k), {})[str(v)] = int(n)
    return nested


def period_statistics(
    table: pa.Table,
    period: dt.date,
    declaration: DatasetDeclaration,
    lookups: Mapping[str, pa.Table],
) -> PeriodStatistics:
    """Measures one period's rows (declared columns, declared types).

    Args:
        table: The period's rows.
        period: Its first day.
        declaration: The dataset declaration.
        lookups: Each dimension's key column (and the mix category where it lives there).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    spec = declaration.table
    rows = table.num_rows
    times = table.column(spec.time_column)
    bounds = pc.min_max(times)
    days = times if pa.types.is_date(times.type) else pc.cast(times, pa.date32())
    unknown = {}
    for name, keys in lookups.items():
        key = declaration.dimensions[name].key
        known = pc.is_in(table.column(key), value_set=keys.column(key).combine_chunks())
        unknown[name] = rows - int(pc.sum(known).as_py() or 0)
    group_rows: dict[str, int] = {}
    mix: dict[str, Any] = {}
    if spec.group_column:
        groups = table.column(spec.group_column).combine_chunks()
        group_rows = _counts(groups)
        if declaration.mix is not None:
            mix = _counts(groups, _categories(table, declaration, lookups))
    return PeriodStatistics(
        period=period,
        rows=rows,
        first=as_datetime(bounds["min"].as_py()) or dt.datetime.min,
        last=as_datetime(bounds["max"].as_py()) or dt.datetime.min,
        days_covered=int(pc.count_distinct(days).as_py()),
        nulls={name: table.column(name).null_count for name in table.column_names},
        duplicate_rows=rows - table.group_by(table.column_names).aggregate([]).num_rows,
        distinct={
            c: int(pc.count_distinct(table.column(c)).as_py()) for c in spec.distinct_columns
        },
        group_rows=group_rows,
        unknown_rows=unknown,
        category_mix=mix,
    )


def _categories(
    table: pa.Table, declaration: DatasetDeclaration, lookups: Mapping[str, pa.Table]
) -> pa.Array:
    """Each row's mix category: a table column, or looked up in its dimension by key."""
    import pyarrow.compute as pc

    mix = declaration.mix
    if mix is None:
        raise ValueError("the dataset declaration declares no mix")
    if mix.dimension is None:
        return table.column(mix.category_column).combine_chunks()
    key = declaration.dimensions[mix.dimension].key
    lookup = lookups[mix.dimension]
    position = pc.index_in(table.column(key), value_set=lookup.column(key).combine_chunks())
    return pc.take(lookup.column(mix.category_column).combine_chunks(), position)

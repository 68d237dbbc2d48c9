"""check_data's logic: measure the window's newest week and the week before, then judge them.

The statistics are computed with ``pyarrow.compute`` on the week's files (read with the
contract's columns only); the judgement is :func:`vertex_retrain.contracts.data_gate.
evaluate_gate`. A week whose columns cannot be read as the contract's types is reported as a
``schema`` breach and not measured.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vertex_retrain.contracts.data_gate import (
    DataGateInputError,
    GateReport,
    SchemaProblem,
    WeekStatistics,
    evaluate_gate,
    parse_accept,
    thresholds_from,
)
from vertex_retrain.contracts.data_window import (
    DataWindowError,
    check_after_start,
    cut_of,
    select_before,
)
from vertex_retrain.contracts.transactions import DRINKS_FILE, STORES_FILE, TRANSACTIONS
from vertex_retrain.steps.transactions_files import (
    TIMESTAMP_COLUMN,
    DatasetFolder,
    ScannedFile,
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
    "week_statistics",
]


class DataGateBreachError(RuntimeError):
    """The week broke the data gate; the message is the gate's one-line verdict."""


@dataclass(frozen=True)
class Catalogue:
    """The ids the transactions may name, and each drink's category."""

    store_ids: pa.Array
    drink_ids: pa.Array
    drink_categories: pa.Array


def check_data(
    *,
    backend: str,
    transactions_uri: str,
    as_of: str = "",
    thresholds: Mapping[str, Any] | None = None,
    accept: str = "",
    now: dt.datetime | None = None,
) -> GateReport:
    """Checks the newest week before ``as_of`` against the contract and the week before.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        transactions_uri: The dataset folder (transactions contract).
        as_of: The window end, ``YYYY-MM-DD``; empty: today (UTC).
        thresholds: Partial :class:`~vertex_retrain.contracts.data_gate.GateThresholds`.
        accept: Comma-separated check names whose breaches do not stop the run.
        now: The clock (a test's).

    Returns:
        The report; the caller stops the run when ``passed`` is False.

    Raises:
        DataGateInputError: An unknown threshold or check name.
        DataWindowError: ``as_of`` is malformed, in the future, or before the data.
        FileNotFoundError: The dataset folder or one of its parts is missing.
    """
    import pyarrow.parquet as pq

    limits = thresholds_from(thresholds)
    accepted = parse_accept(accept)
    end = window_end(as_of, now=now)
    folder = open_dataset(backend, transactions_uri)
    scanned = [scan_file(pq.ParquetFile(p), p, folder.rel(p)) for p in folder.transactions]
    placed = [s for s in scanned if s.rows == 0 or (s.span.first and s.weeks)]
    unplaced = [s for s in scanned if s not in placed]
    selection = select_before((s.span for s in placed), cut_of(end))
    if not selection.included and not unplaced:
        starts = [s.first for s in selection.partial + selection.after if s.first is not None]
        if starts:
            check_after_start(end, min(starts))
        raise DataWindowError(
            f"as_of {end.isoformat()} leaves no complete week in {folder.shown}; give a later date"
        )
    included = {span.path for span in selection.included}
    in_window = [s for s in placed if s.rel in included]
    problems = [p for s in in_window + unplaced for p in _schema_problems(s)]
    by_week: dict[int, list[ScannedFile]] = {}
    for item in in_window:
        by_week.setdefault(item.weeks[0] if item.weeks else -1, []).append(item)
    weeks = sorted(by_week, reverse=True)
    catalogue = _catalogue(folder)
    measured = [
        _measure(by_week[week], week, catalogue) if catalogue is not None else None
        for week in weeks[:2]
    ]
    current = measured[0] if measured else None
    previous = measured[1] if len(measured) > 1 else None
    return evaluate_gate(
        as_of=end,
        current=current,
        previous=previous,
        schema_problems=problems,
        empty_files=[span.path for span in selection.empty],
        thresholds=limits,
        accept=accepted,
    )


def _schema_problems(item: ScannedFile) -> list[SchemaProblem]:
    return [
        SchemaProblem(item.rel, column.name, item.schema.get(column.name, "missing"), column.type)
        for column in TRANSACTIONS.columns
        if item.schema.get(column.name) != column.type
    ]


def _catalogue(folder: DatasetFolder) -> Catalogue | None:
    """Store and drink ids from the catalogue files (None if they cannot be read so)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        stores = pq.read_table(folder.catalogue[STORES_FILE], columns=["store_id"])
        drinks = pq.read_table(folder.catalogue[DRINKS_FILE], columns=["drink_id", "category_id"])
        return Catalogue(
            store_ids=stores.column("store_id").combine_chunks().cast(pa.int32()),
            drink_ids=drinks.column("drink_id").combine_chunks().cast(pa.int32()),
            drink_categories=drinks.column("category_id").combine_chunks(),
        )
    except (KeyError, ValueError, pa.ArrowException):
        return None  # prepare_dataset's contract check names what is wrong with them


def _measure(files: list[ScannedFile], week: int, catalogue: Catalogue) -> WeekStatistics | None:
    """Reads the week's files as the contract's types; None when they cannot be read so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    declared = TRANSACTIONS.schema()
    target = pa.schema([(name, pa.type_for_alias(kind)) for name, kind in declared.items()])
    try:
        tables = [
            pq.read_table(item.path, columns=list(declared)).select(list(declared)).cast(target)
            for item in files
        ]
    except (KeyError, ValueError, pa.ArrowException):
        return None  # reported as a schema breach
    return week_statistics(pa.concat_tables(tables), week, catalogue)


def week_statistics(table: pa.Table, week: int, catalogue: Catalogue) -> WeekStatistics:
    """Measures one week's transactions (contract columns, contract types).

    Args:
        table: The week's rows.
        week: Its week index.
        catalogue: The ids the rows may name.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.num_rows
    stores = table.group_by("store_id").aggregate([("store_id", "count")])
    store_rows = {
        int(store): int(count)
        for store, count in zip(
            stores.column("store_id").to_pylist(),
            stores.column("store_id_count").to_pylist(),
            strict=True,
        )
        if store is not None
    }
    bounds = pc.min_max(table.column(TIMESTAMP_COLUMN))
    distinct_rows = table.group_by(table.column_names).aggregate([]).num_rows
    known_store = pc.is_in(table.column("store_id"), value_set=catalogue.store_ids)
    known_drink = pc.is_in(table.column("drink_id"), value_set=catalogue.drink_ids)
    category = pc.take(
        catalogue.drink_categories,
        pc.index_in(table.column("drink_id"), value_set=catalogue.drink_ids),
    )
    pairs = pa.table({"store": table.column("store_id"), "category": category}).filter(
        pc.is_valid(category)
    )
    mix_counts = pairs.group_by(["store", "category"]).aggregate([("store", "count")])
    mix: dict[int, dict[int, int]] = {}
    for store, kind, count in zip(
        mix_counts.column("store").to_pylist(),
        mix_counts.column("category").to_pylist(),
        mix_counts.column("store_count").to_pylist(),
        strict=True,
    ):
        if store is not None:
            mix.setdefault(int(store), {})[int(kind)] = int(count)
    return WeekStatistics(
        week=week,
        rows=rows,
        members=int(pc.count_distinct(table.column("member_id")).as_py()),
        drinks=int(pc.count_distinct(table.column("drink_id")).as_py()),
        store_rows=store_rows,
        nulls={name: table.column(name).null_count for name in table.column_names},
        first=bounds["min"].as_py(),
        last=bounds["max"].as_py(),
        days_covered=int(
            pc.count_distinct(pc.cast(table.column(TIMESTAMP_COLUMN), pa.date32())).as_py()
        ),
        duplicate_rows=rows - distinct_rows,
        unknown_store_rows=rows - int(pc.sum(known_store).as_py() or 0),
        unknown_drink_rows=rows - int(pc.sum(known_drink).as_py() or 0),
        category_mix=mix,
    )

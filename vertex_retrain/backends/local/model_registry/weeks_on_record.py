"""The weeks on record: each local pipeline run's record, in the registry database.

One row per run (table ``pipeline_runs``, schema version 3), written by the run summary through
``LocalBackend.record_run`` and read by ``vertex-retrain history``. A second write for the same
run (a re-run of the exit handler) replaces the first.

A row is read at the edge like any input: its record must be a JSON object of the record's
shape within :data:`RECORD_LIMITS`; a row that is not (invalid JSON, ``null``, a list, deep
nesting, a field of another type) is listed as an ``UNREADABLE`` run of its model with the
reason in ``error``, and the other rows are still listed. A non-finite number (``NaN``, which
Python's JSON writer emits) is read as null, so ``history --json`` stays strict JSON.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import MISSING, Field, fields, replace
from typing import Any

from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryDatabase,
    RegistryInputError,
    RegistryNotFoundError,
    utc_now,
)
from vertex_retrain.run_record import RunRecord
from vertex_retrain.specs.safe_load import Limits, LoadError, check_tree

RECORD_LIMITS = Limits(max_bytes=1 << 20, max_depth=16, max_values=100_000, max_aliases=0)
"""A stored record's bounds: a record nests four levels deep and holds a few hundred values."""

UNREADABLE = "UNREADABLE"
"""The state of a run whose stored record cannot be read (its reason is in ``error``)."""


class RunHistory:
    """The pipeline runs recorded under one local root.

    Args:
        db: The registry database, or its path (default ``<local root>/registry.db``).
    """

    def __init__(self, db: RegistryDatabase | str | os.PathLike[str] | None = None) -> None:
        self.db = db if isinstance(db, RegistryDatabase) else RegistryDatabase(db)

    def record(self, record: RunRecord) -> None:
        """Writes (or replaces) the record of ``record.run``.

        Raises:
            RegistryInputError: The record names no run or no model.
        """
        if not record.run or not record.model:
            raise RegistryInputError(
                f"a run record needs a run name and a model; got run={record.run!r}, "
                f"model={record.model!r}"
            )
        if not record.recorded_at:
            # The record read back carries the time too: history orders a week's runs by it.
            record = replace(record, recorded_at=utc_now())
        with self.db.write() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO pipeline_runs (run_name, model, backend, state, as_of, "
                "record_json, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.run,
                    record.model,
                    record.backend,
                    record.state,
                    record.as_of,
                    json.dumps(record.to_dict(), sort_keys=True),
                    record.recorded_at,
                ),
            )

    def models(self) -> list[str]:
        """The models with at least one recorded run, sorted."""
        with self.db.read() as connection:
            rows = connection.execute(
                "SELECT DISTINCT model FROM pipeline_runs ORDER BY model"
            ).fetchall()
        return [str(row[0]) for row in rows]

    def weeks(self, model: str | None = None) -> list[RunRecord]:
        """The recorded runs, oldest week first (then in the order they were recorded).

        Args:
            model: Only this model's runs; None: every model's.

        Raises:
            RegistryNotFoundError: ``model`` has no recorded run; the message lists those
                that have.
        """
        query = "SELECT run_name, model, backend, as_of, recorded_at, record_json FROM "
        query += "pipeline_runs"
        parameters: tuple[str, ...] = ()
        if model is not None:
            query += " WHERE model = ?"
            parameters = (model,)
        query += " ORDER BY model, as_of, recorded_at, run_name"
        with self.db.read() as connection:
            rows = connection.execute(query, parameters).fetchall()
        if model is not None and not rows:
            known = self.models()
            raise RegistryNotFoundError(
                f"no recorded runs of model {model!r}; "
                + (f"models with runs: {', '.join(known)}" if known else "no run is recorded yet")
            )
        return [_record(row) for row in rows]


def _record(row: tuple[Any, ...]) -> RunRecord:
    """The row's record, or an ``UNREADABLE`` one built from its columns with the reason."""
    *columns, text = row
    try:
        raw = json.loads(text, parse_constant=lambda _: None, parse_float=_finite_or_none)
    except (TypeError, ValueError, RecursionError) as error:
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        return _unreadable(columns, f"not valid JSON ({reason})")
    problem = _shape_problem(raw)
    if problem:
        return _unreadable(columns, problem)
    return RunRecord.from_dict(raw)


def _finite_or_none(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None


def _expected_types(spec: Field[Any]) -> tuple[type, ...] | None:
    """The JSON types a stored field may take, read from the record's declaration (so a field
    added to :class:`RunRecord` is checked without a change here); None: not checked."""
    if spec.default_factory is not MISSING:
        return (type(spec.default_factory()),)
    declared = str(spec.type)
    if declared == "str":
        return (str,)
    if "float" in declared or "int" in declared:  # a number, or None when it is optional
        return (int, float, type(None)) if "None" in declared else (int, float)
    return None


_TYPES = {
    spec.name: types for spec in fields(RunRecord) if (types := _expected_types(spec)) is not None
}
"""Each stored field's JSON types (a bool is refused where a number is expected)."""
_REQUIRED = ("run", "model", "backend", "state")


def _shape_problem(raw: Any) -> str | None:
    """Why ``raw`` is not a stored record (one line), or None."""
    if not isinstance(raw, dict):
        return f"the record is {type(raw).__name__}, not a JSON object"
    try:
        check_tree(raw, source="the record", limits=RECORD_LIMITS)
    except LoadError as error:
        return str(error)
    for name in _REQUIRED:
        if name not in raw:
            return f"the record has no {name}"
    for name, types in _TYPES.items():
        if name in raw and (not isinstance(raw[name], types) or isinstance(raw[name], bool)):
            return f"the record's {name} is {type(raw[name]).__name__}"
    metrics = [
        raw.get("candidate", {}),
        raw.get("champion", {}),
        *raw.get("references", {}).values(),
    ]
    for values in metrics:
        if not isinstance(values, Mapping) or not all(_number(v) for v in values.values()):
            return "the record holds a metric that is not a number"
    statistics = raw.get("data", {}).get("statistics")
    if statistics is not None and not isinstance(statistics, Mapping):
        return "the record's data statistics are not an object"
    money = [raw.get("cost", {}).get("spot_plan"), raw.get("spot_fallback", {}).get("total_cost")]
    if not all(_number(v) for v in money):
        return "the record holds a cost that is not a number"
    return None


def _number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _unreadable(columns: list[Any], reason: str) -> RunRecord:
    run, model, backend, as_of, recorded_at = (
        value if isinstance(value, str) else "" for value in columns
    )
    return RunRecord(
        run=run,
        model=model,
        backend=backend,
        state=UNREADABLE,
        recorded_at=recorded_at,
        as_of=as_of,
        error=f"the stored record of this run is unreadable: {reason}",
    )

"""The weeks on record: each local pipeline run's record, in the registry database.

One row per run (table ``pipeline_runs``, schema version 3), written by the run summary through
``LocalBackend.record_run`` and read by ``vertex-retrain history``. A second write for the same
run (a re-run of the exit handler) replaces the first.
"""

from __future__ import annotations

import json
import os

from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryDatabase,
    RegistryInputError,
    RegistryNotFoundError,
    utc_now,
)
from vertex_retrain.run_record import RunRecord


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
                    record.recorded_at or utc_now(),
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
        query = "SELECT record_json FROM pipeline_runs"
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
        return [RunRecord.from_dict(json.loads(row[0])) for row in rows]

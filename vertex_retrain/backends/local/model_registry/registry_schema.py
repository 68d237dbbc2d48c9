"""Schema of the local registry database and its migrations (`PRAGMA user_version`).

Each migration moves the schema up by one version; `SCHEMA_VERSION` is the number of
migrations. A database is migrated inside one `BEGIN IMMEDIATE` transaction, so two processes
opening an old database at once cannot both migrate it, and a crash mid-migration leaves the
old schema intact.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

_V1_MODELS = """
CREATE TABLE models (
    model_id      INTEGER PRIMARY KEY,
    display_name  TEXT    NOT NULL UNIQUE,
    next_version  INTEGER NOT NULL DEFAULT 1,
    created_at    TEXT    NOT NULL
);
CREATE TABLE model_versions (
    model_id               INTEGER NOT NULL REFERENCES models(model_id),
    version_id             INTEGER NOT NULL,
    artifact_uri           TEXT    NOT NULL,
    container_spec_json    TEXT    NOT NULL,
    labels_json            TEXT    NOT NULL,
    metrics_json           TEXT    NOT NULL,
    description            TEXT    NOT NULL,
    sample_instances_json  TEXT,
    pipeline_run           TEXT,
    dataset_uri            TEXT,
    dataset_manifest_json  TEXT,
    parent_version         INTEGER,
    request_id             TEXT,
    created_at             TEXT    NOT NULL,
    updated_at             TEXT    NOT NULL,
    PRIMARY KEY (model_id, version_id),
    UNIQUE (model_id, request_id)
);
-- The primary key makes an alias unique per model: it can name at most one version.
CREATE TABLE version_aliases (
    model_id    INTEGER NOT NULL,
    alias       TEXT    NOT NULL,
    version_id  INTEGER NOT NULL,
    PRIMARY KEY (model_id, alias),
    FOREIGN KEY (model_id, version_id) REFERENCES model_versions(model_id, version_id)
);
CREATE INDEX version_aliases_by_version ON version_aliases(model_id, version_id);
"""

_V2_ENDPOINTS = """
CREATE TABLE id_counters (
    name  TEXT    PRIMARY KEY,
    next  INTEGER NOT NULL
);
CREATE TABLE endpoints (
    endpoint_id   INTEGER PRIMARY KEY,
    display_name  TEXT    NOT NULL UNIQUE,
    created_at    TEXT    NOT NULL
);
CREATE TABLE deployed_models (
    deployed_model_id      INTEGER PRIMARY KEY,
    endpoint_id            INTEGER NOT NULL REFERENCES endpoints(endpoint_id),
    model_id               INTEGER NOT NULL,
    version_id             INTEGER NOT NULL,
    traffic                INTEGER NOT NULL CHECK (traffic BETWEEN 0 AND 100),
    pid                    INTEGER,
    pid_start_time         TEXT,
    port                   INTEGER,
    log_path               TEXT,
    predict_route          TEXT    NOT NULL,
    health_route           TEXT    NOT NULL,
    sample_instances_json  TEXT    NOT NULL,
    deployed_at            TEXT    NOT NULL,
    FOREIGN KEY (model_id, version_id) REFERENCES model_versions(model_id, version_id)
);
CREATE INDEX deployed_models_by_endpoint ON deployed_models(endpoint_id);
-- One row per traffic change; rollback marks the newest live row rolled back.
CREATE TABLE traffic_history (
    endpoint_id  INTEGER NOT NULL REFERENCES endpoints(endpoint_id),
    seq          INTEGER NOT NULL,
    action       TEXT    NOT NULL,
    split_json   TEXT    NOT NULL,
    rolled_back  INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT    NOT NULL,
    PRIMARY KEY (endpoint_id, seq)
);
"""

_V3_PIPELINE_RUNS = """
-- One row per pipeline run of a model: its week's record (vertex_retrain.run_record), newest
-- write wins (a re-run of the exit handler replaces it).
CREATE TABLE pipeline_runs (
    run_name     TEXT    PRIMARY KEY,
    model        TEXT    NOT NULL,
    backend      TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    as_of        TEXT    NOT NULL,
    record_json  TEXT    NOT NULL,
    recorded_at  TEXT    NOT NULL
);
CREATE INDEX pipeline_runs_by_model ON pipeline_runs(model, as_of, recorded_at);
"""

_V4_SERVING_PACKAGE = """
-- The package holding a version's serving code (and the extras it needs): the local backend
-- runs the serving command in an environment built from it (python_env).
ALTER TABLE model_versions ADD COLUMN serving_package_uri TEXT;
ALTER TABLE model_versions ADD COLUMN serving_extras_json TEXT;
"""


def _run_script(script: str) -> Callable[[sqlite3.Connection], None]:
    def apply(connection: sqlite3.Connection) -> None:
        # executescript() would COMMIT the caller's transaction, so run statement by statement;
        # complete_statement() knows about semicolons inside comments and strings.
        pending = ""
        for line in script.splitlines(keepends=True):
            pending += line
            if sqlite3.complete_statement(pending):
                connection.execute(pending)
                pending = ""
        if pending.strip():
            raise ValueError(f"incomplete SQL statement in migration: {pending!r}")

    return apply


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _run_script(_V1_MODELS),
    _run_script(_V2_ENDPOINTS),
    _run_script(_V3_PIPELINE_RUNS),
    _run_script(_V4_SERVING_PACKAGE),
)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(connection: sqlite3.Connection) -> int:
    """Return the schema version stored in the database (0 for a new, empty file)."""
    row = connection.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def migrate(connection: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Apply the migrations between the stored version and `target`.

    The caller holds a write transaction; the new version is stored in the same transaction.

    Args:
        connection: An open connection inside `BEGIN IMMEDIATE`.
        target: Version to reach; tests pass a lower one to build an old database.

    Returns:
        The version the database was at before.
    """
    current = schema_version(connection)
    for migration in MIGRATIONS[current:target]:
        migration(connection)
    if target > current:
        # PRAGMA does not take parameters; target is an int from this module.
        connection.execute(f"PRAGMA user_version = {int(target)}")
    return current

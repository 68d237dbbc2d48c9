"""Records of the local model registry and the queries on them (inside one transaction).

`registry.py` (models, versions, aliases) and `endpoints.py` (deployments) share these; each
function takes an open connection, so the caller decides the transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryInputError,
    RegistryNotFoundError,
    utc_now,
)
from vertex_retrain.rules.aliases import DEFAULT_ALIAS, is_valid_alias

RESOURCE_PREFIX = "models/"


@dataclass(frozen=True)
class Lineage:
    """Where a model version came from.

    Attributes:
        pipeline_run: Pipeline run (job) id that produced the version.
        dataset_uri: Training data location.
        dataset_manifest: Small JSON description of the data (row counts, hashes, splits).
        parent_version: Version id of the same model this one was trained from.
    """

    pipeline_run: str | None = None
    dataset_uri: str | None = None
    dataset_manifest: dict[str, Any] | None = None
    parent_version: str | None = None


@dataclass(frozen=True)
class ModelVersion:
    """One registered version of a model, with its aliases.

    `serving_package_uri` and `serving_extras` name the package (and its extras) whose
    environment runs the serving command locally; empty when the version has none.
    """

    model_display_name: str
    version_id: str
    aliases: tuple[str, ...]
    artifact_uri: str
    container_spec: dict[str, Any]
    labels: dict[str, str]
    metrics: dict[str, Any]
    description: str
    lineage: Lineage
    sample_instances: list[Any] | None
    request_id: str | None
    created_at: str
    updated_at: str
    serving_package_uri: str = ""
    serving_extras: tuple[str, ...] = ()

    @property
    def is_default(self) -> bool:
        """Whether this version holds the `default` alias."""
        return DEFAULT_ALIAS in self.aliases

    @property
    def resource_name(self) -> str:
        """`models/<display name>@<version id>`, the local stand-in for Vertex's name."""
        return f"{RESOURCE_PREFIX}{self.model_display_name}@{self.version_id}"


@dataclass(frozen=True)
class Model:
    """A registered model and a summary of its versions."""

    display_name: str
    created_at: str
    version_count: int
    default_version_id: str | None
    latest_version_id: str | None
    aliases: dict[str, str] = field(default_factory=dict)


def parse_resource_name(resource_name: str) -> tuple[str, str]:
    """Splits `models/<display name>@<version>` (`ModelVersion.resource_name`).

    Raises:
        RegistryInputError: Not a local model version's resource name.
    """
    body = resource_name.removeprefix(RESOURCE_PREFIX)
    display_name, at, version = body.rpartition("@")
    if not resource_name.startswith(RESOURCE_PREFIX) or not (at and display_name and version):
        raise RegistryInputError(
            f"expected a local model resource name 'models/<display name>@<version>' (from "
            f"register_model with backend='local'); got {resource_name!r}"
        )
    return display_name, version


def check_alias(alias: Any) -> str:
    """Return `alias` if Vertex would accept it, else raise `RegistryInputError`."""
    if not is_valid_alias(alias):
        raise RegistryInputError(
            f"invalid version alias {alias!r}: aliases match [a-z][a-zA-Z0-9-]{{0,126}}[a-z0-9] "
            "(start with a lowercase letter, at least 2 characters, so they never look like a "
            "version id), e.g. 'champion' or 'candidate-2'"
        )
    return alias


def parse_version_ref(version: str | int) -> tuple[str, int | str]:
    """Split a version reference into ("id", int) or ("alias", name); '@' prefix allowed."""
    text = str(version).removeprefix("@")
    if text.isdigit():
        return "id", int(text)
    return "alias", check_alias(text)


def get_or_create_model(connection: sqlite3.Connection, display_name: str) -> int:
    """Return the id of the model named `display_name`, inserting it if new."""
    row = connection.execute(
        "SELECT model_id FROM models WHERE display_name = ?", (display_name,)
    ).fetchone()
    if row is not None:
        return int(row[0])
    cursor = connection.execute(
        "INSERT INTO models (display_name, created_at) VALUES (?, ?)", (display_name, utc_now())
    )
    return int(cursor.lastrowid or 0)


def model_id_for(connection: sqlite3.Connection, display_name: str) -> int:
    """Return the id of the model named `display_name` or raise `RegistryNotFoundError`."""
    row = connection.execute(
        "SELECT model_id FROM models WHERE display_name = ?", (display_name,)
    ).fetchone()
    if row is None:
        query = "SELECT display_name FROM models ORDER BY display_name LIMIT 20"
        known = [r[0] for r in connection.execute(query)]
        raise RegistryNotFoundError(
            f"no model named {display_name!r} in the local registry; known models: "
            f"{', '.join(known) or 'none yet'}"
        )
    return int(row[0])


def require_version(
    connection: sqlite3.Connection, model_id: int, version_id: int, display_name: str
) -> None:
    """Raise `RegistryNotFoundError` unless the model has version `version_id`."""
    found = connection.execute(
        "SELECT 1 FROM model_versions WHERE model_id = ? AND version_id = ?",
        (model_id, version_id),
    ).fetchone()
    if found is None:
        raise RegistryNotFoundError(f"model {display_name!r} has no version {version_id}")


def alias_holder(connection: sqlite3.Connection, model_id: int, alias: str) -> int | None:
    """Return the version id holding `alias`, or None."""
    row = connection.execute(
        "SELECT version_id FROM version_aliases WHERE model_id = ? AND alias = ?",
        (model_id, alias),
    ).fetchone()
    return None if row is None else int(row[0])


def resolve_version(connection: sqlite3.Connection, model_id: int, version: str | int) -> int:
    """Return the version id named by an id or alias, or raise `RegistryNotFoundError`."""
    kind, value = parse_version_ref(version)
    name = connection.execute(
        "SELECT display_name FROM models WHERE model_id = ?", (model_id,)
    ).fetchone()[0]
    if kind == "id":
        require_version(connection, model_id, int(value), name)
        return int(value)
    holder = alias_holder(connection, model_id, str(value))
    if holder is None:
        raise RegistryNotFoundError(f"model {name!r} has no version with alias {value!r}")
    return holder


def move_aliases(
    connection: sqlite3.Connection, model_id: int, version_id: int, aliases: Iterable[str]
) -> None:
    """Give `aliases` to `version_id`, taking them from any other version of the model."""
    # One upsert per alias: the primary key (model_id, alias) means the old holder loses it
    # in the same statement the new holder gains it.
    for alias in aliases:
        connection.execute(
            "INSERT INTO version_aliases (model_id, alias, version_id) VALUES (?, ?, ?) "
            "ON CONFLICT (model_id, alias) DO UPDATE SET version_id = excluded.version_id",
            (model_id, alias, version_id),
        )


def load_version(connection: sqlite3.Connection, model_id: int, version_id: int) -> ModelVersion:
    """Read one version and its aliases."""
    row = connection.execute(
        "SELECT m.display_name, v.artifact_uri, v.container_spec_json, v.labels_json, "
        "v.metrics_json, v.description, v.sample_instances_json, v.pipeline_run, "
        "v.dataset_uri, v.dataset_manifest_json, v.parent_version, v.request_id, "
        "v.created_at, v.updated_at, v.serving_package_uri, v.serving_extras_json "
        "FROM model_versions v JOIN models m USING (model_id) "
        "WHERE v.model_id = ? AND v.version_id = ?",
        (model_id, version_id),
    ).fetchone()
    aliases = tuple(
        r[0]
        for r in connection.execute(
            "SELECT alias FROM version_aliases WHERE model_id = ? AND version_id = ? "
            "ORDER BY alias != 'default', alias",
            (model_id, version_id),
        )
    )
    return ModelVersion(
        model_display_name=row[0],
        version_id=str(version_id),
        aliases=aliases,
        artifact_uri=row[1],
        container_spec=json.loads(row[2]),
        labels=json.loads(row[3]),
        metrics=json.loads(row[4]),
        description=row[5],
        sample_instances=None if row[6] is None else json.loads(row[6]),
        lineage=Lineage(
            pipeline_run=row[7],
            dataset_uri=row[8],
            dataset_manifest=None if row[9] is None else json.loads(row[9]),
            parent_version=None if row[10] is None else str(row[10]),
        ),
        request_id=row[11],
        created_at=row[12],
        updated_at=row[13],
        serving_package_uri=row[14] or "",
        serving_extras=tuple(json.loads(row[15] or "[]")),
    )


def model_summary(connection: sqlite3.Connection, model_id: int, display_name: str) -> Model:
    """Read a model with its version count, latest version and aliases."""
    created, count, latest = connection.execute(
        "SELECT m.created_at, COUNT(v.version_id), MAX(v.version_id) FROM models m "
        "LEFT JOIN model_versions v USING (model_id) WHERE m.model_id = ?",
        (model_id,),
    ).fetchone()
    aliases = {
        r[0]: str(r[1])
        for r in connection.execute(
            "SELECT alias, version_id FROM version_aliases WHERE model_id = ? ORDER BY alias",
            (model_id,),
        )
    }
    return Model(
        display_name=display_name,
        created_at=created,
        version_count=int(count),
        default_version_id=aliases.get(DEFAULT_ALIAS),
        latest_version_id=None if latest is None else str(latest),
        aliases=aliases,
    )

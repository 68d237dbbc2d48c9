"""Local model registry: models by display name, numbered versions and version aliases.

Semantics follow Vertex AI Model Registry:

- a model is found (or created) by display name; its versions are numbered "1", "2", ...
  in upload order and never reused;
- aliases match `[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]`, so they can never look like a version id;
  an alias names at most one version of a model, and exactly one version holds `default`
  (the first upload gets it);
- adding an alias that another version holds moves it, in the same transaction, so no reader
  ever sees it on two versions or on none;
- uploads carry an idempotency key (`request_id`): repeating an upload, e.g. when a crashed
  pipeline step is retried, returns the version created the first time.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryDatabase,
    RegistryInputError,
    utc_now,
)
from vertex_retrain.backends.local.model_registry.registry_records import (
    DEFAULT_ALIAS,
    Lineage,
    Model,
    ModelVersion,
    alias_holder,
    check_alias,
    get_or_create_model,
    load_version,
    model_id_for,
    model_summary,
    move_aliases,
    require_version,
    resolve_version,
)
from vertex_retrain.backends.local.serving.serving_spec import (
    check_serving_package,
    validate_container_spec,
)
from vertex_retrain.specs.display_names import MAX_DISPLAY_NAME

__all__ = ["DEFAULT_ALIAS", "Lineage", "Model", "ModelRegistry", "ModelVersion"]

_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
_MAX_LABELS = 64


def _check_display_name(display_name: Any) -> str:
    if not isinstance(display_name, str) or not display_name.strip():
        raise RegistryInputError(
            f"model display name must be a non-empty string, got {display_name!r}"
        )
    if len(display_name) > MAX_DISPLAY_NAME:
        raise RegistryInputError(
            f"model display name is {len(display_name)} characters; Vertex allows at most "
            f"{MAX_DISPLAY_NAME}"
        )
    return display_name


def _check_labels(labels: Mapping[str, str] | None) -> dict[str, str]:
    labels = dict(labels or {})
    if len(labels) > _MAX_LABELS:
        raise RegistryInputError(f"{len(labels)} labels given; Vertex allows at most 64")
    for key, value in labels.items():
        if not isinstance(key, str) or not _LABEL_KEY.fullmatch(key):
            raise RegistryInputError(
                f"invalid label key {key!r}: keys match [a-z][a-z0-9_-]{{0,62}}"
            )
        if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
            raise RegistryInputError(
                f"invalid value {value!r} for label {key!r}: values match [a-z0-9_-]{{0,63}}"
            )
    return labels


def _to_json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise RegistryInputError(
            f"{what} must be JSON-serialisable without NaN/inf ({error}); got {value!r}"
        ) from None


def _check_metrics(metrics: Mapping[str, Any] | None) -> str:
    metrics = dict(metrics or {})
    for key, value in metrics.items():
        if not isinstance(key, str) or not key:
            raise RegistryInputError(f"metric names must be non-empty strings, got {key!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise RegistryInputError(f"metric {key!r} is {value}; store only finite numbers")
    return _to_json(metrics, "evaluation metrics")


class ModelRegistry:
    """The local model registry (SQLite at `<local root>/registry.db` unless told otherwise)."""

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout_s: float | None = None,
    ) -> None:
        """Prepares the registry; the database is created on first use.

        Args:
            db_path: Database file; defaults to `$VERTEX_LOCAL_ROOT/registry.db`.
            busy_timeout_s: How long a write waits for another process's lock (default
                `registry_db.DEFAULT_BUSY_TIMEOUT_S`).
        """
        self.db = RegistryDatabase(db_path, busy_timeout_s=busy_timeout_s)

    # ---- reads ---------------------------------------------------------------------------

    def get_model(self, display_name: str) -> Model:
        """Return the model named `display_name`.

        Raises:
            RegistryNotFoundError: No such model.
        """
        with self.db.read() as connection:
            model_id = model_id_for(connection, display_name)
            return model_summary(connection, model_id, display_name)

    def list_models(self) -> list[Model]:
        """Return every model, sorted by display name."""
        with self.db.read() as connection:
            rows = connection.execute(
                "SELECT model_id, display_name FROM models ORDER BY display_name"
            ).fetchall()
            return [model_summary(connection, row[0], row[1]) for row in rows]

    def get_version(self, display_name: str, version: str | int = DEFAULT_ALIAS) -> ModelVersion:
        """Return one version, by id ("3") or alias ("champion", "@champion", "default").

        Raises:
            RegistryNotFoundError: No such model, version or alias.
        """
        with self.db.read() as connection:
            model_id = model_id_for(connection, display_name)
            version_id = resolve_version(connection, model_id, version)
            return load_version(connection, model_id, version_id)

    def list_versions(self, display_name: str) -> list[ModelVersion]:
        """Return every version of a model, oldest first."""
        with self.db.read() as connection:
            model_id = model_id_for(connection, display_name)
            ids = connection.execute(
                "SELECT version_id FROM model_versions WHERE model_id = ? ORDER BY version_id",
                (model_id,),
            ).fetchall()
            return [load_version(connection, model_id, row[0]) for row in ids]

    # ---- writes --------------------------------------------------------------------------

    def upload_version(
        self,
        display_name: str,
        *,
        artifact_uri: str,
        container_spec: Mapping[str, Any],
        labels: Mapping[str, str] | None = None,
        metrics: Mapping[str, Any] | None = None,
        description: str = "",
        lineage: Lineage | None = None,
        aliases: Sequence[str] = (),
        is_default_version: bool = True,
        sample_instances: Sequence[Any] | None = None,
        request_id: str | None = None,
        serving_package_uri: str = "",
        serving_extras: Sequence[str] = (),
    ) -> ModelVersion:
        """Register a new version of `display_name`, creating the model if needed.

        Args:
            display_name: Model display name (get-or-create).
            artifact_uri: Directory holding the model artifacts (gs://, /gcs/ or local).
            container_spec: Vertex `ModelContainerSpec` JSON for serving.
            labels: Vertex-style labels.
            metrics: Evaluation metrics (JSON object).
            description: Free text.
            lineage: Pipeline run, data and parent version.
            aliases: Aliases to give the new version; each is moved from any version holding
                it. Use `is_default_version` rather than the alias `default`.
            is_default_version: Move `default` to the new version (the first version always
                gets it), as `Model.upload(is_default_version=...)` does.
            sample_instances: Instances a deploy sends as its smoke-test prediction.
            request_id: Idempotency key: a second upload with the same key returns the
                version the first one created instead of adding another.
            serving_package_uri: The wheel or sdist holding the serving code; a local
                deployment runs the serving command in an environment built from it.
            serving_extras: Extras of that package the serving code needs.

        Returns:
            The new (or, for a repeated `request_id`, the existing) version.

        Raises:
            RegistryInputError: Bad argument, or `request_id` reused for a different artifact.
        """
        _check_display_name(display_name)
        if not isinstance(artifact_uri, str) or not artifact_uri:
            raise RegistryInputError(
                f"artifact_uri must be a non-empty string such as gs://bucket/model/, got "
                f"{artifact_uri!r}"
            )
        spec_json = _to_json(validate_container_spec(container_spec), "container_spec")
        serving_package_uri, extras = check_serving_package(serving_package_uri, serving_extras)
        labels_json = _to_json(_check_labels(labels), "labels")
        metrics_json = _check_metrics(metrics)
        lineage = lineage or Lineage()
        manifest_json = (
            None
            if lineage.dataset_manifest is None
            else _to_json(lineage.dataset_manifest, "lineage.dataset_manifest")
        )
        samples_json = (
            None if sample_instances is None else _to_json(list(sample_instances), "samples")
        )
        new_aliases = [check_alias(alias) for alias in aliases]
        if DEFAULT_ALIAS in new_aliases:
            raise RegistryInputError(
                "pass is_default_version=True instead of the alias 'default' in aliases"
            )
        parent = None if lineage.parent_version is None else str(lineage.parent_version)
        if parent is not None and not parent.isdigit():
            raise RegistryInputError(
                f"lineage.parent_version must be a version id such as '3', got {parent!r}"
            )
        with self.db.write() as connection:
            model_id = get_or_create_model(connection, display_name)
            if request_id is not None:
                existing = connection.execute(
                    "SELECT version_id, artifact_uri FROM model_versions "
                    "WHERE model_id = ? AND request_id = ?",
                    (model_id, request_id),
                ).fetchone()
                if existing is not None:
                    if existing[1] != artifact_uri:
                        raise RegistryInputError(
                            f"request_id {request_id!r} already created version {existing[0]} "
                            f"of {display_name!r} with artifact_uri {existing[1]!r}, not "
                            f"{artifact_uri!r}; use a new request_id for a new version"
                        )
                    return load_version(connection, model_id, existing[0])
            if parent is not None:
                require_version(connection, model_id, int(parent), display_name)
            version_id = connection.execute(
                "UPDATE models SET next_version = next_version + 1 WHERE model_id = ? "
                "RETURNING next_version - 1",
                (model_id,),
            ).fetchone()[0]
            now = utc_now()
            connection.execute(
                "INSERT INTO model_versions (model_id, version_id, artifact_uri, "
                "container_spec_json, labels_json, metrics_json, description, "
                "sample_instances_json, pipeline_run, dataset_uri, dataset_manifest_json, "
                "parent_version, request_id, created_at, updated_at, serving_package_uri, "
                "serving_extras_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    model_id,
                    version_id,
                    artifact_uri,
                    spec_json,
                    labels_json,
                    metrics_json,
                    description,
                    samples_json,
                    lineage.pipeline_run,
                    lineage.dataset_uri,
                    manifest_json,
                    None if parent is None else int(parent),
                    request_id,
                    now,
                    now,
                    serving_package_uri or None,
                    json.dumps(list(extras)) if extras else None,
                ),
            )
            has_default = alias_holder(connection, model_id, DEFAULT_ALIAS) is not None
            if is_default_version or not has_default:
                new_aliases.append(DEFAULT_ALIAS)
            move_aliases(connection, model_id, version_id, new_aliases)
            return load_version(connection, model_id, version_id)

    def merge_version_aliases(
        self, display_name: str, version: str | int, aliases: Sequence[str]
    ) -> ModelVersion:
        """Add or remove aliases of one version in one transaction (Vertex's merge semantics).

        Args:
            display_name: Model display name.
            version: Version id or alias of the version to change.
            aliases: `"name"` adds (moving it from any other version, `default` included);
                `"-name"` removes it from this version. `default` cannot be removed, only
                moved to another version.

        Returns:
            The version after the change.

        Raises:
            RegistryInputError: Invalid alias, removal of `default`, or removal of an alias
                this version does not hold.
            RegistryNotFoundError: No such model or version.
        """
        adds: list[str] = []
        removes: list[str] = []
        for entry in aliases:
            if isinstance(entry, str) and entry.startswith("-"):
                removes.append(check_alias(entry[1:]))
            else:
                adds.append(check_alias(entry))
        if DEFAULT_ALIAS in removes:
            raise RegistryInputError(
                "the 'default' alias cannot be removed: exactly one version must hold it; "
                "add 'default' to another version to move it"
            )
        both = sorted(set(adds) & set(removes))
        if both:
            raise RegistryInputError(f"alias(es) {both} are both added and removed")
        with self.db.write() as connection:
            model_id = model_id_for(connection, display_name)
            version_id = resolve_version(connection, model_id, version)
            for alias in removes:
                if alias_holder(connection, model_id, alias) != version_id:
                    raise RegistryInputError(
                        f"version {version_id} of {display_name!r} has no alias {alias!r} to remove"
                    )
                connection.execute(
                    "DELETE FROM version_aliases WHERE model_id = ? AND alias = ?",
                    (model_id, alias),
                )
            move_aliases(connection, model_id, version_id, adds)
            return load_version(connection, model_id, version_id)

    def set_alias(self, display_name: str, alias: str, version: str | int) -> ModelVersion:
        """Point `alias` at `version`, moving it atomically from its current holder."""
        return self.merge_version_aliases(display_name, version, [alias])

    def set_default_version(self, display_name: str, version: str | int) -> ModelVersion:
        """Make `version` the default version (moves the `default` alias atomically)."""
        return self.merge_version_aliases(display_name, version, [DEFAULT_ALIAS])

    def remove_alias(self, display_name: str, alias: str) -> None:
        """Remove a user alias from whichever version holds it (never `default`)."""
        version = self.get_version(display_name, alias)
        self.merge_version_aliases(display_name, version.version_id, [f"-{alias}"])

    def record_evaluation(
        self, display_name: str, version: str | int, metrics: Mapping[str, Any]
    ) -> ModelVersion:
        """Merge evaluation metrics into a version (new keys added, same keys replaced)."""
        _check_metrics(metrics)
        with self.db.write() as connection:
            model_id = model_id_for(connection, display_name)
            version_id = resolve_version(connection, model_id, version)
            stored = connection.execute(
                "SELECT metrics_json FROM model_versions WHERE model_id = ? AND version_id = ?",
                (model_id, version_id),
            ).fetchone()[0]
            merged = {**json.loads(stored), **dict(metrics)}
            connection.execute(
                "UPDATE model_versions SET metrics_json = ?, updated_at = ? "
                "WHERE model_id = ? AND version_id = ?",
                (_to_json(merged, "metrics"), utc_now(), model_id, version_id),
            )
            return load_version(connection, model_id, version_id)

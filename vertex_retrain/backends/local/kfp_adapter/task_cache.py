"""The local task cache: the same component with the same inputs reuses its earlier outputs.

Vertex AI Pipelines reuses a task's outputs when a task with the same cache key ran before;
the key is the component's spec (its inputs, outputs and container: image, command, args)
and the task's inputs (parameter values, and each input artifact's identity). This module
computes the same key for kfp.local's tasks and keeps one entry per key under
``<local root>/task-cache/``, so a local run shows exactly the reuse Vertex would make,
including a stale reuse (a task whose inputs do not say which week's data it read).

An entry holds the outputs as kfp.local hands them downstream, the task's
``executor_output.json`` and the run that computed them. Output artifacts are referenced where
that run left them, as Vertex does: a cached task's downstream tasks see the same artifact
identity, so they are cached too. An entry whose artifact files are gone is a miss; a
metrics artifact (:data:`METADATA_ONLY_TYPES`) holds its values in its metadata and may have
no file at all, so it never makes a miss.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.storage import StorageError, to_local_path

CACHE_DIRNAME = "task-cache"
ENTRY_FILE = "entry.json"
EXECUTOR_OUTPUT_FILE = "executor_output.json"
CACHED_FROM_FILE = "cached_from.json"
"""Written next to a cached task's ``executor_output.json`` in the run that reused it."""

METADATA_ONLY_TYPES = frozenset(
    {"system.Metrics", "system.ClassificationMetrics", "system.SlicedClassificationMetrics"}
)
"""Artifact types whose values live in the metadata: a task that only logs metrics to one
writes no file at its URI (kfp's executor writes none), so its absence says nothing."""

_ARTIFACT = "__artifact__"
_ARTIFACT_LIST = "__artifact_list__"


@dataclass(frozen=True)
class CachedTask:
    """One cache entry: the outputs of a task and the run that computed them.

    Attributes:
        key: The cache key (see :func:`cache_key`).
        run: The pipeline run whose task computed the outputs.
        task: That task's name.
        created_at: When the entry was written (UTC, RFC 3339).
        outputs: The outputs in their stored form (see :func:`serialize_outputs`).
        executor_output: The task's ``executor_output.json``, or None when it wrote none.
    """

    key: str
    run: str
    task: str
    created_at: str
    outputs: dict[str, Any]
    executor_output: dict[str, Any] | None


def artifact_identity(artifact: Any) -> dict[str, str]:
    """What identifies an input artifact in a cache key: its type and its URI.

    On Vertex an input artifact is identified by its ML Metadata id; locally an artifact's URI
    is unique to the task that produced it, so it plays that part.
    """
    return {
        "artifact": str(getattr(type(artifact), "schema_title", "system.Artifact")),
        "uri": str(getattr(artifact, "uri", "")),
    }


def _is_artifact(value: Any) -> bool:
    from kfp import dsl

    return isinstance(value, dsl.Artifact)


def canonical_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The task's inputs as they enter the key: parameter values, and artifact identities."""

    def canonical(value: Any) -> Any:
        if _is_artifact(value):
            return artifact_identity(value)
        if isinstance(value, list | tuple):
            return [canonical(item) for item in value]
        if isinstance(value, Mapping):
            return {str(k): canonical(v) for k, v in value.items()}
        return value

    return {name: canonical(value) for name, value in arguments.items()}


def cache_key(
    *, component: Mapping[str, Any], container: Mapping[str, Any], arguments: Mapping[str, Any]
) -> str:
    """The cache key of one task, as Vertex forms it: component spec plus inputs.

    Args:
        component: The task's ``ComponentSpec`` as a dict; its inputs and outputs take part,
            its executor label (a name the compiler picks) does not.
        container: The executor's container spec (image, command, args, env) as a dict; for a
            Python component the command carries the function's source, so a code change
            changes the key.
        arguments: The task's inputs, run placeholders resolved (see
            :func:`canonical_arguments`; artifacts may be passed as they are).

    Returns:
        A SHA-256 hex digest.
    """
    document = {
        "inputs": component.get("inputDefinitions", {}),
        "outputs": component.get("outputDefinitions", {}),
        "container": dict(container),
        "arguments": canonical_arguments(arguments),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def serialize_outputs(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """kfp.local's task outputs (parameters, artifacts, artifact lists) as plain JSON."""

    def artifact(value: Any) -> dict[str, Any]:
        return {
            "schema_title": str(getattr(type(value), "schema_title", "system.Artifact")),
            "name": str(value.name or ""),
            "uri": str(value.uri or ""),
            "metadata": dict(value.metadata or {}),
        }

    stored: dict[str, Any] = {}
    for name, value in outputs.items():
        if _is_artifact(value):
            stored[name] = {_ARTIFACT: artifact(value)}
        elif isinstance(value, list) and value and all(_is_artifact(v) for v in value):
            stored[name] = {_ARTIFACT_LIST: [artifact(v) for v in value]}
        else:
            stored[name] = value
    return stored


def deserialize_outputs(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`serialize_outputs`: artifacts become ``dsl.Artifact`` objects."""
    from kfp.dsl import executor

    def artifact(fields: Mapping[str, Any]) -> Any:
        return executor.create_artifact_instance(
            {
                "name": fields.get("name", ""),
                "uri": fields.get("uri", ""),
                "metadata": dict(fields.get("metadata") or {}),
                "type": {"schemaTitle": fields.get("schema_title", "system.Artifact")},
            }
        )

    outputs: dict[str, Any] = {}
    for name, value in stored.items():
        if isinstance(value, Mapping) and _ARTIFACT in value:
            outputs[name] = artifact(value[_ARTIFACT])
        elif isinstance(value, Mapping) and _ARTIFACT_LIST in value:
            outputs[name] = [artifact(fields) for fields in value[_ARTIFACT_LIST]]
        else:
            outputs[name] = value
    return outputs


def _artifact_uris(stored: Mapping[str, Any]) -> list[str]:
    """The URIs of the stored outputs' artifacts that must exist (metrics types need not)."""
    artifacts: list[Mapping[str, Any]] = []
    for value in stored.values():
        if isinstance(value, Mapping) and _ARTIFACT in value:
            artifacts.append(value[_ARTIFACT])
        elif isinstance(value, Mapping) and _ARTIFACT_LIST in value:
            artifacts += list(value[_ARTIFACT_LIST])
    return [
        str(fields.get("uri", ""))
        for fields in artifacts
        if fields.get("uri") and fields.get("schema_title") not in METADATA_ONLY_TYPES
    ]


class TaskCache:
    """The cache entries under one local root.

    Args:
        root: The local storage root; entries live in ``<root>/task-cache/<key>/``, and
            ``gs://`` artifact URIs are checked under ``<root>/gcs``.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.folder = self.root / CACHE_DIRNAME

    def _entry_dir(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def lookup(self, key: str) -> CachedTask | None:
        """The entry of ``key``, or None: no entry, an unreadable one, or artifacts gone."""
        try:
            raw = json.loads((self._entry_dir(key) / ENTRY_FILE).read_text(encoding="utf-8"))
            entry = CachedTask(
                key=key,
                run=str(raw["run"]),
                task=str(raw["task"]),
                created_at=str(raw.get("created_at", "")),
                outputs=dict(raw["outputs"]),
                executor_output=raw.get("executor_output"),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return entry if all(self._exists(uri) for uri in _artifact_uris(entry.outputs)) else None

    def _exists(self, uri: str) -> bool:
        try:
            return to_local_path(uri, self.root).exists()
        except StorageError:
            return False

    def store(
        self,
        key: str,
        *,
        run: str,
        task: str,
        outputs: Mapping[str, Any],
        executor_output: Mapping[str, Any] | None,
    ) -> CachedTask:
        """Writes (or replaces) the entry of ``key`` atomically and returns it."""
        entry = CachedTask(
            key=key,
            run=run,
            task=task,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            outputs=serialize_outputs(outputs),
            executor_output=dict(executor_output) if executor_output is not None else None,
        )
        atomic_write_json(
            self._entry_dir(key) / ENTRY_FILE,
            {
                "run": entry.run,
                "task": entry.task,
                "created_at": entry.created_at,
                "outputs": entry.outputs,
                "executor_output": entry.executor_output,
            },
        )
        return entry


def mark_cached(task_root: Path, entry: CachedTask) -> None:
    """Leaves the reused outputs in the new run's task folder, as if the task had run there.

    The run summary and anything else that reads ``<run>/<task>/executor_output.json`` then
    sees the task's outputs; ``cached_from.json`` says where they came from.
    """
    if entry.executor_output is not None:
        atomic_write_json(task_root / EXECUTOR_OUTPUT_FILE, entry.executor_output)
    atomic_write_json(
        task_root / CACHED_FROM_FILE,
        {"run": entry.run, "task": entry.task, "key": entry.key, "created_at": entry.created_at},
    )

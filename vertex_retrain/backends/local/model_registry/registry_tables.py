"""The local registry as records (for ``--json`` and the CLI's tables) and as plain tables."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from vertex_retrain.backends.local.model_registry.registry import DEFAULT_ALIAS, ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Align columns under their headers; an empty table prints '(none)' under them."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if not rows:
        lines.append("(none)")
    return "\n".join(line.rstrip() for line in lines)


def model_records(db_path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """One record per model: versions, default and latest version, other aliases."""
    return [
        {
            "model": model.display_name,
            "versions": model.version_count,
            "default_version": model.default_version_id,
            "latest_version": model.latest_version_id,
            "aliases": {a: v for a, v in model.aliases.items() if a != DEFAULT_ALIAS},
            "created": model.created_at,
        }
        for model in ModelRegistry(db_path).list_models()
    ]


def version_records(
    display_name: str, db_path: str | os.PathLike[str] | None = None
) -> list[dict[str, Any]]:
    """One record per version of a model: aliases, artifact, metrics, lineage.

    ``primary_metric`` is the primary metric of the evaluation declaration the version was
    judged by: the one the decision of the run that registered it was made on, else that of
    the model's latest recorded run (None when no run of the model is on record).
    """
    versions = ModelRegistry(db_path).list_versions(display_name)
    by_run, latest = _primary_metrics(display_name, db_path)
    return [
        {
            "version": version.version_id,
            "aliases": list(version.aliases),
            "artifact_uri": version.artifact_uri,
            "metrics": dict(version.metrics or {}),
            "primary_metric": by_run.get(version.lineage.pipeline_run or "", latest),
            "pipeline_run": version.lineage.pipeline_run,
            "created": version.created_at,
        }
        for version in versions
    ]


def _primary_metrics(
    display_name: str, db_path: str | os.PathLike[str] | None
) -> tuple[dict[str, str], str | None]:
    """The primary metric of each recorded run of the model, and of its latest run."""
    from vertex_retrain.backends.local.model_registry.registry_db import RegistryNotFoundError
    from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory

    try:
        records = RunHistory(db_path).weeks(display_name)
    except RegistryNotFoundError:  # no run of the model on record: registered by hand
        return {}, None
    by_run = {
        record.run: str(record.decision["primary_metric"])
        for record in records
        if record.decision.get("primary_metric")
    }
    ordered = [by_run[record.run] for record in records if record.run in by_run]
    return by_run, ordered[-1] if ordered else None


def endpoint_records(db_path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """One record per deployed model (or per empty endpoint): model, traffic, server state."""
    records: list[dict[str, Any]] = []
    for endpoint in LocalEndpoints(db_path).list_endpoints():
        if not endpoint.deployed_models:
            records.append({"endpoint": endpoint.display_name, "deployed_model": None})
        for deployed in endpoint.deployed_models:
            records.append(
                {
                    "endpoint": endpoint.display_name,
                    "deployed_model": deployed.deployed_model_id,
                    "model": deployed.model_display_name,
                    "version": deployed.model_version_id,
                    "traffic_percentage": deployed.traffic_percentage,
                    "server": f"127.0.0.1:{deployed.port}" if deployed.port else None,
                    "pid": deployed.pid if deployed.running else None,
                    "state": "running" if deployed.running else "stopped",
                }
            )
    return records


def models_table(db_path: str | os.PathLike[str] | None = None) -> str:
    """One line per model: versions, default version, other aliases."""
    rows = [
        (
            record["model"],
            record["versions"],
            record["default_version"] or "-",
            record["latest_version"] or "-",
            ", ".join(f"{a}={v}" for a, v in record["aliases"].items()) or "-",
            record["created"],
        )
        for record in model_records(db_path)
    ]
    return format_table(("MODEL", "VERSIONS", "DEFAULT", "LATEST", "ALIASES", "CREATED"), rows)


def versions_table(display_name: str, db_path: str | os.PathLike[str] | None = None) -> str:
    """One line per version of a model: aliases, artifact, metrics, lineage."""
    rows = [
        (
            record["version"],
            ",".join(record["aliases"]) or "-",
            record["artifact_uri"],
            json.dumps(record["metrics"], sort_keys=True) if record["metrics"] else "-",
            record["pipeline_run"] or "-",
            record["created"],
        )
        for record in version_records(display_name, db_path)
    ]
    return format_table(("VERSION", "ALIASES", "ARTIFACT", "METRICS", "RUN", "CREATED"), rows)


def endpoints_table(db_path: str | os.PathLike[str] | None = None) -> str:
    """One line per deployed model (or per empty endpoint): model, traffic, server state."""
    rows = [
        (
            record["endpoint"],
            record["deployed_model"] or "-",
            f"{record['model']}@{record['version']}" if record["deployed_model"] else "-",
            f"{record['traffic_percentage']}%" if record["deployed_model"] else "-",
            record.get("server") or "-",
            (f"running pid {record['pid']}" if record["pid"] else "stopped")
            if record["deployed_model"]
            else "-",
        )
        for record in endpoint_records(db_path)
    ]
    return format_table(("ENDPOINT", "DEPLOYED ID", "MODEL", "TRAFFIC", "SERVER", "STATE"), rows)

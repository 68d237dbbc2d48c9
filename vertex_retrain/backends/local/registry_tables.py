"""Printable tables of the local registry: models, versions and endpoints (for the CLI)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from vertex_retrain.backends.local.endpoints import LocalEndpoints
from vertex_retrain.backends.local.registry import DEFAULT_ALIAS, ModelRegistry


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Align columns under their headers; an empty table prints '(none)' under them."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if not rows:
        lines.append("(none)")
    return "\n".join(line.rstrip() for line in lines)


def models_table(db_path: str | os.PathLike[str] | None = None) -> str:
    """One line per model: versions, default version, other aliases."""
    rows = [
        (
            model.display_name,
            model.version_count,
            model.default_version_id or "-",
            model.latest_version_id or "-",
            ", ".join(f"{a}={v}" for a, v in model.aliases.items() if a != DEFAULT_ALIAS) or "-",
            model.created_at,
        )
        for model in ModelRegistry(db_path).list_models()
    ]
    return format_table(("MODEL", "VERSIONS", "DEFAULT", "LATEST", "ALIASES", "CREATED"), rows)


def versions_table(display_name: str, db_path: str | os.PathLike[str] | None = None) -> str:
    """One line per version of a model: aliases, artifact, metrics, lineage."""
    rows = [
        (
            version.version_id,
            ",".join(version.aliases) or "-",
            version.artifact_uri,
            json.dumps(version.metrics, sort_keys=True) if version.metrics else "-",
            version.lineage.pipeline_run or "-",
            version.created_at,
        )
        for version in ModelRegistry(db_path).list_versions(display_name)
    ]
    return format_table(("VERSION", "ALIASES", "ARTIFACT", "METRICS", "RUN", "CREATED"), rows)


def endpoints_table(db_path: str | os.PathLike[str] | None = None) -> str:
    """One line per deployed model (or per empty endpoint): model, traffic, server state."""
    rows: list[tuple[object, ...]] = []
    for endpoint in LocalEndpoints(db_path).list_endpoints():
        if not endpoint.deployed_models:
            rows.append((endpoint.display_name, "-", "-", "-", "-", "-"))
        for deployed in endpoint.deployed_models:
            state = f"running pid {deployed.pid}" if deployed.running else "stopped"
            rows.append(
                (
                    endpoint.display_name,
                    deployed.deployed_model_id,
                    f"{deployed.model_display_name}@{deployed.model_version_id}",
                    f"{deployed.traffic_percentage}%",
                    f"127.0.0.1:{deployed.port}" if deployed.port else "-",
                    state,
                )
            )
    return format_table(("ENDPOINT", "DEPLOYED", "MODEL", "TRAFFIC", "SERVER", "STATE"), rows)

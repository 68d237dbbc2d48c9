"""Reading the Vertex REST CustomJob payload the local executor is given.

The payload is the camelCase JSON form of `aiplatform_v1.CustomJob` (or its bare `jobSpec`).
This module normalises it, checks what the local executor needs, and delegates the full
Vertex rules to the job-specs core (`vertex_retrain.specs.validate_custom_job`).
"""

from __future__ import annotations

import copy
import datetime
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POOL_ROLES = ("primary", "workers", "parameter servers / reduction server", "evaluators")
MAX_POOLS = len(POOL_ROLES)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s?\s*$")


class JobSpecError(ValueError):
    """A payload the local executor cannot run; the message lists every problem found."""


@dataclass(frozen=True)
class Replica:
    """One process of a job: replica `index` of worker pool `pool`."""

    pool: int
    index: int

    @property
    def name(self) -> str:
        """Vertex's task type and index, e.g. `workerpool1-0`."""
        return f"workerpool{self.pool}-{self.index}"


def new_job_id(display_name: str) -> str:
    """Return a unique, readable job id: `<slug of display name>-<UTC time>-<random>`."""
    slug = re.sub(r"[^a-z0-9]+", "-", display_name.lower()).strip("-")[:40] or "job"
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{slug}-{stamp}-{secrets.token_hex(3)}"


def parse_duration(value: str | int | float | None, field: str) -> float | None:
    """Parse a protobuf JSON duration (`"3600s"`, `"1.5s"`, or a number of seconds).

    Args:
        value: The duration as it appears in the payload, or None.
        field: Payload field name, used in the error message.

    Returns:
        Seconds as a float, or None when `value` is None.

    Raises:
        JobSpecError: The value is not a non-negative duration.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise JobSpecError(f"{field}: expected a duration such as '3600s', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise JobSpecError(f"{field}: expected a duration such as '3600s', got {value!r}")
        seconds = float(match.group(1))
    if seconds < 0:
        raise JobSpecError(f"{field}: a duration cannot be negative, got {value!r}")
    return seconds


def job_spec_of(payload: dict[str, Any]) -> dict[str, Any]:
    """Return a deep copy of the `jobSpec` in a CustomJob payload (or of a bare jobSpec).

    Raises:
        JobSpecError: The payload is neither a CustomJob nor a CustomJobSpec.
    """
    if not isinstance(payload, dict):
        raise JobSpecError(f"expected a CustomJob dict, got {type(payload).__name__}")
    if "jobSpec" in payload:
        spec = payload["jobSpec"]
    elif "workerPoolSpecs" in payload:
        spec = payload
    else:
        raise JobSpecError(
            "expected a Vertex CustomJob ({'jobSpec': {'workerPoolSpecs': [...]}}) or a bare "
            f"jobSpec; got keys {sorted(payload)}. Build one with vertex_retrain.specs or "
            "json_format.MessageToDict(aiplatform_v1.CustomJob(...))"
        )
    if not isinstance(spec, dict):
        raise JobSpecError(f"jobSpec must be an object, got {type(spec).__name__}")
    return copy.deepcopy(spec)


def core_validation_errors(payload: dict[str, Any], root: Path | None = None) -> list[str]:
    """Run the job-specs core's Vertex rules; return the errors (warnings are dropped).

    With `root`, the ``aiplatform_v1`` field table comes from its cache
    (:mod:`vertex_retrain.backends.local.jobs.field_table_cache`) instead of the protos.
    """
    from vertex_retrain.specs.validate import validate_custom_job

    table = None
    if root is not None:
        from vertex_retrain.backends.local.jobs.field_table_cache import cached_field_table

        table = cached_field_table(root)
    problems = validate_custom_job(payload, field_table=table)
    return [p.describe() for p in problems if p.severity == "error"]


def local_problems(spec: dict[str, Any]) -> list[str]:
    """Return what stops the local executor from running `spec` (empty when runnable)."""
    pools = spec.get("workerPoolSpecs")
    if not isinstance(pools, list) or not pools:
        return ["jobSpec.workerPoolSpecs must list 1 to 4 worker pools; got none"]
    problems: list[str] = []
    if len(pools) > MAX_POOLS:
        problems.append(f"jobSpec.workerPoolSpecs has {len(pools)} pools; Vertex allows 4")
    for number, pool in enumerate(pools[:MAX_POOLS]):
        where = f"workerPoolSpecs[{number}]"
        if not isinstance(pool, dict):
            problems.append(f"{where} must be an object, got {type(pool).__name__}")
            continue
        if not pool and number > 0:
            continue  # an empty placeholder keeps later pools in their positions
        tasks = [key for key in ("containerSpec", "pythonPackageSpec") if key in pool]
        if len(tasks) != 1:
            problems.append(
                f"{where} needs exactly one of containerSpec or pythonPackageSpec, got {tasks}"
            )
        try:
            count = int(pool.get("replicaCount", 1))
        except (TypeError, ValueError):
            problems.append(
                f"{where}.replicaCount must be an integer, got {pool['replicaCount']!r}"
            )
            continue
        if count < 1:
            problems.append(f"{where}.replicaCount must be at least 1, got {count}")
        if number == 0 and count != 1:
            problems.append(
                f"{where} is the primary replica pool: replicaCount must be 1, got {count}; "
                "put extra replicas in workerPoolSpecs[1]"
            )
    return problems


def replicas_of(spec: dict[str, Any]) -> list[Replica]:
    """List every replica of every non-empty pool, in pool then index order."""
    out: list[Replica] = []
    for number, pool in enumerate(spec["workerPoolSpecs"]):
        if pool:
            out.extend(Replica(number, i) for i in range(int(pool.get("replicaCount", 1))))
    return out


def base_output_uri(spec: dict[str, Any]) -> str | None:
    """Return `baseOutputDirectory.outputUriPrefix` without a trailing slash, or None."""
    prefix = (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
    return str(prefix).rstrip("/") if prefix else None


def scheduling_of(spec: dict[str, Any]) -> dict[str, Any]:
    """Return `jobSpec.scheduling` (empty when absent)."""
    scheduling = spec.get("scheduling") or {}
    if not isinstance(scheduling, dict):
        raise JobSpecError(f"jobSpec.scheduling must be an object, got {scheduling!r}")
    return scheduling

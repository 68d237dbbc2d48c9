"""The environment Vertex gives each replica, reproduced for local processes.

Every replica runs on 127.0.0.1 with its own free port, so `CLUSTER_SPEC` and `TF_CONFIG`
have Vertex's shape with loopback addresses in place of Vertex's host names.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local.jobs.job_payload import Replica, base_output_uri
from vertex_retrain.backends.local.storage import gcs_root

# Vertex's TF_CONFIG task types by pool position; evaluators are not part of the TF cluster.
TF_TASK_TYPES = ("chief", "worker", "ps", "evaluator")
LOOPBACK = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """Return `count` distinct TCP ports on 127.0.0.1 that were free when asked."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def output_dirs(base_uri: str | None) -> dict[str, str]:
    """Derive Vertex's output variables from a base output URI, as Vertex does.

    `AIP_MODEL_DIR = <base>/model/`, `AIP_CHECKPOINT_DIR = <base>/checkpoints/`,
    `AIP_TENSORBOARD_LOG_DIR = <base>/logs/`. Trials get a base of `<parent base>/<trial id>`
    from the tuning runner, which yields Vertex's `<base>/<trial_id>/model/` and so on.

    Args:
        base_uri: `baseOutputDirectory.outputUriPrefix`; None sets nothing (as on Vertex).

    Returns:
        The three variables, or an empty dict.
    """
    if not base_uri:
        return {}
    base = base_uri.rstrip("/")
    return {
        "AIP_MODEL_DIR": f"{base}/model/",
        "AIP_CHECKPOINT_DIR": f"{base}/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": f"{base}/logs/",
    }


def cluster_layout(replicas: list[Replica]) -> dict[Replica, str]:
    """Give every replica a `127.0.0.1:<port>` address."""
    ports = free_ports(len(replicas))
    return {replica: f"{LOOPBACK}:{port}" for replica, port in zip(replicas, ports, strict=True)}


def _task(kind: str, replica: Replica, trial_id: str | None) -> dict[str, Any]:
    task: dict[str, Any] = {"type": kind, "index": replica.index}
    if trial_id is not None:
        task["trial"] = trial_id
    return task


def replica_env(
    replica: Replica,
    layout: dict[Replica, str],
    spec: dict[str, Any],
    *,
    job_id: str,
    root: Path,
    trial_id: str | None = None,
) -> dict[str, str]:
    """Build the Vertex variables for one replica.

    Args:
        replica: The replica being started.
        layout: Address of every replica in the job (from `cluster_layout`).
        spec: The CustomJob's jobSpec (embedded in `CLUSTER_SPEC` and `TF_CONFIG` as "job").
        job_id: Local job id, exported as `CLOUD_ML_JOB_ID`.
        root: Local storage root (for `GCS_FUSE_ROOT`).
        trial_id: Tuning trial id, exported as `CLOUD_ML_TRIAL_ID` and in the task records.

    Returns:
        Environment variables to add to the replica's environment.
    """
    by_pool: dict[int, list[str]] = {}
    for other in sorted(layout, key=lambda r: (r.pool, r.index)):
        by_pool.setdefault(other.pool, []).append(layout[other])
    cluster_spec = {
        "cluster": {f"workerpool{pool}": hosts for pool, hosts in by_pool.items()},
        "environment": "cloud",
        "task": _task(f"workerpool{replica.pool}", replica, trial_id),
        "job": spec,
    }
    tf_config = {
        "cluster": {TF_TASK_TYPES[pool]: hosts for pool, hosts in by_pool.items() if pool < 3},
        "environment": "cloud",
        "task": _task(TF_TASK_TYPES[replica.pool], replica, trial_id),
        "job": spec,
    }
    primary = next(r for r in layout if r.pool == 0)
    master_port = layout[primary].rsplit(":", 1)[1]
    env = {
        **output_dirs(base_output_uri(spec)),
        "CLUSTER_SPEC": json.dumps(cluster_spec),
        "TF_CONFIG": json.dumps(tf_config),
        "MASTER_ADDR": LOOPBACK,
        "MASTER_PORT": master_port,
        "CLOUD_ML_JOB_ID": job_id,
        "GCS_FUSE_ROOT": str(gcs_root(root)),
        "VERTEX_LOCAL_ROOT": str(root),
        "PYTHONUNBUFFERED": "1",
    }
    # The PyTorch world is the primary plus the workers; servers and evaluators sit outside it.
    trainers = [r for r in sorted(layout, key=lambda r: (r.pool, r.index)) if r.pool < 2]
    if replica in trainers:
        env["WORLD_SIZE"] = str(len(trainers))
        env["RANK"] = str(trainers.index(replica))
    if trial_id is not None:
        env["CLOUD_ML_TRIAL_ID"] = trial_id
    return env

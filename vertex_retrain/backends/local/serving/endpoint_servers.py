"""Keep the prediction servers of an endpoint's deployed models running, or stop them.

A deployed model's server is a separate process recorded in the database (pid, kernel start
time, port, log). It can die or the machine can reboot while the record stays; `ensure_servers`
finds such stale records and starts the server again (with the same health and sample checks
as a deploy), and `stop_servers` stops them without undeploying anything.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from vertex_retrain.backends.local.model_registry.registry_records import load_version, model_id_for
from vertex_retrain.backends.local.serving import model_server
from vertex_retrain.backends.local.serving.endpoints import (
    DeployedModel,
    Endpoint,
    LocalEndpoints,
    read_endpoint,
)
from vertex_retrain.backends.local.serving.serving_spec import version_launch


def _healthy(deployed: DeployedModel) -> bool:
    if not deployed.running or deployed.port is None:
        return False
    server = model_server.ServerProcess(
        pid=deployed.pid or 0,
        start_time=deployed.pid_start_time,
        port=deployed.port,
        log_path=Path(deployed.log_path or os.devnull),
        health_route=deployed.health_route,
        predict_route=deployed.predict_route,
    )
    try:
        status, _ = model_server.probe(server, timeout_s=2.0)
    except OSError:
        return False
    return status == 200


def _record(
    endpoints: LocalEndpoints,
    deployed: DeployedModel,
    server: model_server.ServerProcess | None,
) -> bool:
    """Swap in the new process unless another process changed the record first."""
    with endpoints.db.write() as connection:
        cursor = connection.execute(
            "UPDATE deployed_models SET pid = ?, pid_start_time = ?, port = ?, log_path = ? "
            "WHERE deployed_model_id = ? AND pid IS ? AND pid_start_time IS ?",
            (
                None if server is None else server.pid,
                None if server is None else server.start_time,
                None if server is None else server.port,
                deployed.log_path if server is None else str(server.log_path),
                int(deployed.deployed_model_id),
                deployed.pid,
                deployed.pid_start_time,
            ),
        )
        return cursor.rowcount == 1


def ensure_servers(
    endpoint_display_name: str,
    *,
    db_path: str | os.PathLike[str] | None = None,
    health_timeout_s: float = 60.0,
    lease: bool = False,
) -> Endpoint:
    """Restart the server of every deployed model whose process is dead or unhealthy.

    Args:
        endpoint_display_name: The endpoint.
        db_path: Registry database; defaults to `$VERTEX_LOCAL_ROOT/registry.db`.
        health_timeout_s: How long a restarted server may take to become healthy.
        lease: Bind each restarted server to this process for good (never released): it
            stops when this process dies, however it dies (`serve`; see `lifeline`).

    Returns:
        The endpoint with its current server records.

    Raises:
        ServerStartError: A server could not be restarted (its log tail is in the message).
    """
    endpoints = LocalEndpoints(db_path)
    endpoint = endpoints.get(endpoint_display_name)
    for deployed in endpoint.deployed_models:
        if _healthy(deployed):
            continue
        model_server.stop_server(deployed.pid, deployed.pid_start_time, log_path=deployed.log_path)
        with endpoints.db.read() as connection:
            model_id = model_id_for(connection, deployed.model_display_name)
            version = load_version(connection, model_id, int(deployed.model_version_id))
            samples = json.loads(
                connection.execute(
                    "SELECT sample_instances_json FROM deployed_models WHERE deployed_model_id = ?",
                    (int(deployed.deployed_model_id),),
                ).fetchone()[0]
            )
        server = model_server.start_checked_server(
            version.container_spec,
            launch=version_launch(version, endpoints.db.path.parent),
            sample_instances=samples,
            health_timeout_s=health_timeout_s,
            lease=lease,
            artifact_uri=version.artifact_uri,
            endpoint_id=endpoint.endpoint_id,
            deployed_model_id=deployed.deployed_model_id,
            model_display_name=deployed.model_display_name,
            version_id=deployed.model_version_id,
            log_path=Path(deployed.log_path or os.devnull),
        )
        if not _record(endpoints, deployed, server):
            # Someone else restarted or undeployed it meanwhile; theirs wins.
            model_server.stop_server(server.pid, server.start_time)
    with endpoints.db.read() as connection:
        return read_endpoint(connection, endpoint_display_name)


def stop_servers(
    endpoint_display_name: str, *, db_path: str | os.PathLike[str] | None = None
) -> int:
    """Stop every server of an endpoint, keeping deployments and traffic (serve restarts them).

    Returns:
        How many running processes were stopped.
    """
    endpoints = LocalEndpoints(db_path)
    stopped = 0
    for deployed in endpoints.get(endpoint_display_name).deployed_models:
        stopped += model_server.stop_server(
            deployed.pid, deployed.pid_start_time, log_path=deployed.log_path
        )
        _record(endpoints, deployed, None)
    return stopped

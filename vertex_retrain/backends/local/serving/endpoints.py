"""Local endpoints: deploy model versions behind one name, split traffic, undeploy, roll back.

Endpoint state lives in the registry database. Traffic moves only inside one write
transaction, after the new model's server has passed its health check and a sample
prediction, so a failed deploy leaves the endpoint exactly as it was. Every traffic change is
kept in `traffic_history`; `rollback` restores the split before the newest change.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local.lifeline import bind_to_run
from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryDatabase,
    RegistryInputError,
    RegistryNotFoundError,
    utc_now,
)
from vertex_retrain.backends.local.model_registry.registry_records import (
    DEFAULT_ALIAS,
    load_version,
    model_id_for,
    resolve_version,
)
from vertex_retrain.backends.local.serving import model_server
from vertex_retrain.backends.local.serving.pending_deploys import committing, reconcile_pending
from vertex_retrain.backends.local.serving.serving_spec import version_launch
from vertex_retrain.invocation import command
from vertex_retrain.rules.traffic import (
    TrafficSplitError,
    allocate,
    check_percentage,
    unallocate,
    validate_split,
)

DEPLOY_ACTION = "deploy "
"""A deployment's traffic history action: this, then the new deployed model's id."""


@dataclass(frozen=True)
class DeployedModel:
    """A model version deployed to an endpoint, with its server process."""

    deployed_model_id: str
    endpoint_display_name: str
    model_display_name: str
    model_version_id: str
    traffic_percentage: int
    pid: int | None
    pid_start_time: str | None
    port: int | None
    log_path: str | None
    predict_route: str
    health_route: str
    deployed_at: str

    @property
    def running(self) -> bool:
        """Whether the recorded server process is alive."""
        return model_server.is_running(self.pid, self.pid_start_time)


@dataclass(frozen=True)
class Endpoint:
    """An endpoint and its deployed models (in deployment order)."""

    display_name: str
    endpoint_id: str
    created_at: str
    deployed_models: tuple[DeployedModel, ...]

    @property
    def traffic_split(self) -> dict[str, int]:
        """Deployed model id -> traffic percentage (sums to 100, or empty)."""
        return {m.deployed_model_id: m.traffic_percentage for m in self.deployed_models}


@dataclass(frozen=True)
class TrafficChange:
    """One row of an endpoint's traffic history."""

    seq: int
    action: str
    split: dict[str, int]
    rolled_back: bool
    created_at: str


_DEPLOYED_COLUMNS = (
    "d.deployed_model_id, m.display_name, d.version_id, d.traffic, d.pid, d.pid_start_time, "
    "d.port, d.log_path, d.predict_route, d.health_route, d.deployed_at"
)


def read_endpoint(connection: sqlite3.Connection, display_name: str) -> Endpoint:
    """Read an endpoint and its deployed models with an open connection.

    Raises:
        RegistryNotFoundError: No endpoint has that display name.
    """
    row = connection.execute(
        "SELECT endpoint_id, created_at FROM endpoints WHERE display_name = ?", (display_name,)
    ).fetchone()
    if row is None:
        raise RegistryNotFoundError(
            f"no endpoint named {display_name!r}; `{command('endpoints')}` lists the local "
            "endpoints, and a run that deploys (deploy_model) creates it"
        )
    deployed = tuple(
        DeployedModel(
            deployed_model_id=str(r[0]),
            endpoint_display_name=display_name,
            model_display_name=r[1],
            model_version_id=str(r[2]),
            traffic_percentage=int(r[3]),
            pid=r[4],
            pid_start_time=r[5],
            port=r[6],
            log_path=r[7],
            predict_route=r[8],
            health_route=r[9],
            deployed_at=r[10],
        )
        for r in connection.execute(
            f"SELECT {_DEPLOYED_COLUMNS} FROM deployed_models d JOIN models m USING (model_id) "
            "WHERE d.endpoint_id = ? ORDER BY d.deployed_model_id",
            (row[0],),
        )
    )
    return Endpoint(display_name, str(row[0]), row[1], deployed)


def _find(endpoint: Endpoint, deployed_model_id: str) -> DeployedModel:
    for deployed in endpoint.deployed_models:
        if deployed.deployed_model_id == deployed_model_id:
            return deployed
    raise RegistryNotFoundError(
        f"endpoint {endpoint.display_name!r} has no deployed model {deployed_model_id!r}; "
        f"deployed: {sorted(endpoint.traffic_split)}"
    )


def _apply_split(
    connection: sqlite3.Connection, endpoint_id: str, split: Mapping[str, int], action: str
) -> None:
    for deployed_model_id, share in split.items():
        connection.execute(
            "UPDATE deployed_models SET traffic = ? WHERE deployed_model_id = ?",
            (share, int(deployed_model_id)),
        )
    seq = connection.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM traffic_history WHERE endpoint_id = ?",
        (int(endpoint_id),),
    ).fetchone()[0]
    connection.execute(
        "INSERT INTO traffic_history (endpoint_id, seq, action, split_json, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (int(endpoint_id), seq, action, json.dumps(dict(split)), utc_now()),
    )


def _next_deployed_model_id(connection: sqlite3.Connection) -> int:
    row = connection.execute(
        "INSERT INTO id_counters (name, next) VALUES ('deployed_model', 2) "
        "ON CONFLICT (name) DO UPDATE SET next = next + 1 RETURNING next - 1"
    ).fetchone()
    return int(row[0])


class LocalEndpoints:
    """Endpoints stored in the local registry database."""

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout_s: float | None = None,
    ) -> None:
        """Prepares access; `db_path` defaults to `$VERTEX_LOCAL_ROOT/registry.db`."""
        self.db = RegistryDatabase(db_path, busy_timeout_s=busy_timeout_s)

    def get_or_create(self, display_name: str) -> Endpoint:
        """Return the endpoint named `display_name`, creating an empty one if needed."""
        if not isinstance(display_name, str) or not display_name.strip():
            raise RegistryInputError(
                f"endpoint display name must be a non-empty string, got {display_name!r}"
            )
        with self.db.write() as connection:
            connection.execute(
                "INSERT INTO endpoints (display_name, created_at) VALUES (?, ?) "
                "ON CONFLICT (display_name) DO NOTHING",
                (display_name, utc_now()),
            )
            return read_endpoint(connection, display_name)

    def get(self, display_name: str) -> Endpoint:
        """Return an existing endpoint (raises `RegistryNotFoundError` if there is none)."""
        with self.db.read() as connection:
            return read_endpoint(connection, display_name)

    def list_endpoints(self) -> list[Endpoint]:
        """Return every endpoint, sorted by display name."""
        with self.db.read() as connection:
            names = connection.execute("SELECT display_name FROM endpoints ORDER BY 1")
            return [read_endpoint(connection, row[0]) for row in names.fetchall()]

    def traffic_history(self, display_name: str) -> list[TrafficChange]:
        """Return every traffic change of an endpoint, oldest first."""
        with self.db.read() as connection:
            endpoint = read_endpoint(connection, display_name)
            rows = connection.execute(
                "SELECT seq, action, split_json, rolled_back, created_at FROM traffic_history "
                "WHERE endpoint_id = ? ORDER BY seq",
                (int(endpoint.endpoint_id),),
            )
            return [TrafficChange(r[0], r[1], json.loads(r[2]), bool(r[3]), r[4]) for r in rows]

    def _log_path(self, endpoint_id: str, deployed_model_id: int) -> Path:
        folder = self.db.path.parent / "serving" / f"endpoint-{endpoint_id}"
        return folder / f"deployed-model-{deployed_model_id}.log"

    def deploy(
        self,
        endpoint_display_name: str,
        model_display_name: str,
        version: str | int = DEFAULT_ALIAS,
        *,
        traffic_percentage: int = 100,
        sample_instances: Sequence[Any] | None = None,
        health_timeout_s: float = 60.0,
    ) -> DeployedModel:
        """Deploy a model version: start its server, check it, then move traffic.

        The other deployed models share the remaining `100 - traffic_percentage` in
        proportion to their current shares (see `traffic_split`).

        Args:
            endpoint_display_name: An existing endpoint (see `get_or_create`).
            model_display_name: Registered model.
            version: Version id or alias; the default version unless told otherwise.
            traffic_percentage: Share of traffic for the new deployment (100 when the
                endpoint is empty).
            sample_instances: Instances for the smoke-test prediction; defaults to the ones
                registered with the version.
            health_timeout_s: How long to wait for the server's health route.

        Returns:
            The new deployed model.

        Raises:
            RegistryNotFoundError: Unknown endpoint, model or version.
            TrafficSplitError: Invalid traffic percentage.
            RegistryInputError: No sample instances, or no local serving command.
            ServerStartError: The server failed its checks; nothing changed and no process
                is left running. The message carries the server's log tail.
        """
        check_percentage(traffic_percentage)
        bind_to_run()  # in a pipeline task: a killed run stops this deploy
        with self.db.read() as connection:
            reconcile_pending(self.db.path.parent, connection)  # servers of killed deploys
            endpoint = read_endpoint(connection, endpoint_display_name)
            model_id = model_id_for(connection, model_display_name)
            version_id = resolve_version(connection, model_id, version)
            model_version = load_version(connection, model_id, version_id)
        # Fail fast on an impossible split before paying for a server start.
        allocate(endpoint.traffic_split, "new", traffic_percentage)
        samples = model_version.sample_instances if sample_instances is None else sample_instances
        if isinstance(samples, str | bytes | Mapping) or not samples:
            raise RegistryInputError(
                f"no sample instances to check {model_display_name!r} version {version_id} "
                "before traffic moves: pass sample_instances=[...] or register the version "
                "with sample_instances"
            )
        # Before anything is recorded: a version that cannot run here is refused, with
        # what to register instead.
        launch = version_launch(model_version, self.db.path.parent)
        with self.db.write() as connection:
            deployed_model_id = _next_deployed_model_id(connection)
        # Leased: until `committing` releases it, the server dies with this process.
        server = model_server.start_checked_server(
            model_version.container_spec,
            launch=launch,
            sample_instances=samples,
            health_timeout_s=health_timeout_s,
            lease=True,
            artifact_uri=model_version.artifact_uri,
            endpoint_id=endpoint.endpoint_id,
            deployed_model_id=str(deployed_model_id),
            model_display_name=model_display_name,
            version_id=str(version_id),
            log_path=self._log_path(endpoint.endpoint_id, deployed_model_id),
        )
        folder = self.db.path.parent
        with (
            committing(folder, deployed_model_id, endpoint_display_name, server),
            self.db.write() as connection,
        ):
            current = read_endpoint(connection, endpoint_display_name)
            split = allocate(current.traffic_split, str(deployed_model_id), traffic_percentage)
            connection.execute(
                "INSERT INTO deployed_models (deployed_model_id, endpoint_id, model_id, "
                "version_id, traffic, pid, pid_start_time, port, log_path, predict_route, "
                "health_route, sample_instances_json, deployed_at) "
                "VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    deployed_model_id,
                    int(current.endpoint_id),
                    model_id,
                    version_id,
                    server.pid,
                    server.start_time,
                    server.port,
                    str(server.log_path),
                    server.predict_route,
                    server.health_route,
                    json.dumps(list(samples)),
                    utc_now(),
                ),
            )
            _apply_split(
                connection, current.endpoint_id, split, f"{DEPLOY_ACTION}{deployed_model_id}"
            )
            deployed = read_endpoint(connection, endpoint_display_name)
        return next(
            m for m in deployed.deployed_models if m.deployed_model_id == str(deployed_model_id)
        )

    def undeploy(self, endpoint_display_name: str, deployed_model_id: str | int) -> Endpoint:
        """Remove a deployed model; the others fill its traffic share proportionally.

        Raises:
            TrafficSplitError: It holds 100% while other deployed models are at 0%.
            RegistryNotFoundError: Unknown endpoint or deployed model.
        """
        key = str(deployed_model_id)
        with self.db.write() as connection:
            endpoint = read_endpoint(connection, endpoint_display_name)
            removed = next(
                (m for m in endpoint.deployed_models if m.deployed_model_id == key), None
            )
            if removed is None:
                raise RegistryNotFoundError(
                    f"endpoint {endpoint_display_name!r} has no deployed model {key!r}; "
                    f"deployed: {sorted(endpoint.traffic_split)}"
                )
            split = unallocate(endpoint.traffic_split, key)
            connection.execute(
                "DELETE FROM deployed_models WHERE deployed_model_id = ?", (int(key),)
            )
            _apply_split(connection, endpoint.endpoint_id, split, f"undeploy {key}")
            after = read_endpoint(connection, endpoint_display_name)
        # Traffic has left it; now the process can go.
        model_server.stop_server(removed.pid, removed.pid_start_time, log_path=removed.log_path)
        return after

    def undeploy_all(self, endpoint_display_name: str) -> Endpoint:
        """Undeploy every model, those with the least traffic first."""
        endpoint = self.get(endpoint_display_name)
        for deployed in sorted(endpoint.deployed_models, key=lambda m: m.traffic_percentage):
            endpoint = self.undeploy(endpoint_display_name, deployed.deployed_model_id)
        return endpoint

    def set_traffic_split(
        self,
        endpoint_display_name: str,
        split: Mapping[str, int],
        *,
        action: str = "set traffic split",
    ) -> Endpoint:
        """Set the whole split at once; every deployed model not named gets 0.

        Args:
            endpoint_display_name: The endpoint.
            split: Deployed model id -> percent, summing to 100.
            action: How the change is named in the traffic history (a re-run of a
                deployment records it as that deployment).

        Raises:
            TrafficSplitError: Unknown ids, or shares not summing to 100.
        """
        shares = validate_split({str(k): v for k, v in split.items()})
        with self.db.write() as connection:
            endpoint = read_endpoint(connection, endpoint_display_name)
            unknown = sorted(set(shares) - set(endpoint.traffic_split))
            if unknown or (endpoint.deployed_models and not shares):
                raise TrafficSplitError(
                    f"traffic split {shares} must name deployed models of "
                    f"{endpoint_display_name!r} ({sorted(endpoint.traffic_split)}) and sum to "
                    f"100; unknown: {unknown}"
                )
            full = {key: shares.get(key, 0) for key in endpoint.traffic_split}
            _apply_split(connection, endpoint.endpoint_id, full, action)
            return read_endpoint(connection, endpoint_display_name)

    def rollback(self, endpoint_display_name: str) -> Endpoint:
        """Restore the traffic split in force before the newest (not rolled back) change.

        Models deployed since then stay deployed at 0%. Repeated calls walk further back.

        Raises:
            TrafficSplitError: No earlier split, or it sent traffic to a model that has
                since been undeployed (deploy that version again instead).
        """
        with self.db.write() as connection:
            endpoint = read_endpoint(connection, endpoint_display_name)
            live = connection.execute(
                "SELECT seq, split_json FROM traffic_history WHERE endpoint_id = ? "
                "AND rolled_back = 0 ORDER BY seq DESC LIMIT 2",
                (int(endpoint.endpoint_id),),
            ).fetchall()
            if len(live) < 2:
                raise TrafficSplitError(
                    f"endpoint {endpoint_display_name!r} has no earlier traffic split to roll "
                    "back to"
                )
            target = {k: v for k, v in json.loads(live[1][1]).items() if v > 0}
            gone = sorted(set(target) - set(endpoint.traffic_split))
            if gone or (endpoint.deployed_models and not target):
                raise TrafficSplitError(
                    f"cannot roll endpoint {endpoint_display_name!r} back to {target}: "
                    f"deployed model(s) {gone or '(none)'} no longer serve; deploy the "
                    "version again or use set_traffic_split"
                )
            for key in endpoint.traffic_split:
                connection.execute(
                    "UPDATE deployed_models SET traffic = ? WHERE deployed_model_id = ?",
                    (target.get(key, 0), int(key)),
                )
            connection.execute(
                "UPDATE traffic_history SET rolled_back = 1 WHERE endpoint_id = ? AND seq = ?",
                (int(endpoint.endpoint_id), live[0][0]),
            )
            return read_endpoint(connection, endpoint_display_name)

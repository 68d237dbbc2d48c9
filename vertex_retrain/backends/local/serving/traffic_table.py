"""The traffic table a router draws from: deployed models and shares, kept current.

The router holds one database connection and checks `PRAGMA data_version` (a counter SQLite
bumps when another connection commits) before each draw, re-reading the endpoint only when
something changed, so a deploy, undeploy or rollback applies to the very next request at the
cost of one cheap pragma per request.
"""

from __future__ import annotations

import bisect
import random
import sqlite3
import threading
from contextlib import ExitStack

from vertex_retrain.backends.local.model_registry.registry_db import RegistryDatabase
from vertex_retrain.backends.local.serving.endpoints import DeployedModel, Endpoint, read_endpoint


class NoTrafficError(RuntimeError):
    """The endpoint has no deployed model with a positive traffic share."""


class TrafficTable:
    """The endpoint's deployed models and traffic, reloaded when the database changes."""

    def __init__(self, db: RegistryDatabase, endpoint_display_name: str, seed: int | None) -> None:
        """Opens a long-lived connection; call `close` when done."""
        self._stack = ExitStack()
        self._connection: sqlite3.Connection = self._stack.enter_context(db.connect())
        self._name = endpoint_display_name
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._version: int | None = None
        self._endpoint: Endpoint | None = None
        self._targets: list[DeployedModel] = []
        self._cumulative: list[int] = []

    def close(self) -> None:
        """Closes the database connection."""
        self._stack.close()

    def _refresh(self) -> None:
        version = self._connection.execute("PRAGMA data_version").fetchone()[0]
        if version == self._version:
            return
        self._connection.execute("BEGIN")
        try:
            endpoint = read_endpoint(self._connection, self._name)
        finally:
            self._connection.execute("ROLLBACK")
        self._endpoint = endpoint
        self._targets = [m for m in endpoint.deployed_models if m.traffic_percentage > 0]
        total = 0
        self._cumulative = []
        for target in self._targets:
            total += target.traffic_percentage
            self._cumulative.append(total)
        self._version = version

    def endpoint(self) -> Endpoint:
        """Return the endpoint as last read (refreshing it if the database changed)."""
        with self._lock:
            self._refresh()
            assert self._endpoint is not None
            return self._endpoint

    def pick(self) -> DeployedModel:
        """Draw a deployed model with probability traffic share / 100.

        Raises:
            NoTrafficError: No deployed model receives traffic.
        """
        with self._lock:
            self._refresh()
            if not self._targets:
                raise NoTrafficError(
                    f"endpoint {self._name!r} has no deployed model receiving traffic"
                )
            draw = self._rng.randrange(self._cumulative[-1])
            return self._targets[bisect.bisect_right(self._cumulative, draw)]

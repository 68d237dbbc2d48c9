"""Pending-deployment records: finding the server of a deploy that was killed half-way.

A deploy starts its model server, checks it, releases it from its keeper (`lifeline`) and then
commits the deployed model and the traffic in one transaction. A deployer killed after the
release and before the commit leaves a running server that no table names. So before the
release the deploy writes `<registry folder>/serving/pending/<deployed model id>.json`,
naming itself and the server, and removes it once the commit or its own cleanup is done.

`reconcile_pending` (called by every deploy and by the next local run) reads the records
whose deployer is dead: a server whose deployed model was never committed is stopped, and
every such record is removed.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local import lifeline
from vertex_retrain.backends.local.serving import model_server

PENDING_FOLDER = Path("serving") / "pending"


@dataclass(frozen=True)
class StoppedServer:
    """A server of a killed deploy that reconciliation stopped."""

    deployed_model_id: str
    endpoint: str
    pid: int


def pending_path(registry_folder: Path, deployed_model_id: int | str) -> Path:
    """The record of one deploy in progress."""
    return registry_folder / PENDING_FOLDER / f"{deployed_model_id}.json"


def write_pending(
    registry_folder: Path,
    deployed_model_id: int | str,
    endpoint: str,
    server: model_server.ServerProcess,
) -> Path:
    """Records a deploy in progress (this process, its server); returns the record's path."""
    path = pending_path(registry_folder, deployed_model_id)
    atomic_write_json(
        path,
        {
            "deployed_model_id": str(deployed_model_id),
            "endpoint": endpoint,
            "deployer": lifeline.identity(),
            "server": {"pid": server.pid, "start_time": server.start_time},
            "log_path": str(server.log_path),
        },
    )
    return path


def remove_pending(path: Path) -> None:
    """Removes a record (missing is fine: the deploy may have been reconciled already)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _committed(connection: sqlite3.Connection | None, deployed_model_id: str) -> bool:
    if connection is None or not deployed_model_id.isdigit():
        return False
    row = connection.execute(
        "SELECT 1 FROM deployed_models WHERE deployed_model_id = ?", (int(deployed_model_id),)
    ).fetchone()
    return row is not None


def _load(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def reconcile_pending(
    registry_folder: Path, connection: sqlite3.Connection | None
) -> list[StoppedServer]:
    """Stops the uncommitted servers of dead deployers and removes their records.

    Args:
        registry_folder: The folder of the registry database.
        connection: An open connection to it (None: no deployed model is committed).

    Returns:
        The servers stopped.
    """
    folder = registry_folder / PENDING_FOLDER
    stopped: list[StoppedServer] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        record = _load(path)
        if record is None:
            remove_pending(path)  # a torn write: its deploy never got as far as the release
            continue
        deployer = record.get("deployer") or {}
        if lifeline.alive(deployer.get("pid"), deployer.get("start_time")):
            continue  # a deploy in progress
        server = record.get("server") or {}
        pid, started = server.get("pid"), server.get("start_time")
        deployed_id = str(record.get("deployed_model_id", ""))
        if not isinstance(pid, int) or _committed(connection, deployed_id):
            remove_pending(path)  # committed: the endpoint's record names the server
            continue
        if model_server.stop_server(pid, started):
            stopped.append(StoppedServer(deployed_id, str(record.get("endpoint")), pid))
        remove_pending(path)
    return stopped


@contextlib.contextmanager
def committing(
    registry_folder: Path,
    deployed_model_id: int | str,
    endpoint: str,
    server: model_server.ServerProcess,
) -> Iterator[None]:
    """Around a deploy's commit: record it, release the server, and clean up either way.

    The record is written before the server is released from its keeper, so no moment
    leaves a server that neither dies with its deployer nor is named on disk. If the block
    raises, the server is stopped. The record is removed at the end, whatever happened.
    """
    path: Path | None = None
    try:
        path = write_pending(registry_folder, deployed_model_id, endpoint, server)
        lifeline.release(server.pid)
        yield
    except BaseException:
        model_server.stop_server(server.pid, server.start_time)
        raise
    finally:
        if path is not None:
            remove_pending(path)

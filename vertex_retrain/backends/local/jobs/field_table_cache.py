"""The ``aiplatform_v1`` field table, cached under the local root between job tasks.

Every local CustomJob is checked for fields that are no ``aiplatform_v1`` field before it
starts (:func:`vertex_retrain.specs.validate.validate_custom_job`), and reading them from the
protos means importing ``google.cloud.aiplatform_v1``: about 0.8 s of every job task's start,
a third of a demo-sized pipeline's overhead. The table is a pure function of the installed
``google-cloud-aiplatform`` and of the code that walks it, so it is written once as JSON to
``<root>/cache/`` under a name with both, and read back by the next task. A damaged or
foreign file is read from the protos again and replaced; a cache that cannot be written
costs only the time. A local pipeline run fills the cache on a thread of its own while its
first tasks run (:func:`warm_in_background`), so even a new root's first job finds it.

The file is trusted only when it is exactly a table this library has seen from that release
(its bytes' digest is in :data:`KNOWN_TABLES`), a regular file of our own that no one else
may write, opened without following a link or blocking on a FIFO. Anything else (a planted
FIFO or link, deep nesting, a forged table of the right shape that would check nothing) is
never parsed: the table is read from the protos and the file replaced. A release missing
from :data:`KNOWN_TABLES` is read from the protos on every task, and not cached.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import stat
import threading
from contextlib import suppress
from pathlib import Path

from vertex_retrain.atomic_files import atomic_write_bytes, umask_file_mode
from vertex_retrain.specs import proto_fields
from vertex_retrain.specs.proto_fields import (
    FieldTable,
    job_field_table,
    table_from_json,
    table_to_json,
)

MAX_CACHE_BYTES = 4 * 1024 * 1024
"""A cache file larger than this is not read (the table is about 30 KB of JSON)."""

KNOWN_TABLES = {
    "1.165.1": "31eba36478475427d66c63c301659a208999a21f829b612e2b997c525dc8bf7c",
}
"""``google-cloud-aiplatform`` version -> digest of its table's cache bytes
(:func:`table_digest`). tests/test_local_field_table_cache.py fails when the installed
release is missing here or its table changed."""


def cache_mode() -> int:
    """The cache file's mode: what the umask gives, never writable by group or others (a file
    others may write is not trusted, so it would be rebuilt on every read)."""
    return umask_file_mode() & ~0o022


def _aiplatform_version() -> str:
    try:
        return importlib.metadata.version("google-cloud-aiplatform")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def cache_key() -> str:
    """The installed ``google-cloud-aiplatform`` version and a digest of the code that reads
    its protos: a new release or a change to that code gets a new file."""
    code = Path(proto_fields.__file__).read_bytes()
    return f"{_aiplatform_version()}-{hashlib.sha256(code).hexdigest()[:12]}"


def _table_bytes(table: FieldTable) -> bytes:
    """The table's cache file: canonical JSON, so one table always gives the same bytes."""
    return json.dumps(table_to_json(table), sort_keys=True, separators=(",", ":")).encode()


def table_digest(table: FieldTable) -> str:
    """SHA-256 of the table's cache bytes, as :data:`KNOWN_TABLES` holds it."""
    return hashlib.sha256(_table_bytes(table)).hexdigest()


def cache_file(root: Path) -> Path:
    """Where the table is kept under the local root."""
    return root / "cache" / f"aiplatform-v1-fields-{cache_key()}.json"


def cached_field_table(root: Path) -> FieldTable:
    """The field table from `root`'s cache, or from the protos (then cached).

    Args:
        root: The local storage root.

    Returns:
        The same table :func:`~vertex_retrain.specs.proto_fields.job_field_table` gives.
    """
    path = cache_file(root)
    known = KNOWN_TABLES.get(_aiplatform_version())
    if known is None:  # nothing to check a file against: it could only be trusted blindly
        return job_field_table()
    data = _read_own_file(path)
    if data is not None and hashlib.sha256(data).hexdigest() == known:
        return table_from_json(json.loads(data))
    table = job_field_table()
    with suppress(OSError):  # a read-only root: validation still works, only slower
        atomic_write_bytes(path, _table_bytes(table), mode=cache_mode())
    return table


def _read_own_file(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file of ours that only we may write, of at most
    :data:`MAX_CACHE_BYTES`; None for anything else (a link, a FIFO, another's file)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.getuid()
            or info.st_mode & 0o022
            or info.st_size > MAX_CACHE_BYTES
        ):
            return None
        try:
            data = handle.read(MAX_CACHE_BYTES + 1)
        except OSError:
            return None
    return data if len(data) <= MAX_CACHE_BYTES else None


def warm_in_background(root: Path) -> threading.Thread:
    """Fills `root`'s cache on a daemon thread unless it is there already; returns the thread.

    The file appears whole or not at all (an atomic write), so a job task that starts before
    the thread is done reads the protos itself, and never half a file.
    """

    def warm() -> None:
        with suppress(Exception):  # a warm-up only saves time: it never fails a run
            if not cache_file(root).is_file():
                cached_field_table(root)

    thread = threading.Thread(target=warm, name="field-table-cache", daemon=True)
    thread.start()
    return thread

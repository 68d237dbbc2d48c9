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
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import threading
from contextlib import suppress
from pathlib import Path

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.specs import proto_fields
from vertex_retrain.specs.proto_fields import (
    FieldTable,
    job_field_table,
    table_from_json,
    table_to_json,
)

MAX_CACHE_BYTES = 4 * 1024 * 1024
"""A cache file larger than this is not read (the table is about 30 KB of JSON)."""


@functools.cache
def cache_key() -> str:
    """The installed ``google-cloud-aiplatform`` version and a digest of the code that reads
    its protos: a new release or a change to that code gets a new file."""
    try:
        version = importlib.metadata.version("google-cloud-aiplatform")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    code = Path(proto_fields.__file__).read_bytes()
    return f"{version}-{hashlib.sha256(code).hexdigest()[:12]}"


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
    with suppress(OSError, ValueError):
        with path.open("rb") as handle:  # about 30 KB; anything far larger is not ours
            text = handle.read(MAX_CACHE_BYTES + 1)
        if len(text) <= MAX_CACHE_BYTES:
            return table_from_json(json.loads(text))
    table = job_field_table()
    with suppress(OSError):  # a read-only root: validation still works, only slower
        atomic_write_json(path, table_to_json(table))
    return table


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

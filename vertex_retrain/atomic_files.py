"""Atomic file writes: a reader sees the old file or the new one, never a torn one.

Shared by every layer that writes state or artifacts (the local backend, the steps, the
command line, the Vertex backend's ``gcp_resources``), so there is one way to do it. Only the
standard library is used.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_json", "umask_file_mode"]


def umask_file_mode() -> int:
    """The mode `open()` gives a new file under this process's umask (0644 under 022).

    `tempfile.mkstemp` creates files 0600 whatever the umask; an atomic write must end with
    the mode a plain write would have had. The umask is read from /proc where it can be
    (setting it to read it back is not thread-safe).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to `path` so readers see the old or the new file, never a torn one.

    Args:
        path: Destination file; parent folders are created.
        data: Bytes to write.
        mode: The file's mode from its first byte (default: what the umask gives).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, umask_file_mode() if mode is None else mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, value: Any) -> None:
    """Write `value` as indented JSON to `path` atomically (see `atomic_write_bytes`)."""
    atomic_write_bytes(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode())

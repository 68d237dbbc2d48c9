"""Storage paths and crash-safe writes for code that runs inside a training job.

Vertex hands the job `gs://` URIs (AIP_MODEL_DIR, ...) while Cloud Storage is mounted at `/gcs`.
The local executor sets GCS_FUSE_ROOT to stand in for that mount, so one mapping covers both.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

GCS_FUSE_ROOT_ENV = "GCS_FUSE_ROOT"


def resolve(uri: str | os.PathLike[str]) -> Path:
    """Map a `gs://B/P`, `/gcs/B/P` or local path to a path this process can open.

    Args:
        uri: `gs://BUCKET/PATH`, `/gcs/BUCKET/PATH` or a local path.

    Returns:
        `$GCS_FUSE_ROOT/BUCKET/PATH` when GCS_FUSE_ROOT is set, else `/gcs/BUCKET/PATH` (the
        Cloud Storage FUSE mount on Vertex); local paths come back unchanged.

    Raises:
        ValueError: the URI names no bucket or tries to climb out of the mount with `..`.
    """
    text = os.fspath(uri)
    if text.startswith("gs://"):
        rest = text[len("gs://") :]
    elif text == "/gcs" or text.startswith("/gcs/"):
        rest = text[len("/gcs/") :]
    else:
        return Path(text)
    parts = PurePosixPath(rest).parts
    # startswith("/"): POSIX keeps a leading "//" as its own root part, which would replace
    # the mount when joined.
    if not parts or parts[0].startswith("/") or parts[0] in (".", ".."):
        raise ValueError(f"expected gs://BUCKET/PATH or /gcs/BUCKET/PATH, got {text!r}")
    if ".." in parts:
        raise ValueError(f"refusing {text!r}: '..' would leave the bucket; use a plain path")
    root = os.environ.get(GCS_FUSE_ROOT_ENV)
    return Path(root if root else "/gcs").joinpath(*parts)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see the old file or the whole new one, never a part.

    Args:
        path: destination; its folder is created if missing.
        data: the complete file content.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, payload: Any) -> None:
    """Write `payload` as indented JSON with `atomic_write_bytes`.

    Args:
        path: destination file.
        payload: anything `json.dumps` accepts.
    """
    atomic_write_bytes(path, (json.dumps(payload, indent=2, sort_keys=True) + "\n").encode())


def sha256_file(path: Path) -> str:
    """Return the hex SHA-256 of a file, read in 1 MiB chunks.

    Args:
        path: the file to hash.
    """
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()

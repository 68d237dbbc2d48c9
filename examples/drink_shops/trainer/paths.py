"""Storage paths and crash-safe writes for code that runs inside a training job.

Vertex hands the job `gs://` URIs (AIP_MODEL_DIR, ...) while Cloud Storage is mounted at `/gcs`.
The local executor sets GCS_FUSE_ROOT to stand in for that mount. Without either (the trainer's
own command line on a laptop) `gs://B/P` maps to `$VERTEX_LOCAL_ROOT/gcs/B/P`, default
`./.local-vertex/gcs/B/P`: the same folder the library's local backend reads. The trainer
cannot import the library, so this rule is a contract (docs/architecture.md, "Local storage
root"), and tests/test_storage_contract.py checks both sides map every URI alike.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

GCS_FUSE_ROOT_ENV = "GCS_FUSE_ROOT"
LOCAL_ROOT_ENV = "VERTEX_LOCAL_ROOT"
DEFAULT_LOCAL_ROOT = ".local-vertex"
FUSE_MOUNT = "/gcs"


def storage_root() -> Path:
    """The folder standing for Cloud Storage in this process (`gs://B/P` -> `<it>/B/P`).

    Returns:
        `$GCS_FUSE_ROOT` when set (the local backend's jobs and servers); else `/gcs` when it
        is a mount (Cloud Storage FUSE on Vertex); else `$VERTEX_LOCAL_ROOT/gcs`, default
        `./.local-vertex/gcs`, absolute (the library's local storage root). Never `/gcs` as a
        plain folder: writing there would leave the local root and never be read back.
    """
    fuse_root = os.environ.get(GCS_FUSE_ROOT_ENV)
    if fuse_root:
        return Path(fuse_root)
    if os.path.ismount(FUSE_MOUNT):
        return Path(FUSE_MOUNT)
    local = os.environ.get(LOCAL_ROOT_ENV) or DEFAULT_LOCAL_ROOT
    return Path(local).expanduser().resolve() / "gcs"


def resolve(uri: str | os.PathLike[str]) -> Path:
    """Map a `gs://B/P`, `/gcs/B/P` or local path to a path this process can open.

    Args:
        uri: `gs://BUCKET/PATH`, `/gcs/BUCKET/PATH` or a local path.

    Returns:
        `<storage_root()>/BUCKET/PATH`: `$GCS_FUSE_ROOT`, the `/gcs` FUSE mount on Vertex, or
        the local root's `gcs/` folder; local paths come back unchanged.

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
    return storage_root().joinpath(*parts)


def _umask_file_mode() -> int:
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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see the old file or the whole new one, never a part.

    Args:
        path: destination; its folder is created if missing.
        data: the complete file content.
    """
    atomic_write_stream(path, lambda handle: handle.write(data))


def atomic_write_stream(path: Path, write: Callable[[BinaryIO], object]) -> str:
    """Write what `write(handle)` produces to `path` so readers see the old file or the whole
    new one, never a part; hashed on the way.

    The same rule as the library's `vertex_retrain/atomic_files.py`, written again because the
    trainer's training wheel may require only what pip installs from the package index on the
    executor image (docs/trainer.md).

    Args:
        path: destination; its folder is created if missing.
        write: writes the complete content to the handle it gets (e.g. `torch.save`).

    Returns:
        The hex SHA-256 of what was written, without reading the file back.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _umask_file_mode())
        with os.fdopen(fd, "wb") as handle:
            hashing = _HashingWriter(handle)
            write(hashing)  # type: ignore[arg-type]  # a write-only file object
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return hashing.digest.hexdigest()


class _HashingWriter:
    """A write-only file object that hashes what passes through it."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()


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

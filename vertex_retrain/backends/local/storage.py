"""The local storage root: where `gs://` and `/gcs/` URIs live on this machine.

`gs://BUCKET/PATH` and `/gcs/BUCKET/PATH` both map to `<root>/gcs/BUCKET/PATH`, where the
root is `$VERTEX_LOCAL_ROOT` (default `./.local-vertex`). Every mapping is checked to stay
inside the root, so a URI such as `gs://b/../../etc` or a symlink pointing outside cannot
make the local backend read or write elsewhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT_ENV = "VERTEX_LOCAL_ROOT"
DEFAULT_ROOT = ".local-vertex"
_GS = "gs://"
_FUSE = "/gcs/"


class StorageError(ValueError):
    """A URI or path that cannot be mapped into the local storage root."""


def local_root() -> Path:
    """Return the local storage root, creating it on demand.

    Returns:
        The absolute path named by `$VERTEX_LOCAL_ROOT`, or `./.local-vertex`.
    """
    root = Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


def gcs_root(root: Path | None = None) -> Path:
    """Return `<root>/gcs`, the folder standing in for Cloud Storage (`GCS_FUSE_ROOT`)."""
    return (root or local_root()).resolve() / "gcs"


def _split_bucket_path(uri: str, prefix: str) -> tuple[str, str]:
    rest = uri[len(prefix) :]
    bucket, _, path = rest.partition("/")
    if not bucket or bucket in {".", ".."}:
        raise StorageError(
            f"{uri!r} names no bucket; expected {prefix}BUCKET/PATH, e.g. {prefix}my-bucket/data"
        )
    return bucket, path


def to_local_path(uri: str | os.PathLike[str], root: Path | None = None) -> Path:
    """Map a Cloud Storage URI (or a plain local path) to a path on this machine.

    Args:
        uri: `gs://BUCKET/PATH`, `/gcs/BUCKET/PATH`, or a local path (returned resolved).
        root: Local storage root; defaults to `local_root()`.

    Returns:
        `<root>/gcs/BUCKET/PATH` for Cloud Storage URIs; the resolved path otherwise.

    Raises:
        StorageError: The URI has no bucket, or it (or a symlink inside the root) resolves
            outside `<root>/gcs`.
    """
    text = os.fspath(uri)
    if "\0" in text:
        raise StorageError(
            f"{text!r} contains a NUL character, which no path or object name may hold"
        )
    if text.startswith(_GS):
        bucket, path = _split_bucket_path(text, _GS)
    elif text.startswith(_FUSE):
        bucket, path = _split_bucket_path(text, _FUSE)
    elif "://" in text:
        raise StorageError(
            f"{text!r} uses a scheme the local backend cannot map; use gs://BUCKET/PATH, "
            "/gcs/BUCKET/PATH or a local path"
        )
    else:
        return Path(text).expanduser().resolve()
    base = gcs_root(root)
    # resolve() follows symlinks, so a link planted inside the root is caught too.
    target = (base / bucket / path).resolve()
    if target != base and base not in target.parents:
        raise StorageError(
            f"{text!r} resolves to {target}, outside the local storage root {base}; "
            "remove '..' segments or symlinks that leave the bucket"
        )
    return target


def to_gcs_uri(path: str | os.PathLike[str], root: Path | None = None) -> str:
    """Map a path under `<root>/gcs` back to its `gs://BUCKET/PATH` URI.

    Args:
        path: A local path inside the storage root's `gcs/` folder.
        root: Local storage root; defaults to `local_root()`.

    Returns:
        The `gs://` URI the path stands for.

    Raises:
        StorageError: The path is not inside `<root>/gcs/BUCKET`.
    """
    base = gcs_root(root)
    target = Path(path).resolve()
    try:
        relative = target.relative_to(base)
    except ValueError:
        raise StorageError(
            f"{target} is not under the local storage root {base}; only paths there have a "
            "gs:// URI"
        ) from None
    if not relative.parts:
        raise StorageError(f"{target} is the storage root itself, not a bucket or object")
    return _GS + relative.as_posix()


def read_json(path: Path, default: Any = None) -> Any:
    """Return the JSON in `path`, or `default` when the file does not exist."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


@contextlib.contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path` (created on demand) for the block."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)

"""Where a ``gs://`` URI lives for this process, and crash-safe writes.

Vertex's convention for code in a training job: Cloud Storage is mounted at ``/gcs``, so
``gs://BUCKET/PATH`` is read and written as ``/gcs/BUCKET/PATH``
(https://cloud.google.com/vertex-ai/docs/training/cloud-storage-file-system). The training and
evaluation entry points follow it (:func:`mounted`). ``GCS_FUSE_ROOT``, optional, names
another folder standing for ``/gcs`` (a machine without the mount).

The sample generator run by hand has no mount: it writes ``gs://BUCKET/PATH`` under
``$VERTEX_LOCAL_ROOT/gcs/BUCKET/PATH`` (default ``./.local-vertex``), the folder a local run
of vertex-retrain reads for that URI (:func:`sample_path`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

FUSE_MOUNT = "/gcs"
FUSE_ROOT_ENV = "GCS_FUSE_ROOT"
LOCAL_ROOT_ENV = "VERTEX_LOCAL_ROOT"
DEFAULT_LOCAL_ROOT = ".local-vertex"


def _bucket_parts(uri: str) -> tuple[str, ...] | None:
    """``gs://B/P`` or ``/gcs/B/P`` as ``(B, *P)``; None for a plain local path."""
    if uri.startswith("gs://"):
        rest = uri[len("gs://") :]
    elif uri == FUSE_MOUNT or uri.startswith(FUSE_MOUNT + "/"):
        rest = uri[len(FUSE_MOUNT) + 1 :]
    else:
        return None
    parts = PurePosixPath(rest).parts
    # A leading "//" would be a root of its own and replace the mount when joined.
    if not parts or parts[0].startswith("/") or parts[0] in (".", ".."):
        raise ValueError(f"expected gs://BUCKET/PATH or /gcs/BUCKET/PATH, got {uri!r}")
    if ".." in parts:
        raise ValueError(f"refusing {uri!r}: '..' would leave the bucket")
    return parts


def mounted(uri: str | os.PathLike[str]) -> Path:
    """The path of ``uri`` under the Cloud Storage mount, as Vertex documents it.

    Args:
        uri: ``gs://BUCKET/PATH``, ``/gcs/BUCKET/PATH`` or a local path.

    Returns:
        ``/gcs/BUCKET/PATH`` (``$GCS_FUSE_ROOT/BUCKET/PATH`` when that variable is set); a
        local path unchanged.

    Raises:
        ValueError: The URI names no bucket or climbs out of it with ``..``.
    """
    text = os.fspath(uri)
    parts = _bucket_parts(text)
    if parts is None:
        return Path(text)
    return Path(os.environ.get(FUSE_ROOT_ENV) or FUSE_MOUNT).joinpath(*parts)


def sample_path(uri: str | os.PathLike[str]) -> Path:
    """Where the generator run by hand reads and writes ``uri``.

    Returns:
        ``$VERTEX_LOCAL_ROOT/gcs/BUCKET/PATH`` (default root ``./.local-vertex``, made
        absolute) for ``gs://`` and ``/gcs/`` URIs; a local path unchanged.
    """
    text = os.fspath(uri)
    parts = _bucket_parts(text)
    if parts is None:
        return Path(text)
    root = Path(os.environ.get(LOCAL_ROOT_ENV) or DEFAULT_LOCAL_ROOT).expanduser().resolve()
    return root.joinpath("gcs", *parts)


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Writes ``path`` so that readers see the old file or the whole new one, never a part.

    Args:
        path: The destination; its folder is created when missing.
        write: Writes the complete content to the binary handle it is given.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; the file ends with the mode a plain write would give it.
        mask = os.umask(0o022)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, payload: Any) -> None:
    """Writes ``payload`` as indented, key-sorted JSON with :func:`atomic_write`."""
    data = (json.dumps(payload, indent=2, sort_keys=True) + "\n").encode()
    atomic_write(path, lambda handle: handle.write(data))


def readable_model_dir(uri: str, cache: Path | None = None) -> Path:
    """A local folder holding the model files of ``uri``.

    A training job sees its bucket under the mount; a Vertex prediction container does not
    (AIP_STORAGE_URI is a ``gs://`` folder), so when the mounted path is missing the files
    are downloaded once with google-cloud-storage.

    Args:
        uri: The model folder (``gs://``, ``/gcs/`` or local).
        cache: Where downloads go (default: a new temporary folder).

    Raises:
        FileNotFoundError: The folder is neither mounted nor downloadable.
    """
    path = mounted(uri)
    if path.is_dir() or not uri.startswith("gs://"):
        if not path.is_dir():
            raise FileNotFoundError(f"model folder {uri} not found")
        return path
    try:
        from google.cloud import storage
    except ImportError:
        raise FileNotFoundError(
            f"model folder {uri} is not mounted at {path}, and google-cloud-storage is not "
            "installed to download it (pip install 'demand-forecast[serve]')"
        ) from None
    bucket_name, *prefix_parts = _bucket_parts(uri) or ("",)
    prefix = "/".join(prefix_parts).rstrip("/") + "/"
    target = cache or Path(tempfile.mkdtemp(prefix="demand-model-"))
    found = 0
    for blob in storage.Client().list_blobs(bucket_name, prefix=prefix):
        relative = blob.name[len(prefix) :]
        if relative and not relative.endswith("/") and "/" not in relative:
            blob.download_to_filename(str(target / relative))
            found += 1
    if not found:
        raise FileNotFoundError(f"model folder {uri} holds no files")
    return target

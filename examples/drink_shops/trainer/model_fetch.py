"""Finding the model folder a prediction server was given, downloading it when needed.

Vertex hands a custom prediction container its model as ``AIP_STORAGE_URI`` (a ``gs://``
folder) but mounts no Cloud Storage FUSE there, unlike training jobs. The folder is used in
place when it is reachable as a path (a FUSE mount, or ``GCS_FUSE_ROOT`` locally) and
otherwise copied once into a local cache; the artifact's SHA-256 index is checked on load
either way.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from trainer.artifact_index import INDEX_FILE
from trainer.paths import resolve


def local_model_dir(uri: str, *, storage_client: Any = None, cache_dir: Path | None = None) -> Path:
    """Returns a local folder holding the model at ``uri``.

    Args:
        uri: ``gs://BUCKET/PATH``, ``/gcs/BUCKET/PATH`` or a local folder.
        storage_client: A ``google.cloud.storage.Client`` (or a fake); created on demand.
        cache_dir: Where a downloaded copy goes (default: a new temporary folder).

    Returns:
        The folder; for a download, the copy.

    Raises:
        FileNotFoundError: Nothing is stored under ``uri``.
    """
    mapped = resolve(uri)
    if not uri.startswith("gs://") or (mapped / INDEX_FILE).is_file():
        return mapped
    bucket_name, _, prefix = uri[len("gs://") :].partition("/")
    prefix = prefix.rstrip("/") + "/" if prefix else ""
    if storage_client is None:
        from google.cloud import storage

        storage_client = storage.Client()
    target = cache_dir or Path(tempfile.mkdtemp(prefix="model-"))
    try:
        if not _download(storage_client, bucket_name, prefix, target):
            raise FileNotFoundError(f"no objects under {uri}; is AIP_STORAGE_URI the model folder?")
    except BaseException:
        if cache_dir is None:  # a folder made here for a copy that failed is nobody's
            shutil.rmtree(target, ignore_errors=True)
        raise
    return target


def _download(storage_client: Any, bucket_name: str, prefix: str, target: Path) -> int:
    """Copies the objects under ``prefix`` into ``target``; returns how many."""
    copied = 0
    for blob in storage_client.list_blobs(bucket_name, prefix=prefix):
        relative = blob.name[len(prefix) :]
        if not relative or relative.endswith("/"):
            continue
        destination = (target / relative).resolve()
        if target.resolve() not in destination.parents:
            raise ValueError(f"refusing object {blob.name!r}: it would leave {target}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        partial = destination.with_name(destination.name + ".partial")
        blob.download_to_filename(os.fspath(partial))
        partial.replace(destination)
        copied += 1
    return copied

"""Backend choice shared by every component: ``"vertex"`` or ``"local"``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

BACKENDS = ("vertex", "local")


def check_backend(backend: str) -> str:
    """Returns ``backend`` if it is known, else raises a ValueError that lists the choices."""
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(repr(b) for b in BACKENDS)}; got {backend!r}. "
            "Use 'local' to run on this machine and 'vertex' on Vertex AI Pipelines."
        )
    return backend


def readable_path(backend: str, uri: str) -> Path:
    """Maps a ``gs://``, ``/gcs/`` or local location to a path this process can open.

    On Vertex, Cloud Storage is mounted at ``/gcs/``; locally it is the local storage root.
    """
    if check_backend(backend) == "local":
        from vertex_retrain.backends.local.storage import to_local_path

        return to_local_path(uri)
    if uri.startswith("gs://"):
        return Path("/gcs") / uri[len("gs://") :]
    return Path(uri)


@contextlib.contextmanager
def temporary_env(name: str, value: str) -> Iterator[None]:
    """Sets one environment variable for the duration of the block, then restores it."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@contextlib.contextmanager
def gcs_fuse_root(backend: str) -> Iterator[None]:
    """Points ``GCS_FUSE_ROOT`` at the local storage root while code shared with jobs runs.

    The trainer's own path mapping (``trainer.paths.resolve``) honours ``GCS_FUSE_ROOT``;
    on Vertex nothing changes and ``/gcs`` is the real mount.
    """
    if check_backend(backend) != "local":
        yield
        return
    from vertex_retrain.backends.local.storage import gcs_root

    with temporary_env("GCS_FUSE_ROOT", str(gcs_root())):
        yield

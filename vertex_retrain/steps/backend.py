"""Which backend a step runs on: the one a test passed in, or the one its inputs name."""

from __future__ import annotations

from pathlib import Path

from vertex_retrain.backends import backend_for
from vertex_retrain.backends.base import BACKENDS, Backend, check_backend

__all__ = ["BACKENDS", "check_backend", "readable_path", "resolve_backend"]


def resolve_backend(
    name: str | Backend, *, project: str = "", location: str = "", backend: Backend | None = None
) -> Backend:
    """The backend a step uses.

    Args:
        name: The component's ``backend`` input (``"local"`` or ``"vertex"``), or a backend.
        project: Google Cloud project (Vertex).
        location: Google Cloud region (Vertex).
        backend: A backend built by the caller (a test passing fakes to its constructor);
            it must be the kind ``name`` says.

    Raises:
        ValueError: An unknown name, or a backend of another kind than ``name``.
    """
    if not isinstance(name, str):
        return name
    check_backend(name)
    if backend is None:
        return backend_for(name, project=project, location=location)
    if backend.name != name:
        raise ValueError(
            f"the request says backend={name!r} but a {backend.name!r} backend was passed in; "
            "pass the backend the request names"
        )
    return backend


def readable_path(backend: str | Backend, uri: str) -> Path:
    """Maps a ``gs://``, ``/gcs/`` or local location to a path this process can open.

    On Vertex, Cloud Storage is mounted at ``/gcs/``; locally it is the local storage root.
    """
    return resolve_backend(backend).readable_path(uri)

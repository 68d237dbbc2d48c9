"""The two backends behind one interface (:class:`~vertex_retrain.backends.base.Backend`).

``backend_for`` builds the backend a component's ``backend`` parameter names, with its real
clients (created lazily, on first use). Tests construct ``LocalBackend`` or ``VertexBackend``
themselves and pass fakes to the constructor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertex_retrain.backends.base import BACKENDS, check_backend

if TYPE_CHECKING:
    from vertex_retrain.backends.base import Backend

__all__ = ["BACKENDS", "backend_for", "check_backend"]


def backend_for(name: str, *, project: str = "", location: str = "") -> Backend:
    """The backend called ``name``, with its default clients.

    Args:
        name: ``"local"`` or ``"vertex"``.
        project: Google Cloud project (Vertex; the local backend ignores it).
        location: Vertex AI region (Vertex; the local backend ignores it).

    Raises:
        ValueError: An unknown name; the message lists the choices.
    """
    if check_backend(name) == "local":
        from vertex_retrain.backends.local.backend import LocalBackend

        return LocalBackend()
    from vertex_retrain.backends.vertex.backend import VertexBackend

    return VertexBackend(project, location)

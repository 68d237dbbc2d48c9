"""Looking up the version that currently holds an alias (the champion), on either backend."""

from __future__ import annotations

from vertex_retrain.backends.base import AliasHolder, Backend
from vertex_retrain.steps.backend import resolve_backend

__all__ = ["AliasHolder", "find_alias_holder"]


def find_alias_holder(
    *,
    backend: str | Backend,
    display_name: str,
    alias: str,
    project: str = "",
    location: str = "",
) -> AliasHolder | None:
    """Returns the version of ``display_name`` that holds ``alias``, or None if there is none.

    Args:
        backend: ``"local"`` or ``"vertex"``, or a backend (a test's, with fakes).
        display_name: The registry model.
        alias: The alias, e.g. ``champion``.
        project: Google Cloud project (Vertex).
        location: Google Cloud region (Vertex).
    """
    chosen = resolve_backend(backend, project=project, location=location)
    return chosen.find_alias_holder(display_name, alias)

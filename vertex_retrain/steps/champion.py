"""Looking up the version that currently holds an alias (the champion), on either backend."""

from __future__ import annotations

from dataclasses import dataclass

from vertex_retrain.steps.backend import check_backend


@dataclass(frozen=True)
class AliasHolder:
    """The version holding an alias, and where its model artifacts are."""

    version_id: str
    artifact_uri: str


def find_alias_holder(
    *, backend: str, display_name: str, alias: str, project: str = "", location: str = ""
) -> AliasHolder | None:
    """Returns the version of ``display_name`` that holds ``alias``, or None if there is none."""
    if check_backend(backend) == "local":
        from vertex_retrain.backends.local.registry import ModelRegistry
        from vertex_retrain.backends.local.registry_db import RegistryNotFoundError

        try:
            version = ModelRegistry().get_version(display_name, alias)
        except RegistryNotFoundError:
            return None
        return AliasHolder(version.version_id, version.artifact_uri)
    from vertex_retrain.backends.vertex.model_registry import find_model_version

    found = find_model_version(
        project=project, location=location, display_name=display_name, alias=alias
    )
    if found is None:
        return None
    return AliasHolder(str(found.get("versionId", "")), str(found.get("artifactUri", "")))

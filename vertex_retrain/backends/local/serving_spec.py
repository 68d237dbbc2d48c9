"""The Vertex serving container spec (`ModelContainerSpec` JSON), checked and run locally.

This module validates the spec a model version carries, builds the `AIP_*` environment that
Vertex gives a prediction container, expands `$(VAR)` references the way Vertex does, and
turns the spec into a local command line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local.registry_db import RegistryInputError
from vertex_retrain.backends.local.storage import local_root

# Every field of aiplatform_v1.ModelContainerSpec in its JSON (camelCase) form.
KNOWN_FIELDS = frozenset(
    {
        "imageUri",
        "command",
        "args",
        "env",
        "ports",
        "predictRoute",
        "healthRoute",
        "invokeRoutePrefix",
        "grpcPorts",
        "deploymentTimeout",
        "sharedMemorySizeMb",
        "startupProbe",
        "healthProbe",
        "livenessProbe",
    }
)
_PYTHON_NAMES = frozenset({"python", "python3", f"python3.{sys.version_info.minor}"})
_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _string_list(spec: Mapping[str, Any], key: str) -> list[str]:
    value = spec.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RegistryInputError(
            f"serving container spec field {key!r} must be a list of strings, got "
            f"{value!r}; e.g. {key}: ['python', '-m', 'trainer.serve']"
        )
    return list(value)


def validate_container_spec(spec: Any) -> dict[str, Any]:
    """Check a `ModelContainerSpec` in JSON form and return a normalised copy.

    Args:
        spec: Mapping with camelCase keys: `imageUri` (required), `command`, `args`, `env`
            (`[{"name", "value"}]`), `ports` (`[{"containerPort"}]`), `predictRoute`,
            `healthRoute`, and the other Vertex fields (stored, not used locally).

    Returns:
        A plain dict copy of the spec.

    Raises:
        RegistryInputError: A field is missing, unknown or of the wrong type.
    """
    if not isinstance(spec, Mapping):
        raise RegistryInputError(
            f"serving container spec must be a mapping (Vertex ModelContainerSpec JSON), got "
            f"{type(spec).__name__}; e.g. {{'imageUri': 'IMAGE', 'command': ['python', "
            "'serve.py']}"
        )
    unknown = sorted(set(spec) - KNOWN_FIELDS)
    if unknown:
        raise RegistryInputError(
            f"serving container spec has unknown field(s) {unknown}; expected camelCase "
            f"ModelContainerSpec fields: {sorted(KNOWN_FIELDS)}"
        )
    image = spec.get("imageUri")
    if not isinstance(image, str) or not image:
        raise RegistryInputError(
            f"serving container spec needs a non-empty string 'imageUri', got {image!r}"
        )
    _string_list(spec, "command")
    _string_list(spec, "args")
    env = spec.get("env", [])
    if not isinstance(env, list) or not all(
        isinstance(item, Mapping)
        and isinstance(item.get("name"), str)
        and item["name"]
        and isinstance(item.get("value", ""), str)
        for item in env
    ):
        raise RegistryInputError(
            f"serving container spec 'env' must be a list of {{'name': str, 'value': str}}, "
            f"got {env!r}"
        )
    ports = spec.get("ports", [])
    if not isinstance(ports, list) or not all(
        isinstance(item, Mapping) and isinstance(item.get("containerPort"), int) for item in ports
    ):
        raise RegistryInputError(
            f"serving container spec 'ports' must be a list of {{'containerPort': int}}, got "
            f"{ports!r}"
        )
    for route_field in ("predictRoute", "healthRoute"):
        route = spec.get(route_field)
        if route is not None and (not isinstance(route, str) or not route.startswith("/")):
            raise RegistryInputError(
                f"serving container spec {route_field!r} must be a path starting with '/', "
                f"got {route!r}"
            )
    return dict(spec)


def expand_references(text: str, variables: Mapping[str, str]) -> str:
    """Expand `$(NAME)` as Vertex does: unknown names stay as written, `$$` escapes a `$`."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return variables.get(match.group(1), match.group(0))

    return _VAR_REF.sub(replace, text)


def default_routes(endpoint_id: str, deployed_model_id: str) -> tuple[str, str]:
    """Return Vertex's default (health route, predict route) for a deployed model."""
    base = f"/v1/endpoints/{endpoint_id}/deployedModels/{deployed_model_id}"
    return base, f"{base}:predict"


def serving_environment(
    spec: Mapping[str, Any],
    *,
    port: int,
    storage_dir: str,
    endpoint_id: str,
    deployed_model_id: str,
    model_display_name: str,
    version_id: str,
) -> dict[str, str]:
    """Return the environment Vertex gives a prediction container, then the spec's `env`.

    Args:
        spec: A validated container spec.
        port: The local port the server must listen on (`AIP_HTTP_PORT`).
        storage_dir: Local directory holding the model artifacts (`AIP_STORAGE_URI`).
        endpoint_id: `AIP_ENDPOINT_ID`.
        deployed_model_id: `AIP_DEPLOYED_MODEL_ID`.
        model_display_name: `AIP_MODEL_NAME`.
        version_id: `AIP_VERSION_NAME`.

    Returns:
        Variables to add to the server's environment; later `env` entries may reference
        earlier ones and the `AIP_*` variables with `$(NAME)`.
    """
    health_default, predict_default = default_routes(endpoint_id, deployed_model_id)
    variables = {
        "AIP_HTTP_PORT": str(port),
        "AIP_HEALTH_ROUTE": spec.get("healthRoute") or health_default,
        "AIP_PREDICT_ROUTE": spec.get("predictRoute") or predict_default,
        "AIP_STORAGE_URI": storage_dir,
        "AIP_MODEL_DIR": storage_dir,
        "AIP_MODE": "PREDICTION",
        "AIP_ENDPOINT_ID": endpoint_id,
        "AIP_DEPLOYED_MODEL_ID": deployed_model_id,
        "AIP_MODEL_NAME": model_display_name,
        "AIP_VERSION_NAME": version_id,
    }
    for item in spec.get("env", []):
        variables[item["name"]] = expand_references(item.get("value", ""), variables)
    return variables


@dataclass(frozen=True)
class ServingLaunch:
    """How to start a prediction server locally.

    Attributes:
        argv: Command line, before `$(VAR)` expansion.
        cwd: Working folder (the build context for a locally built image), or None.
        env: Environment from the image (its Dockerfile ENV, `PYTHONPATH`) and the spec's
            `env` (unexpanded; `serving_environment` supplies the expanded values).
        warnings: Where the local run differs from the image (written to the server log).
    """

    argv: list[str]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def resolve_serving_launch(
    container_spec: Mapping[str, Any], root: Path | None = None
) -> ServingLaunch:
    """Work out how to run a serving container spec on this machine.

    - An image made by the local builder (`vertex_retrain.backends.local.builder`) runs its Python
      ENTRYPOINT/CMD, or `command`/`args` when given, from its build context with its ENV, as
      the local executor runs training images.
    - Any other image needs an explicit `command`: `command` + `args` run as given, with
      `python`/`python3` as the program replaced by this interpreter (`sys.executable`).

    Args:
        container_spec: A validated container spec.
        root: Local storage root (holding the build index); defaults to `local_root()`.

    Returns:
        The command line, working folder and image environment.

    Raises:
        RegistryInputError: No local command can be determined.
    """
    # Lazy: the build modules are only needed when a spec is actually started.
    from vertex_retrain.backends.local.build_index import ImageNotBuiltError
    from vertex_retrain.backends.local.pool_launch import PoolLaunchError, resolve_pool

    image = str(container_spec.get("imageUri", ""))
    command = list(container_spec.get("command") or [])
    pool_spec = {
        k: container_spec[k] for k in ("imageUri", "command", "args", "env") if k in container_spec
    }
    try:
        launch = resolve_pool({"containerSpec": pool_spec}, root or local_root())
    except ImageNotBuiltError as error:
        if not command:
            raise RegistryInputError(
                f"cannot start image {image!r} locally: its serving spec has no 'command', and "
                f"the image's ENTRYPOINT is unknown here ({error}). Build the image with the "
                "local builder, or register the version with an explicit command, e.g. "
                "{'command': ['python', '-m', 'trainer.serve'], 'args': [...]}, which Vertex "
                "also honours"
            ) from None
    except PoolLaunchError as error:
        raise RegistryInputError(f"cannot start image {image!r} locally: {error}") from None
    else:
        return ServingLaunch(list(launch.argv), launch.cwd, dict(launch.env), launch.warnings)
    if command[0] in _PYTHON_NAMES:
        command[0] = sys.executable
    return ServingLaunch(command + list(container_spec.get("args") or []))


def resolve_serving_command(container_spec: Mapping[str, Any]) -> list[str]:
    """Return the local command line standing for the container's entrypoint.

    See `resolve_serving_launch`, which also gives the working folder and image environment.

    Raises:
        RegistryInputError: No local command can be determined.
    """
    return resolve_serving_launch(container_spec).argv

"""The Vertex serving container spec (`ModelContainerSpec` JSON), checked and run locally.

This module validates the spec a model version carries, builds the `AIP_*` environment that
Vertex gives a prediction container, expands `$(VAR)` references the way Vertex does, and
turns the spec into a local command line: in the environment of the version's serving
package, or from the build context of an image the local builder made; never with this
process's interpreter and packages.
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.backends.local.model_registry.registry_db import RegistryInputError
from vertex_retrain.backends.local.storage import local_root

if TYPE_CHECKING:
    from vertex_retrain.backends.local.model_registry.registry_records import ModelVersion

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
            f"{value!r}; e.g. {key}: ['python', '-m', 'mypackage.serve']"
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
        isolated: It runs in a package environment of its own, which this process's
            `PYTHONPATH` and friends must not widen.
    """

    argv: list[str]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    isolated: bool = False


_PACKAGE_SUFFIXES = (".whl", ".tar.gz", ".zip")
_EXTRA = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


def check_serving_package(uri: Any, extras: Any) -> tuple[str, tuple[str, ...]]:
    """Checks a version's serving package URI and extras; returns them normalised.

    Raises:
        RegistryInputError: Not a wheel/sdist URI, extras without a package, or an extra
            that is not a valid name.
    """
    if not isinstance(uri, str) or (uri and not uri.endswith(_PACKAGE_SUFFIXES)):
        raise RegistryInputError(
            f"serving_package_uri must be the URI of a wheel or sdist (.whl, .tar.gz, .zip), "
            f"e.g. gs://bucket/packages/mytrainer-1.0-py3-none-any.whl; got {uri!r}"
        )
    if isinstance(extras, str) or not all(isinstance(e, str) and _EXTRA.match(e) for e in extras):
        raise RegistryInputError(
            f"serving_extras must be a list of extra names such as ['serve'], got {extras!r}"
        )
    if extras and not uri:
        raise RegistryInputError(
            f"serving_extras {list(extras)} name extras of a serving package, but "
            "serving_package_uri is empty; pass the package's URI too"
        )
    return uri, tuple(sorted(set(extras)))


def _package_launch(
    container_spec: Mapping[str, Any], root: Path, package_uri: str, extras: Sequence[str]
) -> ServingLaunch:
    # Lazy: building environments is only needed when a server actually starts.
    from vertex_retrain.backends.local.environments.python_env import (
        PackageEnvError,
        prepare_package_env,
    )

    command = list(container_spec.get("command") or [])
    if not command or posixpath.basename(command[0]) not in _PYTHON_NAMES:
        raise RegistryInputError(
            f"serving command {command!r} cannot run locally in the environment of "
            f"{package_uri}: the local backend runs `python -m MODULE ...` there; register "
            "the version with serving_command, e.g. ['python', '-m', 'mytrainer.serve']"
        )
    try:
        env = prepare_package_env([package_uri], root=root, extras=extras)
    except PackageEnvError as error:
        raise RegistryInputError(
            f"cannot build the serving environment of {package_uri}: {error}"
        ) from None
    argv = [str(env.python), *command[1:], *map(str, container_spec.get("args") or [])]
    return ServingLaunch(argv, None, {}, env.warnings, isolated=True)


def resolve_serving_launch(
    container_spec: Mapping[str, Any],
    root: Path | None = None,
    *,
    package_uri: str = "",
    extras: Sequence[str] = (),
) -> ServingLaunch:
    """Work out how to run a version's serving container spec on this machine.

    - With a serving package (`package_uri`, registered with the version), the spec's
      `command` (`python -m MODULE`) and `args` run in an environment built from that
      package and its `extras`, as a local job's package runs (`python_env`): the package
      and its requirements, nothing of this process's environment.
    - Otherwise the image must have been made by the local builder: its Python
      ENTRYPOINT/CMD, or `command`/`args` when given, runs from its build context with its
      ENV, as the local executor runs training images.
    - Anything else is refused: its code is not on this machine.

    Args:
        container_spec: A validated container spec.
        root: Local storage root (builds, environments); defaults to `local_root()`.
        package_uri: The version's serving package (wheel or sdist URI), or empty.
        extras: Extras of the serving package.

    Returns:
        The command line, working folder and image environment.

    Raises:
        RegistryInputError: No local command can be determined; the message says what to
            pass.
    """
    # Lazy: the build modules are only needed when a spec is actually started.
    from vertex_retrain.backends.local.environments.build_index import (
        ImageNotBuiltError,
        StaleImageError,
    )
    from vertex_retrain.backends.local.jobs.pool_launch import PoolLaunchError, resolve_pool

    root = root or local_root()
    if package_uri:
        return _package_launch(container_spec, root, package_uri, extras)
    image = str(container_spec.get("imageUri", ""))
    pool_spec = {
        k: container_spec[k] for k in ("imageUri", "command", "args", "env") if k in container_spec
    }
    try:
        launch = resolve_pool({"containerSpec": pool_spec}, root)
    except StaleImageError as error:
        raise RegistryInputError(f"cannot serve this version locally: {error}") from None
    except ImageNotBuiltError:
        raise RegistryInputError(
            f"cannot serve this version locally: it has no serving package and its image "
            f"{image!r} was not built by the local builder; register it with "
            "serving_package_uri (the wheel holding its serving code) and serving_extras (the "
            "extras that code needs), or build the image with build_container"
        ) from None
    except PoolLaunchError as error:
        raise RegistryInputError(f"cannot start image {image!r} locally: {error}") from None
    return ServingLaunch(list(launch.argv), launch.cwd, dict(launch.env), launch.warnings)


def version_launch(version: ModelVersion, root: Path) -> ServingLaunch:
    """How to run a registered version's server here (see `resolve_serving_launch`)."""
    return resolve_serving_launch(
        version.container_spec,
        root,
        package_uri=version.serving_package_uri,
        extras=version.serving_extras,
    )

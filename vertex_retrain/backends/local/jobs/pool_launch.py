"""Turning a worker pool spec into the command a local process runs.

- `pythonPackageSpec`: `python -m <pythonModule> <args>` in a cached environment holding the
  package (see `python_env`).
- `containerSpec` of an image made by the local builder: the image's Python entrypoint
  (ENTRYPOINT/CMD, overridden by `command`/`args` as on Kubernetes), run from the build
  context with the Dockerfile's ENV; in an environment holding only the context's project
  when the Dockerfile pip-installs it (else with the context on `PYTHONPATH`). Any other image
  is refused with what would work.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local.environments.build_index import lookup_image
from vertex_retrain.backends.local.environments.python_env import (
    framework_warnings,
    prepare_package_env,
)
from vertex_retrain.backends.local.jobs.job_sandbox import CALLER_PYTHON_VARIABLES

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")


class PoolLaunchError(ValueError):
    """A worker pool the local executor cannot start."""


@dataclass(frozen=True)
class PoolLaunch:
    """How to start every replica of one pool.

    Attributes:
        argv: The replica's command.
        cwd: Its working folder (None: the job's `work` folder).
        env: Variables of the pool (image ENV, the spec's `env`).
        warnings: Where the local run differs from Vertex.
        isolated: The command runs in a package environment of its own, which the caller's
            `CALLER_PYTHON_VARIABLES` must not widen.
    """

    argv: list[str]
    cwd: Path | None
    env: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    isolated: bool = False

    def inherited(self, environ: Mapping[str, str]) -> dict[str, str]:
        """What a replica keeps of this process's environment."""
        dropped = CALLER_PYTHON_VARIABLES if self.isolated else ()
        return {key: value for key, value in environ.items() if key not in dropped}


def _spec_env(items: list[dict[str, Any]] | None) -> dict[str, str]:
    return {str(item["name"]): str(item.get("value", "")) for item in items or []}


def _python_package(spec: dict[str, Any], root: Path) -> PoolLaunch:
    module = spec.get("pythonModule")
    if not module:
        raise PoolLaunchError("pythonPackageSpec.pythonModule is empty; name the module to run")
    image = str(spec.get("executorImageUri", ""))
    env = prepare_package_env(
        list(spec.get("packageUris") or []), root=root, executor_image_uri=image
    )
    warnings = [*framework_warnings(image), *env.warnings]
    argv = [str(env.python), "-m", str(module), *map(str, spec.get("args") or [])]
    return PoolLaunch(argv, None, _spec_env(spec.get("env")), tuple(warnings), isolated=True)


def _map_container_path(arg: str, workdir: str, context: Path) -> str:
    """Point container paths under WORKDIR at the build context, which stands in for it."""
    if workdir != "/" and (arg == workdir or arg.startswith(workdir.rstrip("/") + "/")):
        return str(context / posixpath.relpath(arg, workdir))
    return arg


def _container(spec: dict[str, Any], root: Path) -> PoolLaunch:
    image = str(spec.get("imageUri", ""))
    build = lookup_image(image, root)
    # Kubernetes semantics, which Vertex follows: command replaces ENTRYPOINT (and drops CMD),
    # args replaces CMD.
    if spec.get("command"):
        argv = [*map(str, spec["command"]), *map(str, spec.get("args") or [])]
    else:
        cmd = spec.get("args") if spec.get("args") else build.get("cmd")
        argv = [*(build.get("entrypoint") or []), *map(str, cmd or [])]
    if argv[:2] == ["/bin/sh", "-c"] and len(argv) >= 3:
        argv = shlex.split(argv[2]) + argv[3:]  # shell form: run the command it names
    if not argv:
        raise PoolLaunchError(
            f"image {image} declares no ENTRYPOINT or CMD and containerSpec.command is empty; "
            "add ENTRYPOINT to the Dockerfile or set containerSpec.command"
        )
    if not _PYTHON.match(posixpath.basename(argv[0])):
        raise PoolLaunchError(
            f"image {image} starts {argv[0]!r}; the local executor runs Python entrypoints only "
            '(e.g. ENTRYPOINT ["python", "-m", "mypackage.task"]). Use a Python entrypoint or a '
            "pythonPackageSpec"
        )
    context = Path(build["context"])
    workdir = str(build.get("workdir") or "/")
    env = {**build.get("env", {}), **_spec_env(spec.get("env"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # keep the build context free of __pycache__
    rest = [_map_container_path(a, workdir, context) for a in argv[1:]]
    if build.get("package"):
        # The Dockerfile pip-installs the context's project: the replica gets an environment
        # holding that project and its requirements only, as the image does.
        project = prepare_package_env(
            [str(build["package"])], root=root, extras=build.get("extras") or ()
        )
        warnings = (
            f"image {image} runs in an environment holding only its project "
            f"({Path(build['package']).name}, extras {build.get('extras') or []}) and its "
            f"requirements, with this machine's Python; other RUN steps of its Dockerfile "
            "are not executed locally",
            *project.warnings,
        )
        return PoolLaunch([str(project.python), *rest], context, env, warnings, isolated=True)
    env["PYTHONPATH"] = str(context)
    warnings = (
        f"image {image} runs from its build context {context} with this machine's Python; "
        "RUN steps of its Dockerfile (e.g. pip install) are not executed locally",
    )
    return PoolLaunch([sys.executable, *rest], context, env, warnings)


def resolve_pool(pool: dict[str, Any], root: Path) -> PoolLaunch:
    """Work out how to start the replicas of a worker pool.

    Args:
        pool: One entry of `jobSpec.workerPoolSpecs`.
        root: Local storage root.

    Returns:
        The command, working folder and extra environment.

    Raises:
        PoolLaunchError, ImageNotBuiltError, PackageEnvError: The pool cannot run locally.
    """
    if "pythonPackageSpec" in pool:
        return _python_package(pool["pythonPackageSpec"], root)
    return _container(pool["containerSpec"], root)

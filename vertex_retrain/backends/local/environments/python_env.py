"""Cached, isolated Python environments for `pythonPackageSpec` worker pools and servers.

On Vertex a package pool runs on its executor image: the image's Python and framework, the
package pip installed, and the package's requirements. Locally a job gets the same thing, and
nothing more, in a virtual environment of its own under `<root>/envs/`:

- the package files given (`packageUris`), installed from exactly those files
  (`wheel_install`), even when this process has a distribution of the same name and version;
- the closure of their requirements (markers evaluated, extras when asked) and of what the
  executor image provides (its framework and the packages `specs/containers.yaml` lists),
  each satisfied by a distribution installed in this process's environment and linked into a
  read-only view (`requirement_closure`, `dist_view`): fast and offline;
- a requirement that no installed version satisfies, installed from the package index with
  pip into the environment (one warning line says so); when pip cannot, the job fails before
  it starts, naming the requirement, who needs it and what is installed.

The environment cannot see anything else this process can import: it is a venv without
system site-packages, and the view holds only the closure. Environments and views are keyed
by what they hold and reused until that changes.

Before anything is installed, each package is checked against the declared executor image
with the checker `compile.py preflight` uses (:mod:`vertex_retrain.specs.package_compat`), so
a package pip could not install on Vertex fails here too, with the same message.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.environments.dist_view import build_view
from vertex_retrain.backends.local.environments.requirement_closure import (
    Closure,
    InstalledDistributions,
    resolve_closure,
)
from vertex_retrain.backends.local.environments.wheel_install import (
    PackageInstallError,
    install_wheel,
    site_packages,
    wheel_of,
)
from vertex_retrain.backends.local.storage import file_lock, read_json, to_local_path
from vertex_retrain.build.context import BuildError
from vertex_retrain.build.package_metadata import read_package_metadata
from vertex_retrain.specs.containers import ImageName, load_containers, parse_image_name
from vertex_retrain.specs.package_compat import (
    PackageMetadata,
    executor_image_problems,
    package_problems,
)
from vertex_retrain.specs.problems import errors_of, warnings_of

_PACKAGE_SUFFIXES = (".whl", ".tar.gz", ".zip")
_FORMAT = "vertex-retrain-env/2"
"""Part of every cache key: bump it when the layout of an environment or a view changes."""
_VIEW_PTH = "_vertex_local_view.pth"


class PackageEnvError(ValueError):
    """A python package pool that cannot be prepared locally."""


@dataclass(frozen=True)
class PackageEnv:
    """A ready environment: its interpreter and what the user should know about it."""

    python: Path
    digest: str
    warnings: tuple[str, ...]
    reused: bool


def parse_executor_image(image_uri: str) -> ImageName | None:
    """Parse a prebuilt image URI such as `.../pytorch-gpu.2-4.py310:latest`.

    Returns:
        The framework, its version and the Python version, or None for other images.
    """
    return parse_image_name(image_uri)


def framework_warnings(executor_image_uri: str) -> list[str]:
    """Say how the local environment differs from the prebuilt image it stands in for."""
    image = parse_executor_image(executor_image_uri)
    if image is None:
        return [
            f"executorImageUri {executor_image_uri!r} is not a recognised Vertex prebuilt "
            "training image; the job's environment holds only its package and requirements"
        ]
    out = []
    try:
        local = importlib.metadata.version(image.distribution)
    except importlib.metadata.PackageNotFoundError:
        local = None
    if local is None:
        out.append(
            f"image {executor_image_uri} provides {image.distribution} {image.version}, which "
            f"is not installed locally; imports of it will fail (pip install "
            f"'{image.distribution}=={image.version}.*' into this environment)"
        )
    elif ".".join(local.split("+")[0].split(".")[:2]) != image.version:
        out.append(
            f"image {executor_image_uri} has {image.distribution} {image.version}; locally "
            f"{image.distribution} {local} runs instead, so results and APIs may differ"
        )
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if image.python and image.python != here:
        out.append(f"image {executor_image_uri} runs Python {image.python}; locally Python {here}")
    if image.accelerator == "gpu":
        out.append(f"image {executor_image_uri} is a GPU image; the local run uses this machine")
    return out


def image_provides(executor_image_uri: str) -> dict[str, str]:
    """Distribution name -> who provides it, for what a prebuilt training image ships.

    The framework its name says, and the packages the container catalog lists for it.
    """
    image = parse_image_name(executor_image_uri) if executor_image_uri else None
    if image is None:
        return {}
    who = f"the executor image {image.name}"
    provided = {image.distribution: who}
    entry = load_containers().lookup(executor_image_uri, "training")
    for name in entry.includes if entry is not None else ():
        provided.setdefault(name, who)
    return provided


def _package_files(package_uris: list[str], root: Path) -> list[Path]:
    if not package_uris:
        raise PackageEnvError("pythonPackageSpec.packageUris is empty; list the wheel or sdist")
    files = []
    for uri in package_uris:
        path = to_local_path(uri, root)
        if not path.name.endswith(_PACKAGE_SUFFIXES):
            raise PackageEnvError(
                f"package {uri!r} is not a wheel or sdist (.whl, .tar.gz, .zip); build one with "
                "`pip wheel --no-deps -w DIR PROJECT_DIR` and pass its URI in package_uris"
            )
        if not path.is_file():
            raise PackageEnvError(
                f"package {uri!r} not found at {path}; build it there with "
                f"`pip wheel --no-deps -w {path.parent} PROJECT_DIR` (`python compile.py run "
                "NAME --local` builds the reference trainer's wheel by itself)"
            )
        files.append(path)
    return files


def check_packages_for_image(
    package_uris: list[str], files: list[Path], executor_image_uri: str
) -> list[str]:
    """Checks the packages against the executor image as Vertex would install them.

    Args:
        package_uris: `pythonPackageSpec.packageUris`, for the messages.
        files: The local files of those URIs.
        executor_image_uri: `pythonPackageSpec.executorImageUri`.

    Returns:
        Warnings (one line each).

    Raises:
        PackageEnvError: A package pip could not install on the image, or an executor image
            Vertex refuses; the message is the one `compile.py preflight` prints.
    """
    field = "pythonPackageSpec"
    problems = executor_image_problems(executor_image_uri, f"{field}.executorImageUri")
    for index, (uri, path) in enumerate(zip(package_uris, files, strict=True)):
        problems += package_problems(
            _metadata(uri, path), executor_image_uri, f"{field}.packageUris[{index}]"
        )
    errors = errors_of(problems)
    if errors:
        raise PackageEnvError(
            "the package cannot install on its executor image on Vertex:\n"
            + "\n".join(f"  - {problem.describe()}" for problem in errors)
        )
    return [problem.describe() for problem in warnings_of(problems)]


def _metadata(uri: str, path: Path) -> PackageMetadata:
    try:
        return read_package_metadata(path)
    except BuildError as error:
        raise PackageEnvError(f"package {uri!r}: {error}") from None


def _digest(parts: Iterable[str]) -> str:
    digest = hashlib.sha256(_FORMAT.encode())
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _ensure_view(root: Path, closure: Closure, installed: InstalledDistributions) -> Path | None:
    """The view of the closure's linked distributions, built once per content."""
    if not closure.linked:
        return None
    key = _digest(f"{d.name} {d.version} {d.metadata_dir}" for d in closure.linked.values())
    views = root / "envs" / "views"
    view = views / key[:16]
    marker = views / f"{key[:16]}.json"
    views.mkdir(parents=True, exist_ok=True)
    with file_lock(views / f"{key[:16]}.lock"):
        if read_json(marker) is None:
            shutil.rmtree(view, ignore_errors=True)  # a half-built view from a crash
            view.mkdir()
            links = build_view(view, list(closure.linked.values()), installed)
            atomic_write_json(marker, {"linked": sorted(closure.linked), "links": links})
    return view


def _pip_error(output: str) -> str:
    errors = [line.strip() for line in output.splitlines() if line.startswith("ERROR")]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return (errors or lines or ["(no output)"])[-1]


def _install_from_index(env_dir: Path, closure: Closure) -> list[str]:
    requirements = [need.requirement for need in closure.unsatisfied]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install",
         "--disable-pip-version-check", "--no-input", *requirements],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
    )  # fmt: skip
    needs = "; ".join(need.describe() for need in closure.unsatisfied)
    if done.returncode != 0:
        raise PackageEnvError(
            f"the job's environment cannot be prepared: no installed version satisfies "
            f"{needs}, and pip could not install it from the package index: "
            f"{_pip_error(done.stdout)}"
        )
    return [f"installed from the package index into the job's environment: {needs}"]


def _create(
    env_dir: Path,
    files: list[Path],
    view: Path | None,
    closure: Closure,
) -> list[str]:
    shutil.rmtree(env_dir, ignore_errors=True)  # a half-built env from a crash
    venv.EnvBuilder(symlinks=True, with_pip=False).create(env_dir)
    site = site_packages(env_dir)
    if view is not None:
        # addsitedir (not a bare path line) also runs the .pth files the linked
        # distributions installed, e.g. an editable install's finder.
        (site / _VIEW_PTH).write_text(f"import site; site.addsitedir({str(view)!r})\n")
    try:
        for package in files:
            install_wheel(wheel_of(package, env_dir), env_dir)
    except PackageInstallError as error:
        raise PackageEnvError(str(error)) from None
    return _install_from_index(env_dir, closure) if closure.unsatisfied else []


def prepare_package_env(
    package_uris: list[str],
    *,
    root: Path,
    executor_image_uri: str = "",
    extras: Iterable[str] = (),
    installed: InstalledDistributions | None = None,
) -> PackageEnv:
    """Builds (or reuses) the environment that runs the packages, and nothing else.

    Args:
        package_uris: `pythonPackageSpec.packageUris` (gs:// or /gcs/ URIs, or local paths).
        root: Local storage root; environments live in `<root>/envs/`.
        executor_image_uri: The pool's `executorImageUri`: the packages are checked against
            it first (:func:`check_packages_for_image`), and what it provides joins the
            environment; empty: neither.
        extras: Extras of the packages to include (a serving package's `serve`).
        installed: Where requirements are found; defaults to this process's `sys.path`.

    Returns:
        The environment's interpreter, its digest, warnings, and whether it was reused.

    Raises:
        PackageEnvError: A package is missing, not a wheel/sdist or cannot install on the
            executor image, or a requirement can be had neither here nor from the index.
    """
    files = _package_files(package_uris, root)
    checked = (
        check_packages_for_image(package_uris, files, executor_image_uri)
        if executor_image_uri
        else []
    )
    packages = [_metadata(uri, path) for uri, path in zip(package_uris, files, strict=True)]
    installed = installed or InstalledDistributions()
    wanted = sorted(set(extras))
    provided = image_provides(executor_image_uri)
    closure = resolve_closure(packages, installed, extras=wanted, provided=provided)
    digest = _digest(
        [
            f"{Path(sys.executable).resolve()} {sys.version}",
            *(f"{p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}" for p in files),
            f"extras {wanted}",
            *(f"{d.name} {d.version} {d.metadata_dir}" for d in closure.linked.values()),
            *(f"index {need.requirement}" for need in closure.unsatisfied),
        ]
    )
    env_dir = root / "envs" / digest[:16]
    marker = env_dir / ".ready.json"
    (root / "envs").mkdir(parents=True, exist_ok=True)
    with file_lock(root / "envs" / f"{digest[:16]}.lock"):
        ready = read_json(marker)
        reused = ready is not None
        if ready is None:
            view = _ensure_view(root, closure, installed)
            notes = _create(env_dir, files, view, closure)
            _verify(env_dir, view, packages, wanted, provided)
            ready = {"packages": [str(p) for p in files], "warnings": notes}
            atomic_write_json(marker, ready)
    warnings = (*checked, *ready["warnings"])
    return PackageEnv(env_dir / "bin" / "python", digest, warnings, reused)


def _verify(
    env_dir: Path,
    view: Path | None,
    packages: list[PackageMetadata],
    extras: list[str],
    provided: dict[str, str],
) -> None:
    """Resolves again inside the environment: every requirement must now be met there."""
    paths = [site_packages(env_dir), *([view] if view is not None else [])]
    inside = resolve_closure(packages, InstalledDistributions(paths), extras=extras,
                             provided=provided)  # fmt: skip
    if inside.unsatisfied:
        raise PackageEnvError(
            "the job's environment was built but still lacks "
            + "; ".join(need.describe() for need in inside.unsatisfied)
            + "; pip installed other versions than the requirements allow"
        )

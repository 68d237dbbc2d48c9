"""Cached, isolated Python environments for `pythonPackageSpec` worker pools.

A prebuilt Vertex executor image (e.g. `pytorch-gpu.2-4.py310`) is an environment that
already holds its framework. Locally, the package goes into a small virtual environment
layered over the current interpreter's site-packages (which hold torch and friends), so a
job starts in seconds instead of reinstalling its framework. Environments are keyed by the
digest of the package files and reused until those change.

Before anything is installed, each package is checked against the declared executor image
with the checker ``compile.py preflight`` uses (:mod:`vertex_retrain.specs.package_compat`):
its ``Requires-Python`` and requirements against the image's Python and framework. A package
pip could not install on Vertex fails here too, with the same message, although the local
install itself (``--no-deps``, on this interpreter) would have worked.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.storage import file_lock, read_json, to_local_path
from vertex_retrain.build.context import BuildError
from vertex_retrain.build.package_metadata import read_package_metadata
from vertex_retrain.specs.containers import ImageName, parse_image_name
from vertex_retrain.specs.package_compat import executor_image_problems, package_problems
from vertex_retrain.specs.problems import errors_of, warnings_of

_PACKAGE_SUFFIXES = (".whl", ".tar.gz", ".zip")
# Runs inside the new environment: lists requirements of its own packages that nothing on
# its path satisfies, so the user learns about them before the job imports them.
_CHECK_REQUIREMENTS = """
import importlib.metadata as md, json, sys
from packaging.requirements import Requirement
own = sys.argv[1]
missing = []
for dist in md.distributions(path=[own]):
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            found = md.version(req.name)
        except md.PackageNotFoundError:
            missing.append(f"{dist.metadata['Name']} needs {text}: not installed")
            continue
        if req.specifier and not req.specifier.contains(found, prereleases=True):
            missing.append(f"{dist.metadata['Name']} needs {text}: found {found}")
print(json.dumps(missing))
"""


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
            "training image; running the package with the local interpreter's libraries"
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


def _digest(files: list[Path]) -> str:
    digest = hashlib.sha256(f"{Path(sys.executable).resolve()}|{sys.version}".encode())
    for path in files:
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _site_packages(env_dir: Path) -> Path:
    return (
        env_dir
        / "lib"
        / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / ("site-packages")
    )


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PackageEnvError(f"{what} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def _create(env_dir: Path, files: list[Path]) -> list[str]:
    shutil.rmtree(env_dir, ignore_errors=True)  # a half-built env from a crash
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], "creating the venv")
    python = env_dir / "bin" / "python"
    # addsitedir (rather than a bare path line) also runs the base's own .pth files, so
    # editable installs in the current environment stay importable.
    lines = [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()]
    (_site_packages(env_dir) / "_vertex_local_base.pth").write_text("\n".join(lines) + "\n")
    _run(
        [
            sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
            "--no-index", "--no-build-isolation", "--disable-pip-version-check", "--quiet",
            *map(str, files),
        ],
        "installing the package (pip install --no-deps)",
    )  # fmt: skip
    missing = json.loads(
        _run([str(python), "-c", _CHECK_REQUIREMENTS, str(_site_packages(env_dir))], "checks")
    )
    return [
        f"{problem}; install it into the current environment (the job's packages are "
        "installed without dependencies)"
        for problem in missing
    ]


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
        try:
            metadata = read_package_metadata(path)
        except BuildError as error:
            raise PackageEnvError(f"package {uri!r}: {error}") from None
        problems += package_problems(metadata, executor_image_uri, f"{field}.packageUris[{index}]")
    errors = errors_of(problems)
    if errors:
        raise PackageEnvError(
            "the package cannot install on its executor image on Vertex:\n"
            + "\n".join(f"  - {problem.describe()}" for problem in errors)
        )
    return [problem.describe() for problem in warnings_of(problems)]


def prepare_package_env(
    package_uris: list[str], *, root: Path, executor_image_uri: str = ""
) -> PackageEnv:
    """Install the packages into a cached environment layered on the current one.

    Args:
        package_uris: `pythonPackageSpec.packageUris` (gs:// or /gcs/ URIs, or local paths).
        root: Local storage root; environments live in `<root>/envs/`.
        executor_image_uri: The pool's `executorImageUri`: the packages are checked against
            it first (:func:`check_packages_for_image`); empty skips the check.

    Returns:
        The environment's interpreter, its digest, warnings, and whether it was reused.

    Raises:
        PackageEnvError: A package is missing, not a wheel/sdist or cannot install on the
            executor image, or pip failed.
    """
    files = _package_files(package_uris, root)
    checked = (
        check_packages_for_image(package_uris, files, executor_image_uri)
        if executor_image_uri
        else []
    )
    digest = _digest(files)
    env_dir = root / "envs" / digest[:16]
    marker = env_dir / ".ready.json"
    with file_lock(root / "envs" / f"{digest[:16]}.lock"):
        ready = read_json(marker)
        reused = ready is not None
        if ready is None:
            ready = {"packages": [str(p) for p in files], "warnings": _create(env_dir, files)}
            atomic_write_json(marker, ready)
    warnings = (*checked, *ready["warnings"])
    return PackageEnv(env_dir / "bin" / "python", digest, warnings, reused)

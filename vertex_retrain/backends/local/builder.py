"""The local builder: Python wheels into the storage root, and container image records.

No Docker daemon is used. `build_container_image` hashes the context (honouring
`.dockerignore`), lints the Dockerfile and records the image in the build index; the local
executor then runs the image's Python entrypoint from that context. The returned reference
`IMAGE@sha256:<digest>` carries the context digest (not a registry manifest digest). Both
builders skip the work when the digest is unchanged.
"""

from __future__ import annotations

import datetime
import hashlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local.build_context import (
    BuildError,
    context_digest,
    extract_archive,
)
from vertex_retrain.backends.local.build_index import (
    IMAGES,
    PACKAGES,
    load_index,
    normalise_image,
    record_build,
)
from vertex_retrain.backends.local.dockerfile_lint import LintFinding, check_build_context
from vertex_retrain.backends.local.storage import local_root, to_local_path

_SKIP_IN_PACKAGES = {"__pycache__", ".git", "build", "dist", ".pytest_cache", ".mypy_cache"}
_ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz")

__all__ = ["BuildError", "BuildResult", "build_container_image", "build_python_package"]


@dataclass(frozen=True)
class BuildResult:
    """What a local build produced.

    Attributes:
        kind: "python_package" or "container_image".
        uri: The wheel's gs:// URI, or the image reference `IMAGE@sha256:<digest>`.
        digest: sha256 of the build inputs.
        skipped: True when the digest was unchanged and nothing was rebuilt.
        path: The wheel on disk, or the build context folder.
        lint: Dockerfile findings (container images only).
    """

    kind: str
    uri: str
    digest: str
    skipped: bool
    path: Path
    lint: tuple[LintFinding, ...] = field(default_factory=tuple)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _package_tree(source: Path) -> list[str]:
    files = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        skip = any(
            part in _SKIP_IN_PACKAGES or part.endswith(".egg-info") for part in relative.parts
        )
        if path.is_file() and not skip and path.suffix != ".pyc":
            files.append(relative.as_posix())
    return files


def _requirements(path: Path) -> list[str]:
    if not path.exists():
        return []
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def _synthesised_pyproject(package: str, name: str, version: str, deps: list[str]) -> str:
    dependencies = ", ".join(f'"{dep}"' for dep in deps)
    return (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{dependencies}]\n\n'
        f'[tool.setuptools.packages.find]\ninclude = ["{package}", "{package}.*"]\n\n'
        '[tool.setuptools.package-data]\n"*" = ["*"]\n'
    )


def _stage_project(source: Path, files: list[str], staging: Path, meta: dict[str, Any]) -> Path:
    """Copy the sources to `staging` (pip builds in-tree and would litter the source)."""
    is_project = (source / "pyproject.toml").exists() or (source / "setup.py").exists()
    target = staging if is_project else staging / source.name
    for relative in files:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / relative, target / relative)
    if not is_project:
        (staging / "pyproject.toml").write_text(
            _synthesised_pyproject(source.name, meta["name"], meta["version"], meta["deps"])
        )
    return staging


def build_python_package(
    source_dir: str | Path,
    *,
    destination_uri: str,
    name: str | None = None,
    version: str | None = None,
) -> BuildResult:
    """Build a wheel of a Python project or bare package folder into the storage root.

    A folder with `pyproject.toml` or `setup.py` is built as is. A bare package folder (an
    `__init__.py`, maybe a `requirements.txt`) gets a minimal pyproject synthesised, with the
    requirements as dependencies.

    Args:
        source_dir: The project or package folder.
        destination_uri: Folder URI for the wheel, e.g. `gs://my-bucket/packages`.
        name: Distribution name for a bare package (default: the folder name).
        version: Version for a bare package (default "0.1.0").

    Returns:
        The wheel's gs:// URI and local path, its digest, and whether the build was skipped.

    Raises:
        BuildError: Not a project or package, name/version given for a real project, or
            the wheel build failed.
    """
    source = Path(source_dir).resolve()
    if not source.is_dir():
        raise BuildError(f"source_dir {source} is not a folder")
    is_project = (source / "pyproject.toml").exists() or (source / "setup.py").exists()
    if not is_project and not (source / "__init__.py").exists():
        raise BuildError(
            f"{source} is neither a Python project (pyproject.toml or setup.py) nor a package "
            "folder (__init__.py); point source_dir at one of them"
        )
    if is_project and (name or version):
        raise BuildError(
            f"{source} is a Python project; set its name and version in pyproject.toml/setup.py "
            "instead of passing name= or version="
        )
    root = local_root()
    meta = {
        "name": name or source.name.replace("_", "-"),
        "version": version or "0.1.0",
        "deps": _requirements(source / "requirements.txt"),
    }
    files = _package_tree(source)
    digest = context_digest(source, files, repr(sorted(meta.items())).encode())
    destination = destination_uri.rstrip("/")
    out_dir = to_local_path(destination, root)
    key = f"{destination}|{source}"
    previous = load_index(root)[PACKAGES].get(key)
    if previous and previous["digest"] == digest and (out_dir / previous["wheel"]).is_file():
        wheel_path = out_dir / previous["wheel"]
        return BuildResult("python_package", previous["uri"], digest, True, wheel_path)
    with tempfile.TemporaryDirectory(prefix="vertex-local-wheel-") as tmp:
        staging = _stage_project(source, files, Path(tmp) / "src", meta)
        built = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
             "--disable-pip-version-check", "--quiet", "-w", str(Path(tmp) / "out"), str(staging)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        wheels = sorted((Path(tmp) / "out").glob("*.whl"))
        if built.returncode != 0 or len(wheels) != 1:
            raise BuildError(f"pip wheel failed for {source}:\n{built.stderr[-3000:]}")
        out_dir.mkdir(parents=True, exist_ok=True)
        partial = out_dir / f".{wheels[0].name}.partial"
        shutil.copyfile(wheels[0], partial)
        partial.replace(out_dir / wheels[0].name)
    uri = f"{destination}/{wheels[0].name}"
    record_build(
        root,
        PACKAGES,
        key,
        {"digest": digest, "uri": uri, "wheel": wheels[0].name, "source": str(source),
         "built_at": _now()},
    )  # fmt: skip
    return BuildResult("python_package", uri, digest, False, out_dir / wheels[0].name)


def _context_folder(context: Path, root: Path) -> Path:
    if context.is_dir():
        return context
    if context.is_file() and context.name.endswith(_ARCHIVE_SUFFIXES):
        digest = hashlib.sha256(context.read_bytes()).hexdigest()[:16]
        target = root / "builds" / "contexts" / digest
        if not target.exists():
            staging = target.with_name(f".{digest}.partial")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            try:
                extract_archive(context, staging)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            staging.replace(target)
        return target
    raise BuildError(f"build context {context} is neither a folder nor a .tar/.tar.gz archive")


def build_container_image(
    context_dir: str | Path,
    *,
    image_uri: str,
    dockerfile: str = "Dockerfile",
    gpu: bool = False,
) -> BuildResult:
    """Record a container image built from a context, for the local executor to run.

    Args:
        context_dir: Build context folder, or a tar archive of one (absolute or `..` member
            paths are refused).
        image_uri: Image name, e.g. `us-docker.pkg.dev/proj/repo/trainer:v1`.
        dockerfile: Dockerfile path relative to the context.
        gpu: The image is for a GPU job (lints the base image for CUDA).

    Returns:
        `IMAGE@sha256:<digest>`, the context folder, lint findings, and whether skipped.

    Raises:
        BuildError: No Dockerfile, a lint error (e.g. a credential copied into the image),
            or an unsafe archive; the index is left unchanged.
    """
    root = local_root()
    context = _context_folder(Path(context_dir).resolve(), root)
    checked = check_build_context(context, dockerfile, gpu=gpu)
    text, files, info, findings = checked.text, checked.files, checked.info, checked.findings
    digest = context_digest(context, files, text.encode())
    name = normalise_image(image_uri)
    reference = f"{image_uri.split('@', 1)[0]}@sha256:{digest}"
    previous = load_index(root)[IMAGES].get(name)
    if previous and previous["digest"] == digest and previous["context"] == str(context):
        return BuildResult("container_image", reference, digest, True, context, tuple(findings))
    record_build(
        root,
        IMAGES,
        name,
        {
            "digest": digest,
            "reference": reference,
            "context": str(context),
            "dockerfile": dockerfile,
            "base_image": info.base_image,
            "entrypoint": info.entrypoint,
            "cmd": info.cmd,
            "workdir": info.workdir,
            "env": info.env,
            "gpu": gpu,
            "files": len(files),
            "lint": [f.__dict__ for f in findings],
            "built_at": _now(),
        },
    )
    return BuildResult("container_image", reference, digest, False, context, tuple(findings))

"""The local builder: Python wheels into the storage root, and container image records.

No Docker daemon is used. `build_container_image` hashes the context (honouring
`.dockerignore`), lints the Dockerfile and records the image in the build index; the local
executor then runs the image's Python entrypoint from that context. When the Dockerfile
pip-installs the context's project (`COPY . /src` then `RUN pip install "/src[extra]"`), the
project's wheel is built here too, and the executor runs the entrypoint in an environment
holding only that project and its requirements, as the image holds them. The returned reference
`IMAGE@sha256:<digest>` carries the context digest (not a registry manifest digest). Both
builders skip the work when the digest is unchanged.
"""

from __future__ import annotations

import datetime
import hashlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from vertex_retrain.backends.local.environments.build_index import (
    IMAGES,
    PACKAGES,
    load_index,
    normalise_image,
    record_build,
    record_image,
)
from vertex_retrain.backends.local.storage import local_root, to_local_path
from vertex_retrain.build.archive import extract_archive
from vertex_retrain.build.context import BuildError, context_digest
from vertex_retrain.build.dockerfile_lint import LintFinding, check_build_context
from vertex_retrain.build.wheel import build_wheel, content_addressed_name, package_source

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


def _intact(out_dir: Path, relative: str) -> bool:
    """Whether the published wheel is still there with the bytes its name promises."""
    path = out_dir / relative
    return path.is_file() and content_addressed_name(path)[0] == relative


def build_python_package(
    source_dir: str | Path,
    *,
    destination_uri: str,
    name: str | None = None,
    version: str | None = None,
    root: Path | None = None,
) -> BuildResult:
    """Build a wheel of a Python project or bare package folder into the storage root.

    The wheel itself is built by `vertex_retrain.build.wheel` (reproducible bytes), as on the
    Vertex backend; this keeps it under the destination and skips the build when the
    source digest is unchanged.

    Args:
        source_dir: The project or package folder.
        destination_uri: Folder URI for the wheel, e.g. `gs://my-bucket/packages`.
        name: Distribution name for a bare package (default: the folder name).
        version: Version for a bare package (default "0.1.0").
        root: Local storage root; defaults to `local_root()`.

    Returns:
        The wheel's gs:// URI and local path, its digest, and whether the build was skipped.

    Raises:
        BuildError: Not a project or package, name/version given for a real project, or
            the wheel build failed.
    """
    package = package_source(source_dir, name=name, version=version)
    root = (root or local_root()).resolve()
    digest = package.digest
    destination = destination_uri.rstrip("/")
    out_dir = to_local_path(destination, root)
    key = f"{destination}|{package.path}"
    previous = load_index(root)[PACKAGES].get(key)
    if previous and previous["digest"] == digest and _intact(out_dir, previous["wheel"]):
        wheel_path = out_dir / previous["wheel"]
        return BuildResult("python_package", previous["uri"], digest, True, wheel_path)
    # Published as Vertex publishes it (`content_addressed_name`): a rebuild of changed code
    # under the same version gets a new path, so a cached build keeps its own bytes.
    with tempfile.TemporaryDirectory(prefix="vertex-retrain-wheel-") as scratch:
        built = build_wheel(package, Path(scratch))
        relative, _ = content_addressed_name(built)
        wheel = out_dir / relative
        if not _intact(out_dir, relative):
            wheel.parent.mkdir(parents=True, exist_ok=True)
            partial = wheel.with_name(f".{wheel.name}.partial")
            shutil.copyfile(built, partial)
            partial.replace(wheel)
    uri = f"{destination}/{relative}"
    record_build(
        root,
        PACKAGES,
        key,
        {"digest": digest, "uri": uri, "wheel": relative, "source": str(package.path),
         "built_at": _now()},
    )  # fmt: skip
    return BuildResult("python_package", uri, digest, False, wheel)


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


def _context_wheel(context: Path, out_dir: Path) -> Path:
    """The wheel of the build context's project, built once per context digest."""
    built = sorted(out_dir.glob("*.whl"))
    if built:
        return built[0]
    return build_wheel(package_source(context), out_dir)


def build_container_image(
    context_dir: str | Path,
    *,
    image_uri: str,
    dockerfile: str = "Dockerfile",
    gpu: bool = False,
    root: Path | None = None,
) -> BuildResult:
    """Record a container image built from a context, for the local executor to run.

    Args:
        context_dir: Build context folder, or a tar archive of one (checked and extracted by
            `vertex_retrain.build.archive`: names or links that leave it are refused).
        image_uri: Image name, e.g. `us-docker.pkg.dev/proj/repo/trainer:v1`.
        dockerfile: Dockerfile path relative to the context.
        gpu: The image is for a GPU job (lints the base image for CUDA).
        root: Local storage root; defaults to `local_root()`.

    Returns:
        `IMAGE@sha256:<digest>`, the context folder, lint findings, and whether skipped.

    Raises:
        BuildError: No Dockerfile, a lint error (e.g. a credential copied into the image),
            or an unsafe archive; the index is left unchanged.
    """
    root = (root or local_root()).resolve()
    context = _context_folder(Path(context_dir).resolve(), root)
    checked = check_build_context(context, dockerfile, gpu=gpu)
    text, files, info, findings = checked.text, checked.files, checked.info, checked.findings
    digest = context_digest(context, files, text.encode())
    name = normalise_image(image_uri)
    reference = f"{image_uri.split('@', 1)[0]}@sha256:{digest}"
    previous = load_index(root)[IMAGES].get(name)
    if previous and previous["digest"] == digest and previous["context"] == str(context):
        return BuildResult("container_image", reference, digest, True, context, tuple(findings))
    extras = info.installed_context()
    # The Dockerfile pip-installs the context's project: so does the local run, from its wheel
    # (built now, as `docker build` would fail now on a project that does not build).
    wheel = None if extras is None else _context_wheel(context, root / "builds" / "images" / digest)
    record_image(
        root,
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
            "package": None if wheel is None else str(wheel),
            "extras": list(extras or ()),
            "files": len(files),
            "lint": [f.__dict__ for f in findings],
            "built_at": _now(),
        },
    )
    return BuildResult("container_image", reference, digest, False, context, tuple(findings))

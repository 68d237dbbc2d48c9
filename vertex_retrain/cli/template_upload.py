"""Upload compiled pipeline templates, tagged with the package version and the git revision.

Two registries share one interface (the four ``kfp.registry.RegistryClient`` methods used
here): an Artifact Registry KFP repository through ``RegistryClient``, and
:class:`LocalDirectoryRegistry`, a content-addressed directory for working offline. A template
is uploaded first and tagged afterwards, so an interrupted upload is completed by running it
again; tags are moved to the new version when they already exist.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import re
import subprocess
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vertex_retrain.atomic_files import atomic_write_bytes
from vertex_retrain.cli.params import TemplateError, load_pipeline_spec, read_template_bytes
from vertex_retrain.invocation import command

__all__ = [
    "DEFAULT_TEMPLATES",
    "LocalDirectoryRegistry",
    "TemplateRegistry",
    "UploadError",
    "UploadResult",
    "default_tags",
    "git_revision",
    "package_version",
    "read_template",
    "upload_templates",
]

DEFAULT_TEMPLATES = "dist/pipelines/*.yaml"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_PIPELINE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")
# Artifact Registry tags; also safe as keys of the local registry's tags.json.
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class UploadError(ValueError):
    """A template, tag or registry argument is invalid; nothing was uploaded."""


class TemplateRegistry(Protocol):
    """The part of ``kfp.registry.RegistryClient`` that uploading and tagging use."""

    def upload_pipeline(
        self, file_name: str, tags: str | list[str] | None = None
    ) -> tuple[str, str]:
        """Uploads a template; returns ``(package_name, "sha256:<digest>")``."""
        ...

    def get_tag(self, package_name: str, tag: str) -> dict[str, Any]:
        """Returns ``{"name": ..., "version": ".../sha256:<digest>"}``; raises if missing."""
        ...

    def create_tag(self, package_name: str, version: str, tag: str) -> dict[str, Any]:
        """Attaches a new tag to a version."""
        ...

    def update_tag(self, package_name: str, version: str, tag: str) -> dict[str, Any]:
        """Moves an existing tag to a version."""
        ...


@dataclass(frozen=True)
class UploadResult:
    """One uploaded template version."""

    file: str
    pipeline_name: str
    version: str
    tags: tuple[str, ...]
    location: str


def package_version() -> str:
    """The vertex-retrain version: pyproject.toml in a source checkout, else installed metadata.

    Returns:
        The version string, e.g. ``"0.1.0"``.
    """
    pyproject = _REPO_ROOT / "pyproject.toml"
    if pyproject.is_file():
        # An editable install's metadata goes stale when pyproject.toml is bumped.
        with pyproject.open("rb") as stream:
            return str(tomllib.load(stream)["project"]["version"])
    return importlib.metadata.version("vertex-retrain")


def git_revision(repo_root: str | Path = _REPO_ROOT) -> str:
    """The short git commit of the source tree.

    Args:
        repo_root: Directory inside the git work tree.

    Returns:
        The short sha, with ``-dirty`` when tracked or untracked (not ignored) files differ
        from the commit, or ``"nogit"`` when git or the repository is unavailable.
    """

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo_root), *arguments],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()

    try:
        sha = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain"))
    except (OSError, subprocess.SubprocessError):
        return "nogit"
    return f"{sha}-dirty" if dirty else sha


def default_tags(extra: Sequence[str] = ()) -> list[str]:
    """Tags for an upload: ``v<package version>``, the git revision, then ``extra``.

    Args:
        extra: Additional tags (``--tag``).

    Returns:
        The tags, without duplicates, in that order.

    Raises:
        UploadError: A tag is not ``[A-Za-z0-9][A-Za-z0-9._-]*`` (at most 128 characters)
            or looks like a version digest.
    """
    tags: list[str] = []
    for tag in (f"v{package_version()}", git_revision(), *extra):
        if tag.startswith("sha256") or not _TAG.fullmatch(tag):
            raise UploadError(
                f"tag {tag!r}: expected letters, digits, '.', '_' or '-' (not starting with "
                "'sha256'), at most 128 characters, e.g. 'latest' or 'release-2026-11'"
            )
        if tag not in tags:
            tags.append(tag)
    return tags


def read_template(path: str | Path) -> tuple[str, bytes]:
    """Reads a compiled template and returns its pipeline name and bytes.

    Args:
        path: A YAML file written by ``kfp.compiler.Compiler``.

    Returns:
        ``(pipelineInfo.name, file content)``.

    Raises:
        UploadError: Unreadable, or not a compiled pipeline with a valid name.
    """
    try:
        content = read_template_bytes(path)
        name = str(load_pipeline_spec(content, source=str(path))["pipelineInfo"]["name"])
    except TemplateError as error:
        raise UploadError(str(error)) from None
    if not _PIPELINE_NAME.fullmatch(name):
        raise UploadError(f"{path}: pipeline name {name!r} is not [a-z0-9][a-z0-9-]*")
    return name, content


class TagNotFoundError(LookupError):
    """The local registry has no such tag."""


class LocalDirectoryRegistry:
    """A content-addressed template registry in a directory, for working without Google Cloud.

    Layout: ``ROOT/<pipeline-name>/sha256-<digest>.yaml`` (one file per distinct content)
    and ``ROOT/<pipeline-name>/tags.json`` (``{"tag": "sha256:<digest>"}``). Every file is
    written to a temporary file and renamed into place; tag updates hold a lock file, so
    concurrent uploads do not lose each other's tags.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def upload_pipeline(
        self, file_name: str, tags: str | list[str] | None = None
    ) -> tuple[str, str]:
        """Stores a template (once per content) and tags it; same contract as RegistryClient."""
        name, content = read_template(file_name)
        version = f"sha256:{hashlib.sha256(content).hexdigest()}"
        target = self.path_of(name, version)
        if not target.is_file() or target.read_bytes() != content:
            atomic_write_bytes(target, content)
        for tag in [tags] if isinstance(tags, str) else tags or []:
            with self._tags(name) as current:
                current[tag] = version
        return name, version

    def get_tag(self, package_name: str, tag: str) -> dict[str, Any]:
        """Returns ``{"name": tag, "version": "sha256:<digest>"}``."""
        tags = self.tags(package_name)
        if tag not in tags:
            raise TagNotFoundError(f"{package_name}: no tag {tag!r}")
        return {"name": tag, "version": tags[tag]}

    def create_tag(self, package_name: str, version: str, tag: str) -> dict[str, Any]:
        """Attaches a new tag to a stored version."""
        return self._set_tag(package_name, version, tag, must_exist=False)

    def update_tag(self, package_name: str, version: str, tag: str) -> dict[str, Any]:
        """Moves an existing tag to a stored version."""
        return self._set_tag(package_name, version, tag, must_exist=True)

    def tags(self, package_name: str) -> dict[str, str]:
        """Tag -> version of one pipeline (empty when it has none)."""
        path = self._folder(package_name) / "tags.json"
        if not path.is_file():
            return {}
        loaded: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
        return loaded

    def path_of(self, package_name: str, version_or_tag: str) -> Path:
        """The stored file of a version (``sha256:<digest>``) or of the version a tag names."""
        version = version_or_tag
        if not version.startswith("sha256:"):
            version = self.get_tag(package_name, version_or_tag)["version"]
        return self._folder(package_name) / f"{version.replace(':', '-')}.yaml"

    def _folder(self, package_name: str) -> Path:
        # Names come from templates or callers; either way they must stay inside the root.
        if not _PIPELINE_NAME.fullmatch(package_name):
            raise UploadError(f"pipeline name {package_name!r} is not [a-z0-9][a-z0-9-]*")
        return self.root / package_name

    def _set_tag(
        self, package_name: str, version: str, tag: str, *, must_exist: bool
    ) -> dict[str, Any]:
        if not self.path_of(package_name, version).is_file():
            raise LookupError(f"{package_name}: no version {version}")
        with self._tags(package_name) as current:
            if must_exist and tag not in current:
                raise TagNotFoundError(f"{package_name}: no tag {tag!r} to update")
            if not must_exist and tag in current:
                raise ValueError(f"{package_name}: tag {tag!r} exists; update it instead")
            current[tag] = version
        return {"name": tag, "version": version}

    @contextlib.contextmanager
    def _tags(self, package_name: str) -> Iterator[dict[str, str]]:
        folder = self._folder(package_name)
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = self.tags(package_name)
            before = dict(current)
            yield current
            if current != before:
                text = json.dumps(current, indent=2, sort_keys=True) + "\n"
                atomic_write_bytes(folder / "tags.json", text.encode("utf-8"))


def _tag_is_missing(error: Exception) -> bool:
    # RegistryClient raises requests.HTTPError (404); the local registry a LookupError.
    response = getattr(error, "response", None)
    return isinstance(error, LookupError) or getattr(response, "status_code", None) == 404


def upload_templates(
    files: Sequence[str | Path],
    registry: TemplateRegistry,
    tags: Sequence[str],
    location: Callable[[str, str], str],
) -> list[UploadResult]:
    """Uploads templates and points every tag at the uploaded version.

    All files are read and checked before the first upload, so a bad file uploads nothing.

    Args:
        files: Compiled template paths.
        registry: A ``RegistryClient`` or :class:`LocalDirectoryRegistry`.
        tags: Tags to create, or to move when they exist on another version.
        location: ``(pipeline_name, version) -> where it can be fetched`` (for the report).

    Returns:
        One result per file, in order.

    Raises:
        UploadError: No files, or a file that is not a compiled template.
    """
    if not files:
        raise UploadError(
            f"no templates to upload (default {DEFAULT_TEMPLATES}); "
            f"run `{command('compile')}` first or name the pipelines"
        )
    names = [read_template(path)[0] for path in files]
    results = []
    for path, name in zip(files, names, strict=True):
        package, version = registry.upload_pipeline(str(path))
        for tag in tags:
            try:
                current = str(registry.get_tag(package, tag).get("version", ""))
            except Exception as error:
                if not _tag_is_missing(error):
                    raise
                registry.create_tag(package, version, tag)
                continue
            if current.rsplit("/", 1)[-1] != version:
                registry.update_tag(package, version, tag)
        results.append(
            UploadResult(str(path), name, version, tuple(tags), location(package, version))
        )
    return results

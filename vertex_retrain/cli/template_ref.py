"""Names of pipeline templates in an Artifact Registry KFP repository: hosts and version URIs.

A repository is ``https://LOCATION-kfp.pkg.dev/PROJECT/REPOSITORY``; one uploaded version of a
pipeline is ``<repository>/<pipeline-name>/sha256:<64 hex digits>``. Schedules pin that version
URI, never a tag, so a later upload cannot change what a schedule runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vertex_retrain.invocation import command

__all__ = ["TemplateRefError", "TemplateVersion", "parse_template_version", "registry_host"]

_LOCATION = re.compile(r"[a-z]+(?:-[a-z0-9]+)+")
_PROJECT = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
_REPOSITORY = re.compile(r"[a-z][a-z0-9-]{0,62}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_VERSION_URI = re.compile(
    r"https://(?P<location>[a-z0-9-]+)-kfp\.pkg\.dev/(?P<project>[^/]+)/(?P<repository>[^/]+)"
    r"/(?P<package>[^/]+)/(?P<version>[^/]+)"
)


class TemplateRefError(ValueError):
    """A repository coordinate, digest or version URI is malformed."""


def registry_host(project: str, location: str, repository: str) -> str:
    """The Artifact Registry KFP host for ``kfp.registry.RegistryClient``.

    Args:
        project: Google Cloud project ID.
        location: Region of the repository, e.g. ``"asia-east1"``.
        repository: Artifact Registry repository (format KFP).

    Returns:
        ``https://LOCATION-kfp.pkg.dev/PROJECT/REPOSITORY``.

    Raises:
        TemplateRefError: A coordinate is not a valid project ID, region or repository name.
    """
    checks = (
        ("project", project, _PROJECT, "a project ID such as 'my-project'"),
        ("location", location, _LOCATION, "a region such as 'asia-east1'"),
        ("repository", repository, _REPOSITORY, "a repository name such as 'pipelines'"),
    )
    for label, value, pattern, expected in checks:
        if not pattern.fullmatch(value):
            raise TemplateRefError(f"{label} {value!r}: expected {expected}")
    return f"https://{location}-kfp.pkg.dev/{project}/{repository}"


@dataclass(frozen=True)
class TemplateVersion:
    """One uploaded version of a pipeline template in Artifact Registry."""

    location: str
    project: str
    repository: str
    pipeline_name: str
    digest: str

    @property
    def uri(self) -> str:
        """The version URI that ``PipelineJob(template_path=...)`` accepts."""
        host = registry_host(self.project, self.location, self.repository)
        return f"{host}/{self.pipeline_name}/{self.digest}"


def parse_template_version(
    text: str,
    *,
    pipeline_name: str | None = None,
    project: str | None = None,
    location: str | None = None,
    repository: str | None = None,
) -> TemplateVersion:
    """Parses a pinned template version given as a full URI or as a bare digest.

    Args:
        text: ``https://LOCATION-kfp.pkg.dev/PROJECT/REPO/PIPELINE/sha256:DIGEST`` or
            ``sha256:DIGEST`` (or the 64 hex digits alone).
        pipeline_name: The pipeline the version must belong to; required for a bare digest.
        project: The project it must live in; required for a bare digest.
        location: The region it must live in; required for a bare digest.
        repository: The repository of a bare digest (ignored for a URI).

    Returns:
        The parsed version.

    Raises:
        TemplateRefError: A tag instead of a digest, a malformed URI, a digest without the
            repository coordinates, or a URI for another pipeline, project or location.
    """
    match = _VERSION_URI.fullmatch(text.strip())
    if match:
        version = TemplateVersion(
            location=match["location"],
            project=match["project"],
            repository=match["repository"],
            pipeline_name=match["package"],
            digest=_digest(match["version"], text),
        )
        registry_host(version.project, version.location, version.repository)
    elif text.startswith("https://"):
        raise TemplateRefError(
            f"template version {text!r}: expected "
            "https://LOCATION-kfp.pkg.dev/PROJECT/REPOSITORY/PIPELINE/sha256:DIGEST"
        )
    else:
        missing = [
            flag
            for flag, value in (
                ("--project", project),
                ("--location", location),
                ("--repository", repository),
                ("the pipeline name", pipeline_name),
            )
            if not value
        ]
        if missing:
            raise TemplateRefError(
                f"template version {text!r} is a bare digest; give {', '.join(missing)} too, "
                f"or pass the full version URI printed by `{command('upload')}`"
            )
        assert project and location and repository and pipeline_name  # narrowed by `missing`
        registry_host(project, location, repository)
        version = TemplateVersion(location, project, repository, pipeline_name, _digest(text, text))
    expected = (
        ("pipeline", pipeline_name, version.pipeline_name),
        ("project", project, version.project),
        ("location", location, version.location),
    )
    for label, wanted, actual in expected:
        if wanted is not None and wanted != actual:
            raise TemplateRefError(
                f"template version {text!r} is for {label} {actual!r}, but the schedule runs "
                f"in {label} {wanted!r}"
            )
    return version


def _digest(text: str, whole: str) -> str:
    candidate = text.strip()
    if re.fullmatch(r"[0-9a-f]{64}", candidate):
        candidate = f"sha256:{candidate}"
    if not _DIGEST.fullmatch(candidate):
        raise TemplateRefError(
            f"template version {whole!r}: {text!r} is not a version digest (sha256:<64 hex>); "
            "schedules pin a digest, not a tag, so a later upload cannot change what they run"
        )
    return candidate

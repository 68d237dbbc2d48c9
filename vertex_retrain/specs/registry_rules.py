"""Rules on where an image lives: the placeholder image, and registries against the region.

Artifact Registry Docker hosts are ``LOCATION-docker.pkg.dev``, where LOCATION is a region
(``europe-west4``) or a multi-region (``us``, ``europe``, ``asia``); Container Registry's
``gcr.io`` hosts are served from Artifact Registry ``gcr.io`` repositories in the ``us``
(``gcr.io``, ``us.gcr.io``), ``europe`` (``eu.gcr.io``) and ``asia`` (``asia.gcr.io``)
multi-regions. A pipeline pulls its images on every task start: an image stored in another
geography works, but every pull crosses it (slower starts, network egress charges), so that is
a warning. The placeholder image, which exists nowhere, is an error; so is a reference whose
digest is not 64 hex digits (``IMAGE@sha256:...`` copied from a document before the build
printed the real one): no registry can resolve it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from vertex_retrain.specs.problems import Problem, error, warning

__all__ = [
    "RegistryLocation",
    "digest_problems",
    "image_location_problems",
    "placeholder_problems",
    "registry_location",
    "serves_region",
]

_AR_HOST = re.compile(r"(?P<location>[a-z0-9-]+)-docker\.pkg\.dev")
_GCR_HOSTS = {"gcr.io": "us", "us.gcr.io": "us", "eu.gcr.io": "europe", "asia.gcr.io": "asia"}
MULTI_REGIONS = ("us", "europe", "asia")
_REGION = re.compile(r"[a-z]+(?:-[a-z]+)+\d+")
_GEOGRAPHY_PREFIXES = {"us": ("us-",), "europe": ("europe-",), "asia": ("asia-",)}
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class RegistryLocation:
    """Where an image's registry stores it.

    Attributes:
        host: The registry host, e.g. ``europe-west4-docker.pkg.dev``.
        location: A region, a multi-region (``us``, ``europe``, ``asia``), or None when the
            registry is not Google's (Docker Hub and others).
    """

    host: str
    location: str | None


def registry_location(image_uri: str) -> RegistryLocation:
    """Reads the registry and its location from an image URI."""
    host = image_uri.split("/", 1)[0] if "/" in image_uri else "docker.io"
    match = _AR_HOST.fullmatch(host)
    if match:
        return RegistryLocation(host, match.group("location"))
    return RegistryLocation(host, _GCR_HOSTS.get(host))


def is_region(location: str) -> bool:
    """Whether ``location`` has the form of a Google Cloud region (``europe-west4``)."""
    return bool(_REGION.fullmatch(location))


def serves_region(location: str, region: str) -> bool:
    """Whether images stored in ``location`` are in ``region``'s geography.

    A region serves itself; a multi-region the regions whose names start with it
    (``europe`` serves ``europe-west4``).
    """
    if location == region:
        return True
    return region.startswith(_GEOGRAPHY_PREFIXES.get(location, ("\0",)))


def placeholder_problems(
    images: Iterable[tuple[str, str]], placeholder: str, fix: Iterable[str]
) -> list[Problem]:
    """One error naming every executor that still runs the placeholder image.

    Args:
        images: ``(field path, image URI)`` of each executor.
        placeholder: The placeholder URI.
        fix: How to set a real image (commands), shown as alternatives.
    """
    fields = [where for where, image in images if image == placeholder]
    if not fields:
        return []
    executors = [field.split(".")[2] if field.count(".") > 2 else field for field in fields]
    shown = ", ".join(executors[:4]) + (
        f" and {len(executors) - 4} more" if len(executors) > 4 else ""
    )
    return [
        error(
            fields[0] if len(fields) == 1 else "deploymentSpec.executors[*].container.image",
            placeholder,
            f"The placeholder component image exists in no registry: {len(fields)} "
            f"executor(s) ({shown}) would fail to start on Vertex.",
            tuple(fix),
            code="component-image-placeholder",
        )
    ]


def digest_problems(images: Iterable[tuple[str, str]], *, what: str = "image") -> list[Problem]:
    """An error for each image whose ``@`` reference is not a full ``sha256:`` digest.

    Args:
        images: ``(field path, image URI)`` pairs.
        what: What the images are, for the message.
    """
    problems: list[Problem] = []
    seen: set[str] = set()
    for where, image in images:
        _, at, reference = image.partition("@")
        if not at or _DIGEST.fullmatch(reference) or image in seen:
            continue
        seen.add(image)
        problems.append(
            error(
                where,
                image,
                f"The {what}'s digest {reference!r} is not resolved: a digest is sha256: "
                "followed by 64 hex digits, as the build prints it; no registry serves this "
                "reference.",
                [
                    f"{image.partition('@')[0]}@sha256:<the 64 hex digits the build printed>",
                    f"{image.partition('@')[0]}:TAG",
                ],
                code="image-digest",
            )
        )
    return problems


def image_location_problems(
    images: Iterable[tuple[str, str]],
    region: str,
    *,
    what: str = "image",
    build_hint: str | None = None,
) -> list[Problem]:
    """Warnings for images whose registry is outside the region's geography, or not Google's.

    Args:
        images: ``(field path, image URI)`` pairs.
        region: The Vertex AI region the pipeline runs in.
        what: How the messages name the images.
        build_hint: A command that builds the image in the region, offered as an
            alternative (the caller knows how its user runs commands).
    """
    problems: list[Problem] = []
    for where, image in images:
        found = registry_location(image)
        if found.location is None:
            problems.append(
                warning(
                    where,
                    image,
                    f"The {what} is not in Artifact Registry: Vertex pulls it only if the "
                    "registry is public or gives its service agent access.",
                    [f"{region}-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE:TAG"],
                    code="registry-not-google",
                )
            )
        elif not serves_region(found.location, region):
            problems.append(
                warning(
                    where,
                    image,
                    f"The {what} is stored in {found.location}, outside {region}: each task "
                    "start pulls it across regions (slower, and network egress is billed).",
                    [
                        f"{region}-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE:TAG",
                        *([build_hint] if build_hint else []),
                    ],
                    code="registry-region",
                )
            )
    return problems

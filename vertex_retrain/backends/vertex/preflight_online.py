"""Preflight checks that need credentials: images exist, buckets are there, readable or writable
as the run needs, and the account exists.

Everything goes through a :class:`CloudChecker`: :class:`GoogleCloudChecker` asks Google
(Artifact Registry's Docker API, Cloud Storage, IAM), and tests pass a fake. A check that cannot
be answered (no permission, an unreachable service) says so as a warning rather than guessing.

Not exercised against Google from this repository: the request shapes follow the public API
references (Docker Registry HTTP API v2 as Artifact Registry serves it, Cloud Storage
``buckets.get``, IAM ``projects.serviceAccounts.get``), and the tests use fakes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from vertex_retrain.invocation import command
from vertex_retrain.specs.problems import Problem, error, warning
from vertex_retrain.specs.registry_rules import serves_region

__all__ = ["CloudChecker", "GoogleCloudChecker", "online_problems"]

_MANIFESTS = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)


class CloudChecker(Protocol):
    """What the online checks ask. ``None`` means "could not tell" (permission, network)."""

    def image_exists(self, image_uri: str) -> bool | None:
        """Whether the registry has this image (tag or digest)."""
        ...

    def bucket_location(self, bucket: str) -> str | None:
        """The bucket's location, lowercase (``europe-west4``, ``eu``...); ``""`` if missing."""
        ...

    def service_account_exists(self, email: str) -> bool | None:
        """Whether the service account exists."""
        ...

    def bucket_permissions(self, bucket: str, permissions: Sequence[str]) -> frozenset[str] | None:
        """Which of ``permissions`` these credentials hold on the bucket (Cloud Storage
        ``testIamPermissions``); an empty set when the bucket does not exist."""
        ...


def _split_image(image_uri: str) -> tuple[str, str, str]:
    """``(host, repository path, tag or digest)`` of an image URI (tag ``latest`` if none)."""
    host, _, path = image_uri.partition("/")
    if "@" in path:
        path, _, reference = path.partition("@")
    elif ":" in path.rsplit("/", 1)[-1]:
        path, _, reference = path.rpartition(":")
    else:
        reference = "latest"
    return host, path, reference


class GoogleCloudChecker:
    """The online checks against Google, with application default credentials.

    Args:
        project: The project the checks are billed to (Cloud Storage client).
        session: An ``AuthorizedSession`` (default: built from application default
            credentials).
        storage_client: A ``google.cloud.storage.Client`` (default: built on first use).

    Raises:
        google.auth.exceptions.DefaultCredentialsError: No credentials (when building the
            session).
    """

    def __init__(self, project: str, *, session: Any = None, storage_client: Any = None) -> None:
        self.project = project
        if session is None:
            import google.auth
            from google.auth.transport.requests import AuthorizedSession

            credentials, _ = google.auth.default(
                scopes=["https://www.googleapis.com/auth/cloud-platform"]
            )
            session = AuthorizedSession(credentials)
        self._session = session
        self._storage = storage_client

    def image_exists(self, image_uri: str) -> bool | None:
        """``HEAD /v2/<path>/manifests/<ref>`` on the registry host (Docker Registry API v2)."""
        host, path, reference = _split_image(image_uri)
        try:
            response = self._session.head(
                f"https://{host}/v2/{path}/manifests/{reference}",
                headers={"Accept": _MANIFESTS},
                timeout=30,
            )
        except Exception:  # network or TLS failure: unknown, not missing
            return None
        if response.status_code == 200:
            return True
        return False if response.status_code == 404 else None

    def bucket_location(self, bucket: str) -> str | None:
        """Cloud Storage ``buckets.get``; ``""`` when the bucket does not exist."""
        from google.api_core import exceptions as api_exceptions

        if self._storage is None:
            import google.cloud.storage

            self._storage = google.cloud.storage.Client(project=self.project)
        try:
            found = self._storage.get_bucket(bucket)
        except api_exceptions.NotFound:
            return ""
        except api_exceptions.GoogleAPICallError:
            return None
        return str(found.location or "").lower() or None

    def service_account_exists(self, email: str) -> bool | None:
        """IAM ``projects.serviceAccounts.get``."""
        try:
            response = self._session.get(
                f"https://iam.googleapis.com/v1/projects/-/serviceAccounts/{email}", timeout=30
            )
        except Exception:
            return None
        if response.status_code == 200:
            return True
        return False if response.status_code == 404 else None

    def bucket_permissions(self, bucket: str, permissions: Sequence[str]) -> frozenset[str] | None:
        """Cloud Storage ``buckets.testIamPermissions``; empty when the bucket is missing."""
        from google.api_core import exceptions as api_exceptions

        if self._storage is None:
            import google.cloud.storage

            self._storage = google.cloud.storage.Client(project=self.project)
        try:
            granted = self._storage.bucket(bucket).test_iam_permissions(list(permissions))
        except api_exceptions.NotFound:
            return frozenset()
        except api_exceptions.GoogleAPICallError:
            return None
        return frozenset(str(p) for p in granted or ())

    def bigquery_table(self, table: str) -> Any:
        """BigQuery ``tables.get`` and a dry run (:mod:`.preflight_warehouse`)."""
        from .preflight_warehouse import BigQueryTableChecker

        return BigQueryTableChecker(self.project).bigquery_table(table)


READ = ("storage.objects.get", "storage.objects.list")
"""What a task needs to read a Cloud Storage location."""

WRITE = ("storage.objects.create",)
"""What a task needs to write one."""


def _access_problems(
    checker: CloudChecker, locations: Iterable[tuple[str, str]], needed: Sequence[str], verb: str
) -> list[Problem]:
    adjective = {"read": "readable", "write": "writable"}[verb]
    """Errors for ``gs://`` locations these credentials cannot ``verb`` (read or write)."""
    role = "objectViewer" if verb == "read" else "objectAdmin"
    problems: list[Problem] = []
    for where, uri in locations:
        if not uri.startswith("gs://"):
            continue
        bucket = uri[len("gs://") :].split("/", 1)[0]
        granted = checker.bucket_permissions(bucket, needed)
        if granted is None:
            problems.append(
                warning(
                    where, uri, f"Could not check that {bucket} is {adjective}.", code="unchecked"
                )
            )
        elif not set(needed) <= granted:
            missing = ", ".join(sorted(set(needed) - granted))
            problems.append(
                error(
                    where,
                    uri,
                    f"These credentials cannot {verb} gs://{bucket} (missing {missing}, or no "
                    "such bucket): the tasks that use it would fail. The pipeline's service "
                    "account needs the same access.",
                    [
                        f"gcloud storage buckets add-iam-policy-binding gs://{bucket} "
                        "--member=serviceAccount:SA "
                        f"--role=roles/storage.{role}",
                        "a location of your own project",
                    ],
                    code=f"bucket-not-{adjective}",
                )
            )
    return problems


def _bucket_serves(location: str, region: str) -> bool:
    # Cloud Storage names multi-regions US, EU, ASIA; Artifact Registry us, europe, asia.
    multi = {"eu": "europe"}.get(location, location)
    return serves_region(multi, region)


def online_problems(
    checker: CloudChecker,
    *,
    images: Iterable[tuple[str, str]],
    region: str,
    pipeline_root: str | None,
    service_account: str | None,
    readable: Iterable[tuple[str, str]] = (),
    writable: Iterable[tuple[str, str]] = (),
) -> list[Problem]:
    """Asks ``checker`` about the images, the buckets and the service account.

    Args:
        checker: A :class:`CloudChecker`.
        images: ``(field path, image URI)`` of every image the run pulls (the serving image
            included).
        region: The Vertex AI region.
        pipeline_root: ``gs://BUCKET/PATH`` (None: not checked).
        service_account: The runtime service account (None: not checked).
        readable: ``(field, gs:// URI)`` the run reads (data, source, package).
        writable: ``(field, gs:// URI)`` the run writes (package destination, outputs).

    Returns:
        Errors for what does not exist, warnings for what could not be checked or lies in
        another region.
    """
    problems: list[Problem] = []
    seen: set[str] = set()
    for where, image in images:
        if image in seen:
            continue
        seen.add(image)
        exists = checker.image_exists(image)
        if exists is False:
            problems.append(
                error(
                    where,
                    image,
                    "The registry has no such image (tag or digest): the tasks that run it "
                    "would fail to start.",
                    [command("build-image --project P --location L"), "a pushed image's URI"],
                    code="image-missing",
                )
            )
        elif exists is None:
            problems.append(
                warning(where, image, "Could not check that the image exists.", code="unchecked")
            )
    if pipeline_root and pipeline_root.startswith("gs://"):
        bucket = pipeline_root[len("gs://") :].split("/", 1)[0]
        location = checker.bucket_location(bucket)
        if location == "":
            problems.append(
                error(
                    "--pipeline-root",
                    pipeline_root,
                    f"Bucket {bucket} does not exist (or is not visible to these credentials).",
                    [f"gcloud storage buckets create gs://{bucket} --location={region}"],
                    code="bucket-missing",
                )
            )
        elif location is None:
            problems.append(
                warning("--pipeline-root", pipeline_root, "Could not read the bucket's location.")
            )
        elif not _bucket_serves(location, region):
            problems.append(
                warning(
                    "--pipeline-root",
                    pipeline_root,
                    f"Bucket {bucket} is in {location}, outside {region}: every artifact is "
                    "read and written across regions (slower, egress billed).",
                    [f"a bucket in {region}"],
                    code="bucket-region",
                )
            )
    problems += _access_problems(checker, readable, READ, "read")
    problems += _access_problems(checker, writable, WRITE, "write")
    if service_account:
        exists = checker.service_account_exists(service_account)
        if exists is False:
            problems.append(
                error(
                    "--service-account",
                    service_account,
                    "No such service account: Vertex refuses to run the pipeline as it.",
                    ["gcloud iam service-accounts create NAME", "an existing account's e-mail"],
                    code="service-account-missing",
                )
            )
        elif exists is None:
            problems.append(
                warning(
                    "--service-account",
                    service_account,
                    "Could not check that the service account exists.",
                    code="unchecked",
                )
            )
    return problems

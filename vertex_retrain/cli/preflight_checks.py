"""The offline checks of ``vertex-retrain preflight``, over one compiled pipeline and its arguments.

Each check returns :class:`vertex_retrain.specs.problems.Problem` items (field, value, reason,
alternatives), as ``validate`` does:

- the component image is not the placeholder, and its registry serves the region;
- every CustomJob and tuning job a task of the pipeline would submit is valid, built as its
  component builds it (:mod:`vertex_retrain.cli.job_tasks`), its machine and accelerator are
  offered in the region, its executor image is a prebuilt training image, and its package
  installs there (:mod:`vertex_retrain.specs.package_compat`);
- every ``*_module`` parameter names a module the code built from ``source_uri`` holds
  (:mod:`vertex_retrain.cli.package_checks`);
- in a pipeline with a data window, no cached task can be served another week's output
  (:mod:`vertex_retrain.cli.cache_keys`);
- the display names the run gives its model and endpoint fit Vertex's limit;
- for a submission: a service account is set and the pipeline root is ``gs://BUCKET/PATH``.

Nothing here touches the network; :mod:`vertex_retrain.backends.vertex.preflight_online`
holds the checks that need credentials.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vertex_retrain.cli.package_checks import module_problems, package_problems
from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.invocation import command
from vertex_retrain.specs.display_names import display_name_problems, evaluates
from vertex_retrain.specs.package_compat import executor_image_problems
from vertex_retrain.specs.problems import Problem, error, warning
from vertex_retrain.specs.region_rules import availability_problems

__all__ = ["Settings", "executor_images", "pipeline_problems"]
_SERVICE_ACCOUNT = re.compile(
    # A user-managed account (6-30 characters, a letter first), or the project's default
    # Compute Engine account, PROJECT_NUMBER-compute@developer.gserviceaccount.com.
    r"^([a-z][a-z0-9-]{4,28}[a-z0-9]|\d+-compute)@[a-z0-9.-]+\.gserviceaccount\.com$"
)
# Images Google publishes (GCPC's, Vertex's prebuilt ones): served to every region.
_GOOGLE_PUBLISHED = re.compile(r"^(gcr\.io/ml-pipeline/|[a-z]+-docker\.pkg\.dev/vertex-ai[a-z-]*/)")


@dataclass(frozen=True)
class Settings:
    """Where and how the pipeline would run.

    Attributes:
        project: Google Cloud project (None: not given).
        location: Vertex AI region (None: region checks are skipped, with a warning).
        pipeline_root: ``gs://`` root of the run's artifacts.
        service_account: Runtime service account.
        submission: A run or schedule: the service account and pipeline root must be set.
        component_image: Check the executors' images (a schedule's pinned template carries
            its own, checked when it was uploaded).
        today: Date for support and retirement dates (default: today).
    """

    project: str | None = None
    location: str | None = None
    pipeline_root: str | None = None
    service_account: str | None = None
    submission: bool = False
    component_image: bool = True
    today: dt.date | None = None


def executor_images(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(field path, image)`` of every executor of a compiled spec."""
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    return [
        (f"deploymentSpec.executors.{name}.container.image", str(e["container"]["image"]))
        for name, e in sorted(executors.items())
        if isinstance(e, Mapping) and e.get("container", {}).get("image")
    ]


def _component_image_problems(spec: Mapping[str, Any], settings: Settings) -> list[Problem]:
    from vertex_retrain.specs.registry_rules import (
        digest_problems,
        image_location_problems,
        placeholder_problems,
    )

    images = executor_images(spec)
    problems = placeholder_problems(
        images,
        DEFAULT_COMPONENT_IMAGE,
        [
            command("build-image --project P --location L (prints the compile command)"),
            "--component-image REGION-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG",
        ],
    )
    problems += digest_problems(images, what="component image")
    ours = [
        (where, image)
        for where, image in images
        if image != DEFAULT_COMPONENT_IMAGE and not _GOOGLE_PUBLISHED.match(image)
    ]
    if settings.location:
        # One problem per image, not per executor: they all run the same component image.
        unique = list({image: (where, image) for where, image in ours}.values())
        problems += image_location_problems(
            unique,
            settings.location,
            what="component image",
            build_hint=command(f"build-image --location {settings.location}"),
        )
    return problems


def _job_problems(
    spec: Mapping[str, Any], arguments: Mapping[str, Any], settings: Settings
) -> list[Problem]:
    """Each job a task of the pipeline would submit: the job itself (as the component builds
    it), its machine in the region, its executor image and whether its package installs
    there. Problems name the task; a task that does not run with these arguments is
    skipped."""
    from vertex_retrain.cli.job_tasks import job_tasks, problems_by_task

    problems: list[tuple[str, Problem]] = []
    checked_images: set[str] = set()
    checked_packages: set[tuple[str, str]] = set()
    for job in job_tasks(spec, arguments, today=settings.today):
        if job.runs is False:
            continue
        found = list(job.problems)
        pool = "trialJobSpec" if job.tuning else "jobSpec"
        field = f"{pool}.workerPoolSpecs[0].pythonPackageSpec"
        image = job.executor_image_uri
        if settings.location and job.payload is not None:
            # A field the job's validation refused (an unknown machine) is not said again.
            refused = {p.field for p in found if p.severity == "error"}
            found += [
                problem
                for problem in availability_problems(job.payload, settings.location)
                if problem.field not in refused
            ]
        if image and image not in checked_images:
            checked_images.add(image)
            # The job's own validation may have said its availability already: not twice.
            said = {(p.field, p.code) for p in found}
            found += [
                problem
                for problem in executor_image_problems(
                    image, f"{field}.executorImageUri", today=settings.today
                )
                if (problem.field, problem.code) not in said
            ]
            if settings.location:
                found += _executor_location_problems(
                    image, f"{field}.executorImageUri", settings.location
                )
        for index, uri in enumerate(job.package_uris[:1]):
            if image and (uri, image) not in checked_packages:
                checked_packages.add((uri, image))
                found += package_problems(uri, image, f"{field}.packageUris[{index}]")
        if job.unchecked:
            found.append(_unchecked(job.unchecked))
        problems += [(job.name, problem) for problem in found]
    return problems_by_task(problems)


def _unchecked(unchecked: Mapping[str, str]) -> Problem:
    inputs = "; ".join(f"{name} ({why})" for name, why in sorted(unchecked.items()))
    return warning(
        "inputs",
        sorted(unchecked),
        f"{inputs}: known only when the pipeline runs, so the job fields they set are "
        "checked then.",
        code="inputs-unchecked",
    )


def _executor_location_problems(image: str, field: str, region: str) -> list[Problem]:
    """A warning when the prebuilt executor image is pulled from another geography, naming
    the copy of the same image that serves the region (Google serves each from three)."""
    from vertex_retrain.specs.containers import image_name, load_containers
    from vertex_retrain.specs.registry_rules import registry_location, serves_region

    stored = registry_location(image).location
    if stored is None or serves_region(stored, region):
        return []
    nearer = [
        f"{base}/{image_name(image)}:latest"
        for base in load_containers().registries["training"]
        if serves_region(registry_location(base).location or "", region)
    ]
    return [
        warning(
            field,
            image,
            f"The executor image is stored in {stored}, outside {region}: every replica pulls "
            "it across regions (a slower start).",
            nearer,
            code="registry-region",
        )
    ]


def _cache_problems(spec: Mapping[str, Any]) -> list[Problem]:
    from vertex_retrain.cli.cache_keys import cache_key_problems

    name = spec.get("pipelineInfo", {}).get("name", "pipeline")
    return [
        error(
            "cachingOptions",
            name,
            sentence,
            [
                "an input from data_window or source_digest (the week or the content)",
                ".set_caching_options(False) on the task",
            ],
            code="cache-key",
        )
        for sentence in cache_key_problems(spec)
    ]


def _submission_problems(settings: Settings) -> list[Problem]:
    from vertex_retrain.cli.vertex_submit import PIPELINE_ROOT

    problems: list[Problem] = []
    account = settings.service_account
    if settings.submission and not account:
        problems.append(
            error(
                "--service-account",
                None,
                "No runtime service account: Vertex would run the pipeline as the project's "
                "default compute account, which new projects grant no roles, so the first "
                "task fails on permissions.",
                ["--service-account NAME@PROJECT.iam.gserviceaccount.com"],
                code="service-account",
            )
        )
    elif account and not _SERVICE_ACCOUNT.match(account):
        problems.append(
            error(
                "--service-account",
                account,
                "Not a service account e-mail.",
                ["NAME@PROJECT.iam.gserviceaccount.com"],
                code="service-account",
            )
        )
    root = settings.pipeline_root
    if settings.submission and not root:
        problems.append(
            error(
                "--pipeline-root",
                None,
                "No pipeline root: Vertex needs a gs:// folder for the run's artifacts.",
                ["--pipeline-root gs://BUCKET/pipeline-root"],
                code="pipeline-root",
            )
        )
    elif root and not PIPELINE_ROOT.fullmatch(root):
        problems.append(
            error(
                "--pipeline-root",
                root,
                "Not a Cloud Storage folder: expected gs://BUCKET/PATH.",
                ["gs://my-bucket/pipeline-root"],
                code="pipeline-root",
            )
        )
    if not settings.location:
        problems.append(
            warning(
                "--location",
                None,
                "No region given: the registry and machine availability checks are skipped.",
                ["--location europe-west4"],
                code="location",
            )
        )
    return problems


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
MAX_NOTIFICATION_RECIPIENTS = 3
"""Vertex's e-mail notification takes at most three addresses (its documented limit)."""


def _has_notice_task(spec: Mapping[str, Any]) -> bool:
    from vertex_retrain.backends.local.kfp_adapter.kfp_tasks import vertex_only

    executors = spec.get("deploymentSpec", {}).get("executors", {})
    return any(vertex_only(e.get("container", {})) for e in executors.values())


def _notification_problems(spec: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[Problem]:
    """The failure notice's addresses: a list of at most three e-mail addresses, given to a
    pipeline that has the e-mail task.

    The local backend skips the notice, so without this check a list Vertex refuses would
    pass every local run. A pipeline compiled without recipients has no e-mail task
    (:mod:`vertex_retrain.pipelines.failure_notice`): addresses given at run time would reach
    no one.
    """
    if "notification_emails" not in arguments:
        return []
    recipients = arguments["notification_emails"]
    field = "--param notification_emails"
    if not isinstance(recipients, list):
        return [
            error(field, recipients, "Not a list of e-mail addresses.", ['["ml-team@example.com"]'])
        ]
    problems = [
        error(field, address, "Not an e-mail address.", ["name@example.com"])
        for address in recipients
        if not isinstance(address, str) or not _EMAIL.match(address)
    ]
    if recipients and not _has_notice_task(spec):
        problems.append(
            error(
                field,
                recipients,
                "This pipeline was compiled without the failure notice (its recipients default "
                "is empty, so it has no e-mail task): the addresses would reach no one.",
                [
                    "configure(PIPELINE, name=..., notification_emails=[...]) and compile again",
                    "leave notification_emails empty",
                ],
                code="notice-missing",
            )
        )
    if len(recipients) > MAX_NOTIFICATION_RECIPIENTS:
        problems.append(
            error(
                field,
                recipients,
                f"Vertex e-mails at most {MAX_NOTIFICATION_RECIPIENTS} addresses per run.",
                ["a mailing list address that reaches everyone"],
            )
        )
    return problems


def local_run_problems(spec: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[Problem]:
    """What a local run checks before it starts any task, so an impossible run is refused
    before the steps ahead of the failure have run (and before Vertex would have been paid
    for them): the errors of the jobs the pipeline would submit, as :func:`pipeline_problems`
    finds them without a location; the modules the jobs run (warnings too); and the code and
    data the first steps read (:mod:`vertex_retrain.cli.local_inputs`)."""
    from vertex_retrain.cli.local_inputs import missing_input_problems

    jobs = [p for p in _job_problems(spec, arguments, Settings()) if p.severity == "error"]
    return jobs + missing_input_problems(spec, arguments) + module_problems(arguments)


def pipeline_problems(
    spec: Mapping[str, Any], arguments: Mapping[str, Any], settings: Settings
) -> list[Problem]:
    """Every offline check of one compiled pipeline, errors first.

    Args:
        spec: The compiled pipeline.
        arguments: Its parameter values (defaults with the run's overrides).
        settings: Where and how it would run.

    Returns:
        The problems; the pipeline may be submitted when none is an error.
    """
    from vertex_retrain.cli.borrowed_locations import borrowed_location_problems
    from vertex_retrain.specs.registry_rules import digest_problems

    problems = _component_image_problems(spec, settings) if settings.component_image else []
    images = [
        (f"--param {name}", value)
        for name, value in sorted(arguments.items())
        if name.endswith("image_uri") and isinstance(value, str) and value
    ]
    problems += digest_problems(images)
    problems += borrowed_location_problems(
        str(spec.get("pipelineInfo", {}).get("name", "pipeline")), arguments
    )
    problems += _job_problems(spec, arguments, settings)
    problems += module_problems(arguments)
    problems += _cache_problems(spec)
    problems += _notification_problems(spec, arguments)
    problems += display_name_problems(arguments, evaluation_job=evaluates(spec))
    problems += _submission_problems(settings)
    return sorted(problems, key=lambda p: p.severity != "error")

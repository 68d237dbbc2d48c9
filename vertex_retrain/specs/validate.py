"""Validation entry points on payload dicts, shared by the builders, the linter and backends.

Every function accepts the REST resource (camelCase or snake_case) and, for CustomJobs, the
bare job-spec body; field paths in the problems always refer to the full camelCase resource
(``jobSpec.workerPoolSpecs[0]...``, ``trialJobSpec...``, ``studySpec...``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.catalog import Catalog, load_catalog
from vertex_retrain.specs.job_rules import check_job_spec, check_labels
from vertex_retrain.specs.payload_io import NormalizedJob, mapping, normalize_job
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.tuning_rules import check_study


def _context(catalog: Catalog | None, today: _dt.date | None) -> tuple[Catalog, _dt.date]:
    return catalog or load_catalog(), today or _dt.date.today()


def _check(job: NormalizedJob, catalog: Catalog, today: _dt.date) -> list[Problem]:
    resource = job.resource
    labels = resource.get("labels")
    problems = check_labels(labels, "labels")
    if not job.body_prefix and not resource.get("displayName"):
        problems.append(
            error(
                "displayName",
                None,
                "A job resource needs a display name.",
                ["displayName: recommender-train"],
                code="display-name",
            )
        )
    spec_key = "jobSpec" if job.kind == "custom_job" else "trialJobSpec"
    if job.kind == "tuning_job":
        problems += check_study(resource)
    problems += check_job_spec(
        resource.get(spec_key),
        spec_key,
        catalog,
        labels=mapping(labels),
        labels_path="labels",
        today=today,
    )
    return problems


def validate_job(
    payload: Mapping[str, Any],
    *,
    catalog: Catalog | None = None,
    today: _dt.date | None = None,
) -> tuple[NormalizedJob, list[Problem]]:
    """Detects the job kind and validates it.

    Args:
        payload: CustomJob or HyperparameterTuningJob resource, or a bare CustomJobSpec body.
        catalog: Machine catalog (default: the packaged one).
        today: Date for retirement checks (default: today).

    Returns:
        The normalized job and its problems.

    Raises:
        ValueError: When the payload is not recognisably a job (see
            :func:`vertex_retrain.specs.payload_io.normalize_job`).
    """
    job = normalize_job(payload)
    cat, day = _context(catalog, today)
    return job, _check(job, cat, day)


def _validate_kind(
    payload: Mapping[str, Any], kind: str, catalog: Catalog | None, today: _dt.date | None
) -> list[Problem]:
    try:
        job = normalize_job(payload)
    except ValueError as exc:
        return [error("", None, str(exc), code="shape")]
    if job.kind != kind:
        other = "validate_tuning_job" if job.kind == "tuning_job" else "validate_custom_job"
        return [
            error(
                "",
                job.kind,
                f"Expected a {kind.replace('_', ' ')}, got a {job.kind.replace('_', ' ')}.",
                [other],
                code="shape",
            )
        ]
    cat, day = _context(catalog, today)
    return _check(job, cat, day)


def validate_custom_job(
    payload: Mapping[str, Any],
    *,
    catalog: Catalog | None = None,
    today: _dt.date | None = None,
) -> list[Problem]:
    """Validates a CustomJob payload; never raises for bad content.

    Args:
        payload: CustomJob resource (``{"displayName", "jobSpec": {...}}``) or bare
            CustomJobSpec body, camelCase or snake_case.
        catalog: Machine catalog (default: the packaged one).
        today: Date for retirement checks (default: today).

    Returns:
        Errors and warnings; the payload is valid when no problem has severity ``error``.
    """
    return _validate_kind(payload, "custom_job", catalog, today)


def validate_tuning_job(
    payload: Mapping[str, Any],
    *,
    catalog: Catalog | None = None,
    today: _dt.date | None = None,
) -> list[Problem]:
    """Validates a HyperparameterTuningJob payload; never raises for bad content.

    Args:
        payload: HyperparameterTuningJob resource (``studySpec``, ``trialJobSpec``, trial
            counts), camelCase or snake_case.
        catalog: Machine catalog (default: the packaged one).
        today: Date for retirement checks (default: today).

    Returns:
        Errors and warnings; the payload is valid when no problem has severity ``error``.
    """
    return _validate_kind(payload, "tuning_job", catalog, today)

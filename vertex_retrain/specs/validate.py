"""Validation entry points on payload dicts, shared by the builders, the linter and backends.

Every function accepts the REST resource (camelCase or snake_case) and, for CustomJobs, the
bare job-spec body; field paths in the problems always refer to the full camelCase resource
(``jobSpec.workerPoolSpecs[0]...``, ``trialJobSpec...``, ``studySpec...``).

Field names are checked against the ``aiplatform_v1`` descriptors
(:mod:`vertex_retrain.specs.field_rules`), which imports ``aiplatform_v1`` on first use;
builders, whose payloads hold only the fields they write, skip that check.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from vertex_retrain.specs.display_names import MAX_DISPLAY_NAME
from vertex_retrain.specs.field_rules import check_field_names, superseded
from vertex_retrain.specs.job_rules import check_job_spec, check_labels
from vertex_retrain.specs.machine_catalog import Catalog, load_catalog
from vertex_retrain.specs.payload_io import NormalizedJob, mapping, normalize_job
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.proto_fields import (
    CUSTOM_JOB,
    CUSTOM_JOB_SPEC,
    TUNING_JOB,
    FieldTable,
    job_field_table,
)
from vertex_retrain.specs.tuning_rules import check_study
from vertex_retrain.specs.type_rules import below_removed, check_field_types


def _context(catalog: Catalog | None, today: _dt.date | None) -> tuple[Catalog, _dt.date]:
    return catalog or load_catalog(), today or _dt.date.today()


def _field_problems(
    payload: Mapping[str, Any], job: NormalizedJob, table: FieldTable
) -> tuple[list[Problem], frozenset[str]]:
    if job.body_prefix:
        return check_field_names(payload, CUSTOM_JOB_SPEC, table, path="jobSpec")
    root = TUNING_JOB if job.kind == "tuning_job" else CUSTOM_JOB
    return check_field_names(payload, root, table)


def _check(
    payload: Mapping[str, Any],
    job: NormalizedJob,
    catalog: Catalog,
    today: _dt.date,
    check_fields: bool,
    field_table: FieldTable | None = None,
) -> list[Problem]:
    if not check_fields:
        return _check_rules(job, catalog, today)
    table = field_table if field_table is not None else job_field_table()
    unknown, meant = _field_problems(payload, job, table)
    # Values of the wrong type are reported and taken out before the rules read them.
    root = TUNING_JOB if job.kind == "tuning_job" else CUSTOM_JOB
    wrong, typed, removed = check_field_types(job.resource, root, table)
    rules = _check_rules(replace(job, resource=typed), catalog, today)
    return unknown + wrong + below_removed(superseded(rules, meant), removed)


def _check_rules(job: NormalizedJob, catalog: Catalog, today: _dt.date) -> list[Problem]:
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
    display_name = resource.get("displayName")
    if isinstance(display_name, str) and len(display_name) > MAX_DISPLAY_NAME:
        problems.append(
            error(
                "displayName",
                display_name,
                f"{len(display_name)} characters; Vertex takes at most {MAX_DISPLAY_NAME} in a "
                "display name.",
                [f"a name of 1 to {MAX_DISPLAY_NAME} characters"],
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
    check_fields: bool = True,
    field_table: FieldTable | None = None,
) -> tuple[NormalizedJob, list[Problem]]:
    """Detects the job kind and validates it.

    Args:
        payload: CustomJob or HyperparameterTuningJob resource, or a bare CustomJobSpec body.
        catalog: Machine catalog (default: the packaged one).
        today: Date for retirement checks (default: today).
        check_fields: Report keys that are no ``aiplatform_v1`` field (imports
            ``aiplatform_v1`` on first use).
        field_table: The ``aiplatform_v1`` field table to check against (default: read
            from the protos), as for :func:`validate_custom_job`.

    Returns:
        The normalized job and its problems.

    Raises:
        ValueError: When the payload is not recognisably a job (see
            :func:`vertex_retrain.specs.payload_io.normalize_job`).
    """
    job = normalize_job(payload)
    cat, day = _context(catalog, today)
    return job, _check(payload, job, cat, day, check_fields, field_table)


def _validate_kind(
    payload: Mapping[str, Any],
    kind: str,
    catalog: Catalog | None,
    today: _dt.date | None,
    check_fields: bool,
    field_table: FieldTable | None = None,
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
    return _check(payload, job, cat, day, check_fields, field_table)


def validate_custom_job(
    payload: Mapping[str, Any],
    *,
    catalog: Catalog | None = None,
    today: _dt.date | None = None,
    check_fields: bool = True,
    field_table: FieldTable | None = None,
) -> list[Problem]:
    """Validates a CustomJob payload; never raises for bad content.

    Args:
        payload: CustomJob resource (``{"displayName", "jobSpec": {...}}``) or bare
            CustomJobSpec body, camelCase or snake_case.
        catalog: Machine catalog (default: the packaged one).
        today: Date for retirement checks (default: today).
        check_fields: Report keys that are no ``aiplatform_v1`` field (imports
            ``aiplatform_v1`` on first use).
        field_table: The ``aiplatform_v1`` field table to check against, e.g. one read
            from a cache (default: :func:`~vertex_retrain.specs.proto_fields.job_field_table`,
            read from the protos).

    Returns:
        Errors and warnings; the payload is valid when no problem has severity ``error``.
    """
    return _validate_kind(payload, "custom_job", catalog, today, check_fields, field_table)


def validate_tuning_job(
    payload: Mapping[str, Any],
    *,
    catalog: Catalog | None = None,
    today: _dt.date | None = None,
    check_fields: bool = True,
    field_table: FieldTable | None = None,
) -> list[Problem]:
    """Validates a HyperparameterTuningJob payload; never raises for bad content.

    Args:
        payload: HyperparameterTuningJob resource (``studySpec``, ``trialJobSpec``, trial
            counts), camelCase or snake_case.
        catalog: Machine catalog (default: the packaged one).
        today: Date for retirement checks (default: today).
        check_fields: Report keys that are no ``aiplatform_v1`` field (imports
            ``aiplatform_v1`` on first use).
        field_table: The ``aiplatform_v1`` field table to check against (default: read
            from the protos), as for :func:`validate_custom_job`.

    Returns:
        Errors and warnings; the payload is valid when no problem has severity ``error``.
    """
    return _validate_kind(payload, "tuning_job", catalog, today, check_fields, field_table)

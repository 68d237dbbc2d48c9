"""``vertex-retrain validate FILE...``: lint hand-written CustomJob / tuning job definitions.

Files may be JSON or YAML, camelCase or snake_case, the REST resource or the job-spec body
of ``gcloud ai custom-jobs create --config``. Problems are reported with the field paths of
the file itself.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import replace
from pathlib import Path
from typing import Any

from vertex_retrain.specs.machine_catalog import Catalog
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.safe_load import JOB_FILE_LIMITS, load_file
from vertex_retrain.specs.validate import validate_job

_SHAPES = (
    "a CustomJob resource {displayName, jobSpec: {workerPoolSpecs: [...]}}",
    "a gcloud --config body {workerPoolSpecs: [...]}",
    "a HyperparameterTuningJob resource {studySpec, trialJobSpec, maxTrialCount, "
    "parallelTrialCount}",
)


def load_job_file(path: str | Path) -> Any:
    """Reads a JSON (``.json``) or YAML job file through the safe loader.

    Only a regular file of at most 1 MiB is read; aliases, depth and size are bounded and the
    result holds JSON types only (:mod:`vertex_retrain.specs.safe_load`).

    Raises:
        ValueError: When the file cannot be read, is not valid JSON or YAML, or breaks a
            bound (a :class:`~vertex_retrain.specs.safe_load.LoadError`).
    """
    return load_file(path, limits=JOB_FILE_LIMITS)


def _unloadable(path: str | Path, exc: ValueError) -> Problem:
    """The one problem of a file the safe loader refused (code ``file``, value the path).

    The message names the file ``(file)`` and no path: `validate` starts the line with it.
    """
    message, name = str(exc), str(path)
    if message.startswith(name):
        message = "(file)" + message[len(name) :]
    else:
        message = "(file): " + message.replace(name, "it")
    message = message.rstrip(".") + "."
    # A refusal of the loader's own bounds says what to do; anything else is a syntax error.
    alternative = getattr(exc, "alternative", "") or "fix the syntax at the reported line"
    return error("(file)", str(path), message, [alternative], code="file")


def lint_file(
    path: str | Path, *, catalog: Catalog | None = None, today: _dt.date | None = None
) -> list[Problem]:
    """Validates one job file; unreadable or unrecognisable files give one error problem.

    Field paths are those of the file (a gcloud ``--config`` body has no ``jobSpec.``).
    """
    try:
        document = load_job_file(path)
    except ValueError as exc:
        return [_unloadable(path, exc)]
    try:
        job, problems = validate_job(document, catalog=catalog, today=today)
    except ValueError as exc:
        return [error("(file)", str(path), str(exc), _SHAPES, code="file")]
    return [replace(p, field=job.user_path(p.field)) for p in problems]

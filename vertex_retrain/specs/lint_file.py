"""``compile.py validate FILE...``: lint hand-written CustomJob / tuning job definitions.

Files may be JSON or YAML, camelCase or snake_case, the REST resource or the job-spec body
of ``gcloud ai custom-jobs create --config``. Problems are reported with the field paths of
the file itself.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from vertex_retrain.specs.catalog import Catalog
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.validate import validate_job

_SHAPES = (
    "a CustomJob resource {displayName, jobSpec: {workerPoolSpecs: [...]}}",
    "a gcloud --config body {workerPoolSpecs: [...]}",
    "a HyperparameterTuningJob resource {studySpec, trialJobSpec, maxTrialCount, "
    "parallelTrialCount}",
)


def load_job_file(path: str | Path) -> Any:
    """Reads a JSON or YAML job file.

    Raises:
        ValueError: When the file cannot be read or is neither valid JSON nor YAML.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} is not valid YAML: {exc}") from exc


def lint_file(
    path: str | Path, *, catalog: Catalog | None = None, today: _dt.date | None = None
) -> list[Problem]:
    """Validates one job file; unreadable or unrecognisable files give one error problem.

    Field paths are those of the file (a gcloud ``--config`` body has no ``jobSpec.``).
    """
    try:
        document = load_job_file(path)
    except ValueError as exc:
        return [
            error(
                "(file)", str(path), str(exc), ["fix the syntax at the reported line"], code="file"
            )
        ]
    try:
        job, problems = validate_job(document, catalog=catalog, today=today)
    except ValueError as exc:
        return [error("(file)", str(path), str(exc), _SHAPES, code="file")]
    return [replace(p, field=job.user_path(p.field)) for p in problems]

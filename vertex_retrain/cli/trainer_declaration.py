"""Whether a pipeline's trainer declares warm starts, read before the run as the run reads it.

The weekly template's ``plan_training`` task reads ``[tool.vertex-retrain] warm-start-flag`` in
the ``pyproject.toml`` of its ``source_uri`` (:func:`vertex_retrain.steps.training_plan.
trainer_warm_start_flag`); a trainer that declares none is retrained fully every week. The cost
estimate reads the same declaration here, through the local backend's mapping (a local folder
where it is, a ``gs://`` source where local runs keep Cloud Storage files), so its typical
month prices the weeks the run would train; when the source cannot be read here, it says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PLAN_FUNCTION", "TrainerWarmStart", "trainer_warm_start"]

PLAN_FUNCTION = "plan_training"
"""The component whose task reads the trainer's declaration."""


@dataclass(frozen=True)
class TrainerWarmStart:
    """What the trainer declares, as far as it is known before the run.

    Attributes:
        declared: True when it declares a warm-start flag, False when it declares none (or
            has no ``pyproject.toml``), None when it could not be read here.
        says: One clause for the estimate's assumption line: what was read, and where, or
            why nothing could be.
    """

    declared: bool | None
    says: str


def trainer_warm_start(spec: Mapping[str, Any], arguments: Mapping[str, Any]) -> TrainerWarmStart:
    """Reads the declaration of the trainer the pipeline's ``plan_training`` task would read.

    Args:
        spec: The compiled pipeline.
        arguments: Its parameter values (defaults with the overrides on top).

    Returns:
        The declaration, or ``declared=None`` with the reason: no such task, a source known
        only at run time, a source not readable on this machine, a malformed declaration.
    """
    from vertex_retrain.cli.spec_tasks import leaf_tasks

    planning = [
        task
        for task in leaf_tasks(spec, arguments)
        if task.function == PLAN_FUNCTION and task.runs is not False
    ]
    if not planning:
        return TrainerWarmStart(None, f"no {PLAN_FUNCTION} task reads the trainer's declaration")
    task = planning[0]
    if "source_uri" in task.unknown:
        why = task.unknown["source_uri"]
        return TrainerWarmStart(None, f"the trainer's source is known only at run time ({why})")
    return _read(str(task.parameters.get("source_uri", "")))


def _read(source_uri: str) -> TrainerWarmStart:
    from vertex_retrain.backends.local.backend import LocalBackend
    from vertex_retrain.backends.local.storage import DEFAULT_ROOT, ROOT_ENV
    from vertex_retrain.steps.training_plan import trainer_warm_start_flag

    # The local run's storage root, named but not made: an estimate creates nothing.
    local = LocalBackend(Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT).expanduser())
    try:
        readable = bool(source_uri) and local.readable_path(source_uri).is_dir()
    except (OSError, ValueError):  # a URI the local mapping refuses: not readable here
        readable = False
    if not readable:
        # Cloud Storage is read here where a local run keeps it; the user's copy is elsewhere.
        hint = (
            ": pass --param source_uri=<local path> to read it"
            if source_uri.startswith(("gs://", "/gcs/"))
            else ""
        )
        return TrainerWarmStart(
            None, f"the trainer's source {source_uri!r} cannot be read on this machine{hint}"
        )
    try:
        flag = trainer_warm_start_flag(local, source_uri)
    except (OSError, ValueError) as error:  # a malformed declaration stops plan_training too
        reason = " ".join(str(error).split())
        return TrainerWarmStart(None, f"the trainer at {source_uri} cannot be read: {reason}")
    if not flag:
        return TrainerWarmStart(
            False,
            f"the trainer at {source_uri} declares no warm start ([tool.vertex-retrain] "
            "warm-start-flag in its pyproject.toml)",
        )
    return TrainerWarmStart(True, f"the trainer at {source_uri} declares warm starts ({flag})")

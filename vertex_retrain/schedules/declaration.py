"""A recurring pipeline run, declared in the user's repository (a YAML file of declarations,
read by :mod:`vertex_retrain.schedules.declarations_file`, or Python code)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from vertex_retrain.schedules.cron import (
    ScheduleError,
    next_run_times,
    validate_cron,
    validate_time_zone,
    vertex_cron,
)

__all__ = ["ScheduleDeclaration"]

# Vertex resource display names are at most 128 characters.
_MAX_DISPLAY_NAME = 128


@dataclass(frozen=True)
class ScheduleDeclaration:
    """A recurring pipeline run, declared in code and reconciled to Vertex by display name.

    Attributes:
        display_name: Unique name of the Vertex schedule; the key for idempotent updates.
        pipeline_name: ``pipelineInfo.name`` of the pipeline it runs (the Artifact Registry
            package name, which ``--template-version`` pins), e.g. ``"weekly-retraining"``.
        cron: Five-field cron expression, read in ``time_zone``.
        time_zone: IANA time zone key.
        parameter_values: Pipeline parameters for every run; unset ones take the template's
            defaults.
        max_concurrent_run_count: Runs allowed at once (a late run does not overlap the next).
        paused: Declared paused: the schedule exists but starts no runs.
        pipeline: Where that pipeline's source is, for the checks made before a schedule is
            changed: a compiled pipeline file, ``module:attr`` or ``path/to/file.py:attr``
            (relative paths from the declaring file's folder); empty: ``pipeline_name`` is a
            library template.
    """

    display_name: str
    pipeline_name: str
    cron: str
    time_zone: str
    parameter_values: Mapping[str, Any] = field(default_factory=dict)
    max_concurrent_run_count: int = 1
    paused: bool = False
    pipeline: str = ""

    def __post_init__(self) -> None:
        if not self.display_name.strip() or len(self.display_name) > _MAX_DISPLAY_NAME:
            raise ScheduleError(
                f"display_name {self.display_name!r}: expected 1 to {_MAX_DISPLAY_NAME} characters"
            )
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.pipeline_name):
            raise ScheduleError(
                f"{self.display_name}: pipeline_name {self.pipeline_name!r} is not a compiled "
                "pipeline name (lowercase letters, digits and '-', e.g. 'weekly-retraining')"
            )
        try:
            object.__setattr__(self, "cron", validate_cron(self.cron))
            validate_time_zone(self.time_zone)
        except ScheduleError as error:
            raise ScheduleError(f"{self.display_name}: {error}") from None
        if (
            isinstance(self.max_concurrent_run_count, bool)
            or not isinstance(self.max_concurrent_run_count, int)
            or self.max_concurrent_run_count < 1
        ):
            raise ScheduleError(
                f"{self.display_name}: max_concurrent_run_count must be an integer >= 1, "
                f"got {self.max_concurrent_run_count!r}"
            )
        if not isinstance(self.pipeline, str):
            raise ScheduleError(
                f"{self.display_name}: pipeline must be text (a compiled pipeline file, "
                f"MODULE:ATTR or path/to/file.py:ATTR), got {self.pipeline!r}"
            )
        if not isinstance(self.paused, bool):
            raise ScheduleError(
                f"{self.display_name}: paused must be true or false, got {self.paused!r}"
            )
        try:
            # Vertex carries parameters as JSON (protobuf Value); refuse what cannot travel.
            values = json.loads(json.dumps(dict(self.parameter_values), allow_nan=False))
        except (TypeError, ValueError) as error:
            raise ScheduleError(
                f"{self.display_name}: parameter_values must be JSON values ({error})"
            ) from None
        object.__setattr__(self, "parameter_values", values)

    @property
    def vertex_cron(self) -> str:
        """The cron string Vertex stores: ``TZ=<zone> <cron>``."""
        return vertex_cron(self.cron, self.time_zone)

    def next_run_times(self, count: int = 5, after: datetime | None = None) -> list[datetime]:
        """The next ``count`` run times in the declaration's time zone (see next_run_times)."""
        return next_run_times(self.cron, self.time_zone, count=count, after=after)

"""The state of a Vertex pipeline schedule and the client protocol that reads and changes it.

Both sides of the Vertex boundary use these types: reconciliation
(:mod:`vertex_retrain.cli.schedule_reconcile`) plans against a :class:`ScheduleClient`, and
the aiplatform implementation (:mod:`vertex_retrain.cli.vertex_schedule_client`) and the
tests' fake implement it. Neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "COMPARED_FIELDS",
    "SCHEDULE_FIELDS",
    "ObservedSchedule",
    "ScheduleClient",
    "ScheduleSpec",
]

COMPARED_FIELDS = (
    "cron",
    "max_concurrent_run_count",
    "template_uri",
    "parameter_values",
    "service_account",
    "pipeline_root",
)
"""Fields compared between a declaration and Vertex, in the order a diff prints them."""

SCHEDULE_FIELDS = frozenset({"cron", "max_concurrent_run_count"})
"""The compared fields that live on the schedule itself; the others live in its pipeline-job
request, which Vertex updates through a different field mask."""


@dataclass(frozen=True)
class ScheduleSpec:
    """The state of one schedule, as declared or as read back from Vertex."""

    display_name: str
    cron: str
    max_concurrent_run_count: int
    template_uri: str
    parameter_values: Mapping[str, Any]
    service_account: str
    pipeline_root: str
    paused: bool


@dataclass(frozen=True)
class ObservedSchedule:
    """A schedule that exists on Vertex."""

    resource_name: str
    state: str  # ACTIVE, PAUSED or COMPLETED
    spec: ScheduleSpec


class ScheduleClient(Protocol):
    """The Vertex boundary: everything reconciliation reads or changes."""

    def list(self, display_name: str) -> list[ObservedSchedule]:
        """Schedules with exactly this display name."""
        ...

    def create(self, desired: ScheduleSpec) -> ObservedSchedule:
        """Creates an active schedule."""
        ...

    def update(self, existing: ObservedSchedule, desired: ScheduleSpec, fields: set[str]) -> None:
        """Sets ``fields`` (names from COMPARED_FIELDS) of ``existing`` to their desired values."""
        ...

    def pause(self, existing: ObservedSchedule) -> None:
        """Stops the schedule from starting runs."""
        ...

    def resume(self, existing: ObservedSchedule) -> None:
        """Lets a paused schedule start runs again, without catching up missed ones."""
        ...

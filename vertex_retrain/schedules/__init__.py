"""Pipeline schedules as library types: declarations, cron rules and the Vertex client protocol.

- :mod:`~vertex_retrain.schedules.cron`: cron and time-zone validation, Vertex's cron string,
  next run times.
- :mod:`~vertex_retrain.schedules.declaration`: :class:`ScheduleDeclaration`, a recurring run
  declared in the user's repository; the library declares none.
- :mod:`~vertex_retrain.schedules.declarations_file`: :func:`load_declarations`, the
  declarations of a YAML file.
- :mod:`~vertex_retrain.schedules.client`: a schedule's state on Vertex and the
  :class:`ScheduleClient` protocol that the command line reconciles through.

Pure: standard library, and croniter and the YAML reader inside the functions that need them.
"""

from vertex_retrain.schedules.client import (
    COMPARED_FIELDS,
    SCHEDULE_FIELDS,
    ObservedSchedule,
    ScheduleClient,
    ScheduleSpec,
)
from vertex_retrain.schedules.cron import (
    ScheduleError,
    next_run_times,
    parse_vertex_cron,
    validate_cron,
    validate_time_zone,
    vertex_cron,
)
from vertex_retrain.schedules.declaration import ScheduleDeclaration
from vertex_retrain.schedules.declarations_file import load_declarations

__all__ = [
    "COMPARED_FIELDS",
    "SCHEDULE_FIELDS",
    "ObservedSchedule",
    "ScheduleClient",
    "ScheduleDeclaration",
    "ScheduleError",
    "ScheduleSpec",
    "load_declarations",
    "next_run_times",
    "parse_vertex_cron",
    "validate_cron",
    "validate_time_zone",
    "vertex_cron",
]

"""The schedules this project declares: which pipeline runs when, in which time zone.

`compile.py schedule` reconciles :data:`DECLARED_SCHEDULES` with Vertex AI
(:mod:`vertex_retrain.cli.schedule_reconcile`). The declaration type and its cron and
time-zone checks are library code (:mod:`vertex_retrain.schedules`); a declaration is
validated when this module is imported.
"""

from __future__ import annotations

from vertex_retrain.schedules import ScheduleDeclaration

__all__ = ["DECLARED_SCHEDULES", "WEEKLY_RETRAINING"]

# The drink shops' weekly retraining: Monday 03:00 Taipei time, after the weekend's
# transactions have landed and before the shops open. Parameters take the template defaults.
WEEKLY_RETRAINING = ScheduleDeclaration(
    display_name="drink-shops-weekly-retraining",
    pipeline_name="weekly-retraining",
    cron="0 3 * * 1",
    time_zone="Asia/Taipei",
    parameter_values={},
    max_concurrent_run_count=1,
)

DECLARED_SCHEDULES: tuple[ScheduleDeclaration, ...] = (WEEKLY_RETRAINING,)
"""Every schedule `compile.py schedule` reconciles, matched on Vertex by display name."""

"""``schedule --dry-run`` without Vertex: the declared schedules, their next runs and templates.

Works with no flag but ``--schedules`` and no credentials: everything shown is read from the
declarations (:mod:`vertex_retrain.cli.schedule_source`) and the ``--template-version``
flags. The diff against Vertex needs project, region, service account, pipeline root and
credentials; without them this view says what to pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from vertex_retrain.invocation import command
from vertex_retrain.schedules import ScheduleDeclaration


def not_pinned() -> str:
    """What the dry run shows for a pipeline without ``--template-version``."""
    return f"not pinned: pass --template-version with the version URI `{command('upload')}` prints"


def _parameters(values: Mapping[str, object]) -> str:
    if not values:
        return "the template's defaults"
    return ", ".join(f"{name}={value}" for name, value in sorted(values.items()))


def format_declared(
    declarations: Sequence[ScheduleDeclaration],
    template_uris: Mapping[str, str],
    *,
    now: datetime | None = None,
) -> str:
    """Renders each declared schedule: pipeline, template pinned, cron, next five runs.

    Args:
        declarations: The declared schedules.
        template_uris: Pipeline name -> pinned version URI (from ``--template-version``).
        now: Reference time for the next runs; default now.

    Returns:
        The text, ending with a newline.
    """
    lines = []
    for declaration in declarations:
        runs = declaration.next_run_times(5, after=now)
        state = "paused" if declaration.paused else "active"
        lines += [
            f"schedule {declaration.display_name} ({state})",
            f"  pipeline: {declaration.pipeline_name}",
            *([f"  source: {declaration.pipeline}"] if declaration.pipeline else []),
            f"  template: {template_uris.get(declaration.pipeline_name) or not_pinned()}",
            f"  cron: {declaration.cron} in {declaration.time_zone}, at most "
            f"{declaration.max_concurrent_run_count} run(s) at once",
            f"  parameters: {_parameters(declaration.parameter_values)}",
            f"  next {len(runs)} runs ({declaration.time_zone}):",
            *(f"    {run:%Y-%m-%d %H:%M %a (UTC%z)}" for run in runs),
        ]
    return "\n".join(lines) + "\n"


def missing_vertex_flags(
    project: str | None,
    location: str | None,
    service_account: str | None,
    pipeline_root: str | None,
    template_versions: Sequence[str],
) -> list[str]:
    """The flags a diff against Vertex (or reconciling) still needs, in the usual order."""
    given = {
        "--project": project,
        "--location": location,
        "--service-account": service_account,
        "--pipeline-root": pipeline_root,
        "--template-version": list(template_versions),
    }
    return [flag for flag, value in given.items() if not value]

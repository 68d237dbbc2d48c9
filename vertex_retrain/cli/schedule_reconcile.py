"""Reconcile declared schedules with Vertex AI ``PipelineJobSchedule`` resources.

Idempotent by display name: a missing schedule is created; one whose cron, parameters,
template version, maximum concurrency, service account or pipeline root differs is updated;
one whose paused state differs is paused or resumed; anything else is left alone. Schedules
that are not declared are never touched. Vertex is reached only through a
:class:`vertex_retrain.schedules.ScheduleClient` (the default,
:class:`vertex_retrain.cli.vertex_schedule_client.VertexScheduleClient`, wraps aiplatform), so
planning is pure and tests use a fake.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from vertex_retrain.invocation import command
from vertex_retrain.rules.numbers import whole_numbers
from vertex_retrain.schedules import (
    COMPARED_FIELDS,
    ObservedSchedule,
    ScheduleClient,
    ScheduleDeclaration,
    ScheduleError,
    ScheduleSpec,
    parse_vertex_cron,
)

__all__ = [
    "DeploymentTarget",
    "FieldChange",
    "SchedulePlan",
    "apply_plans",
    "desired_spec",
    "format_plans",
    "plan_schedules",
    "reconcile",
]


@dataclass(frozen=True)
class DeploymentTarget:
    """Where scheduled runs execute: the same project, region, identity and root as a job."""

    project: str
    location: str
    service_account: str
    pipeline_root: str


@dataclass(frozen=True)
class FieldChange:
    """One differing field: ``old`` is None when the schedule does not exist yet."""

    field: str
    old: Any
    new: Any


@dataclass(frozen=True)
class SchedulePlan:
    """What reconciling one declaration does."""

    declaration: ScheduleDeclaration
    desired: ScheduleSpec
    action: Literal["create", "update", "noop"]
    changes: tuple[FieldChange, ...] = ()
    state_change: Literal["pause", "resume"] | None = None
    existing: ObservedSchedule | None = None
    next_runs: tuple[datetime, ...] = field(default=())


def desired_spec(
    declaration: ScheduleDeclaration, target: DeploymentTarget, template_uri: str
) -> ScheduleSpec:
    """The schedule a declaration asks for, pinned to one template version.

    Args:
        declaration: The declared schedule.
        target: Project, region, service account and pipeline root of the runs.
        template_uri: The Artifact Registry version URI (``.../sha256:<digest>``).

    Returns:
        The desired state.
    """
    return ScheduleSpec(
        display_name=declaration.display_name,
        cron=declaration.vertex_cron,
        max_concurrent_run_count=declaration.max_concurrent_run_count,
        template_uri=template_uri,
        parameter_values=dict(declaration.parameter_values),
        service_account=target.service_account,
        pipeline_root=target.pipeline_root,
        paused=declaration.paused,
    )


def _canonical(field_name: str, value: Any) -> Any:
    if field_name == "cron":
        return parse_vertex_cron(str(value))
    if field_name == "parameter_values":  # Vertex returns 3 as 3.0: read back, it equals 3
        return json.dumps(whole_numbers(value), sort_keys=True)
    return value


def _diff(old: ScheduleSpec | None, new: ScheduleSpec) -> tuple[FieldChange, ...]:
    changes = []
    for name in COMPARED_FIELDS:
        wanted = getattr(new, name)
        current = None if old is None else getattr(old, name)
        if old is None or _canonical(name, current) != _canonical(name, wanted):
            changes.append(FieldChange(name, current, wanted))
    return tuple(changes)


def plan_schedules(
    declarations: Sequence[ScheduleDeclaration],
    target: DeploymentTarget,
    template_uris: Mapping[str, str],
    client: ScheduleClient,
    *,
    now: datetime | None = None,
) -> list[SchedulePlan]:
    """Works out what reconciling would change, reading Vertex but changing nothing.

    Args:
        declarations: The declared schedules.
        target: Project, region, service account and pipeline root of the runs.
        template_uris: Pipeline name -> pinned version URI.
        client: The Vertex boundary (only ``list`` is called).
        now: Reference time for the next five runs; default now.

    Returns:
        One plan per declaration, in order.

    Raises:
        ScheduleError: Duplicate declared display names, a pipeline without a pinned version,
            or several live schedules sharing one display name on Vertex.
    """
    names = [declaration.display_name for declaration in declarations]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ScheduleError(f"display names declared more than once: {', '.join(duplicated)}")
    unpinned = sorted({d.pipeline_name for d in declarations} - set(template_uris))
    if unpinned:
        raise ScheduleError(
            f"no template version for pipeline(s) {', '.join(unpinned)}; pass --template-version "
            f"with the version URI printed by `{command('upload')}`"
        )
    plans = []
    for declaration in declarations:
        desired = desired_spec(declaration, target, template_uris[declaration.pipeline_name])
        next_runs = tuple(declaration.next_run_times(5, after=now))
        # A COMPLETED schedule can neither be updated nor resumed; a new one replaces it.
        live = [s for s in client.list(declaration.display_name) if s.state != "COMPLETED"]
        if len(live) > 1:
            raise ScheduleError(
                f"{len(live)} schedules are named {declaration.display_name!r} "
                f"({', '.join(s.resource_name for s in live)}); delete all but one, then rerun"
            )
        if not live:
            plans.append(
                SchedulePlan(
                    declaration,
                    desired,
                    "create",
                    _diff(None, desired),
                    "pause" if declaration.paused else None,
                    None,
                    next_runs,
                )
            )
            continue
        existing = live[0]
        changes = _diff(existing.spec, desired)
        state_change: Literal["pause", "resume"] | None = None
        if declaration.paused and existing.state != "PAUSED":
            state_change = "pause"
        elif not declaration.paused and existing.state == "PAUSED":
            state_change = "resume"
        action: Literal["update", "noop"] = "update" if changes else "noop"
        plans.append(
            SchedulePlan(declaration, desired, action, changes, state_change, existing, next_runs)
        )
    return plans


def apply_plans(plans: Sequence[SchedulePlan], client: ScheduleClient) -> None:
    """Carries out plans from :func:`plan_schedules`.

    Pausing comes before an update and resuming after it, so no run starts with a half-applied
    configuration.

    Args:
        plans: The plans.
        client: The Vertex boundary.
    """
    for plan in plans:
        existing = plan.existing
        if plan.action == "create":
            existing = client.create(plan.desired)
        assert existing is not None  # a plan without "create" always has an existing schedule
        if plan.state_change == "pause":
            client.pause(existing)
        if plan.action == "update":
            client.update(existing, plan.desired, {change.field for change in plan.changes})
        if plan.state_change == "resume":
            client.resume(existing)


def reconcile(
    declarations: Sequence[ScheduleDeclaration],
    target: DeploymentTarget,
    template_uris: Mapping[str, str],
    client: ScheduleClient,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[SchedulePlan]:
    """Plans and, unless ``dry_run``, applies. See :func:`plan_schedules` for the arguments.

    Returns:
        The plans (what was done, or with ``dry_run`` what would be done).
    """
    plans = plan_schedules(declarations, target, template_uris, client, now=now)
    if not dry_run:
        apply_plans(plans, client)
    return plans


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, Mapping):
        return json.dumps(whole_numbers(value), sort_keys=True)
    return str(value)


def format_plans(plans: Sequence[SchedulePlan], *, dry_run: bool) -> str:
    """Renders plans as text: per schedule the action, each ``field: old → new``, next runs.

    Args:
        plans: The plans.
        dry_run: Say "would" (nothing was changed) instead of reporting what was done.

    Returns:
        The report, ending with a newline.
    """
    lines = []
    for plan in plans:
        steps: list[str] = [] if plan.action == "noop" else [plan.action]
        steps += [plan.state_change] if plan.state_change else []
        verb = "would " if dry_run and steps else ""
        summary = f"{verb}{' + '.join(steps)}" if steps else "up to date"
        lines.append(f"schedule {plan.declaration.display_name}: {summary}")
        for change in plan.changes:
            lines.append(f"  {change.field}: {_show(change.old)} → {_show(change.new)}")
        if plan.state_change:
            old, new = (
                ("active", "paused") if plan.state_change == "pause" else ("paused", "active")
            )
            lines.append(f"  state: {old} → {new}")
        lines.append(f"  next {len(plan.next_runs)} runs ({plan.declaration.time_zone}):")
        lines.extend(f"    {run:%Y-%m-%d %H:%M %a (UTC%z)}" for run in plan.next_runs)
    if dry_run:
        lines.append("dry run: nothing was changed")
    return "\n".join(lines) + "\n"

"""Schedule reconciliation against a fake Vertex boundary: create, update, no-op, pause, dry run."""

from __future__ import annotations

import argparse
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.cli import schedule_command
from vertex_retrain.cli.schedule_reconcile import DeploymentTarget, format_plans, reconcile
from vertex_retrain.schedules import (
    ObservedSchedule,
    ScheduleDeclaration,
    ScheduleError,
    ScheduleSpec,
    load_declarations,
)

WEEKLY_FILE = Path(__file__).resolve().parent / "data" / "schedules" / "weekly.yaml"
(WEEKLY_RETRAINING,) = load_declarations(WEEKLY_FILE)

NOW = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)
DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64
HOST = "https://asia-east1-kfp.pkg.dev/drink-shops/pipelines"
URIS_A = {"weekly-retraining": f"{HOST}/weekly-retraining/{DIGEST_A}"}
URIS_B = {"weekly-retraining": f"{HOST}/weekly-retraining/{DIGEST_B}"}
TARGET = DeploymentTarget(
    project="drink-shops",
    location="asia-east1",
    service_account="retrain@drink-shops.iam.gserviceaccount.com",
    pipeline_root="gs://drink-shops-pipelines/root",
)
MUTATIONS = ("create", "update", "pause", "resume")


def _as_vertex(value: Any) -> Any:
    # Vertex stores parameter numbers as doubles.
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {key: _as_vertex(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_vertex(item) for item in value]
    return value


class FakeScheduleClient:
    """In-memory schedules keyed by resource name; records every call."""

    def __init__(self) -> None:
        self.schedules: dict[str, ObservedSchedule] = {}
        self.calls: list[tuple[str, str]] = []

    def list(self, display_name: str) -> list[ObservedSchedule]:
        self.calls.append(("list", display_name))
        return [s for s in self.schedules.values() if s.spec.display_name == display_name]

    def create(self, desired: ScheduleSpec) -> ObservedSchedule:
        self.calls.append(("create", desired.display_name))
        name = f"projects/1/locations/asia-east1/schedules/{len(self.schedules) + 1}"
        spec = dataclasses.replace(
            desired, paused=False, parameter_values=_as_vertex(dict(desired.parameter_values))
        )
        self.schedules[name] = ObservedSchedule(name, "ACTIVE", spec)
        return self.schedules[name]

    def update(self, existing: ObservedSchedule, desired: ScheduleSpec, fields: set[str]) -> None:
        self.calls.append(("update", ",".join(sorted(fields))))
        current = self.schedules[existing.resource_name]
        changed = {name: getattr(desired, name) for name in fields}
        if "parameter_values" in changed:
            changed["parameter_values"] = _as_vertex(dict(changed["parameter_values"]))
        spec = dataclasses.replace(current.spec, **changed)
        self.schedules[existing.resource_name] = dataclasses.replace(current, spec=spec)

    def _set_state(self, existing: ObservedSchedule, state: str) -> None:
        current = self.schedules[existing.resource_name]
        spec = dataclasses.replace(current.spec, paused=state == "PAUSED")
        self.schedules[existing.resource_name] = ObservedSchedule(
            current.resource_name, state, spec
        )

    def pause(self, existing: ObservedSchedule) -> None:
        self.calls.append(("pause", existing.resource_name))
        self._set_state(existing, "PAUSED")

    def resume(self, existing: ObservedSchedule) -> None:
        self.calls.append(("resume", existing.resource_name))
        self._set_state(existing, "ACTIVE")

    def mutations(self) -> list[tuple[str, str]]:
        return [call for call in self.calls if call[0] in MUTATIONS]


def _weekly(**changes: Any) -> ScheduleDeclaration:
    return dataclasses.replace(WEEKLY_RETRAINING, **changes)


def test_reconcile_creates_then_updates_then_does_nothing_on_the_third_run() -> None:
    client = FakeScheduleClient()
    declared = _weekly(parameter_values={"epochs": 3, "tune": False})

    first = reconcile([declared], TARGET, URIS_A, client, now=NOW)
    assert [plan.action for plan in first] == ["create"]
    (created,) = client.schedules.values()
    assert created.state == "ACTIVE"
    assert created.spec.cron == "TZ=Asia/Taipei 0 3 * * 1"
    assert created.spec.template_uri == URIS_A["weekly-retraining"]
    assert created.spec.service_account == TARGET.service_account
    assert created.spec.pipeline_root == TARGET.pipeline_root
    assert created.spec.max_concurrent_run_count == 1

    changed = _weekly(cron="30 2 * * 1", parameter_values={"epochs": 5, "tune": False})
    second = reconcile([changed], TARGET, URIS_B, client, now=NOW)
    assert second[0].action == "update"
    assert {change.field for change in second[0].changes} == {
        "cron",
        "template_uri",
        "parameter_values",
    }
    assert client.mutations()[-1] == ("update", "cron,parameter_values,template_uri")
    (updated,) = client.schedules.values()
    assert updated.spec.cron == "TZ=Asia/Taipei 30 2 * * 1"
    assert updated.spec.template_uri == URIS_B["weekly-retraining"]
    assert updated.spec.parameter_values == {"epochs": 5.0, "tune": False}

    before = list(client.mutations())
    third = reconcile([changed], TARGET, URIS_B, client, now=NOW)
    assert [(plan.action, plan.changes, plan.state_change) for plan in third] == [
        ("noop", (), None)
    ]
    assert client.mutations() == before
    assert len(client.schedules) == 1


def test_reconcile_updates_max_concurrency_service_account_and_pipeline_root() -> None:
    client = FakeScheduleClient()
    reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)
    moved = dataclasses.replace(
        TARGET,
        service_account="other@drink-shops.iam.gserviceaccount.com",
        pipeline_root="gs://x/r",
    )
    plans = reconcile([_weekly(max_concurrent_run_count=2)], moved, URIS_A, client, now=NOW)
    assert [change.field for change in plans[0].changes] == [
        "max_concurrent_run_count",
        "service_account",
        "pipeline_root",
    ]
    (schedule,) = client.schedules.values()
    assert schedule.spec.max_concurrent_run_count == 2
    assert schedule.spec.service_account == moved.service_account


def test_reconcile_pauses_a_schedule_declared_paused_and_resumes_it_when_active_again() -> None:
    client = FakeScheduleClient()
    reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)

    paused = reconcile([_weekly(paused=True)], TARGET, URIS_A, client, now=NOW)
    assert (paused[0].action, paused[0].state_change) == ("noop", "pause")
    assert client.mutations()[-1][0] == "pause"
    assert next(iter(client.schedules.values())).state == "PAUSED"

    count = len(client.mutations())
    reconcile([_weekly(paused=True)], TARGET, URIS_A, client, now=NOW)
    assert len(client.mutations()) == count  # already paused: nothing to do

    resumed = reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)
    assert resumed[0].state_change == "resume"
    assert next(iter(client.schedules.values())).state == "ACTIVE"


def test_reconcile_orders_pause_before_update_and_update_before_resume() -> None:
    client = FakeScheduleClient()
    reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)
    reconcile([_weekly(paused=True, cron="0 4 * * 1")], TARGET, URIS_A, client, now=NOW)
    assert [call[0] for call in client.mutations()[-2:]] == ["pause", "update"]
    reconcile([_weekly(cron="0 5 * * 1")], TARGET, URIS_A, client, now=NOW)
    assert [call[0] for call in client.mutations()[-2:]] == ["update", "resume"]


def test_reconcile_creates_a_schedule_declared_paused_and_pauses_it() -> None:
    client = FakeScheduleClient()
    reconcile([_weekly(paused=True)], TARGET, URIS_A, client, now=NOW)
    assert [call[0] for call in client.mutations()] == ["create", "pause"]
    assert next(iter(client.schedules.values())).state == "PAUSED"


def test_reconcile_dry_run_calls_no_mutating_method_and_prints_the_diff() -> None:
    client = FakeScheduleClient()
    reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)
    snapshot = dict(client.schedules)
    calls = len(client.calls)

    plans = reconcile(
        [_weekly(max_concurrent_run_count=2, paused=True)],
        TARGET,
        URIS_B,
        client,
        dry_run=True,
        now=NOW,
    )
    assert client.schedules == snapshot
    assert [call[0] for call in client.calls[calls:]] == ["list"]
    text = format_plans(plans, dry_run=True)
    assert "schedule drink-shops-weekly-retraining: would update + pause" in text
    assert "  max_concurrent_run_count: 1 → 2" in text
    assert f"  template_uri: {URIS_A['weekly-retraining']} → {URIS_B['weekly-retraining']}" in text
    assert "  state: active → paused" in text
    assert "  next 5 runs (Asia/Taipei):" in text
    assert "    2026-12-07 03:00 Mon (UTC+0800)" in text
    assert text.count(" Mon (UTC+0800)") == 5
    assert text.endswith("dry run: nothing was changed\n")


def test_reconcile_treats_vertex_doubles_and_cron_tz_spelling_as_equal() -> None:
    client = FakeScheduleClient()
    declared = _weekly(parameter_values={"epochs": 3, "shops": [1, 2], "spec": {"n": 4}})
    reconcile([declared], TARGET, URIS_A, client, now=NOW)
    (name, schedule) = next(iter(client.schedules.items()))
    respelled = dataclasses.replace(schedule.spec, cron="CRON_TZ=Asia/Taipei  0 3 * * 1")
    client.schedules[name] = dataclasses.replace(schedule, spec=respelled)
    plans = reconcile([declared], TARGET, URIS_A, client, now=NOW)
    assert plans[0].action == "noop"


def test_reconcile_refuses_duplicate_live_schedules_and_changes_nothing() -> None:
    client = FakeScheduleClient()
    reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)
    (schedule,) = client.schedules.values()
    client.schedules["projects/1/locations/asia-east1/schedules/99"] = dataclasses.replace(
        schedule, resource_name="projects/1/locations/asia-east1/schedules/99"
    )
    count = len(client.mutations())
    with pytest.raises(
        ScheduleError, match="2 schedules are named 'drink-shops-weekly-retraining'"
    ):
        reconcile([_weekly(cron="0 4 * * 1")], TARGET, URIS_A, client, now=NOW)
    assert len(client.mutations()) == count


def test_reconcile_replaces_a_completed_schedule_with_a_new_one() -> None:
    client = FakeScheduleClient()
    reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)
    (name, schedule) = next(iter(client.schedules.items()))
    client.schedules[name] = dataclasses.replace(schedule, state="COMPLETED")
    plans = reconcile([WEEKLY_RETRAINING], TARGET, URIS_A, client, now=NOW)
    assert plans[0].action == "create"
    assert len(client.schedules) == 2


def test_reconcile_requires_a_pinned_version_for_every_scheduled_pipeline() -> None:
    client = FakeScheduleClient()
    with pytest.raises(ScheduleError, match="no template version for pipeline"):
        reconcile([WEEKLY_RETRAINING], TARGET, {}, client, now=NOW)
    assert client.calls == []


def _args(**overrides: Any) -> argparse.Namespace:
    values: dict[str, Any] = {
        "project": TARGET.project,
        "location": TARGET.location,
        "service_account": TARGET.service_account,
        "pipeline_root": TARGET.pipeline_root,
        "template_version": [URIS_A["weekly-retraining"]],
        "repository": None,
        "dry_run": True,
        "schedules": str(WEEKLY_FILE),
    }
    values.update(overrides)
    return argparse.Namespace(**values)


def test_cli_schedule_dry_run_prints_the_plan_for_the_declared_schedule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = FakeScheduleClient()
    assert schedule_command.cli_schedule(_args(), client=client) == 0
    out = capsys.readouterr().out
    assert "schedule drink-shops-weekly-retraining: would create" in out
    assert "  cron: (none) → TZ=Asia/Taipei 0 3 * * 1" in out
    assert client.mutations() == []


def test_cli_schedule_applies_a_bare_digest_with_its_repository(
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = FakeScheduleClient()
    args = _args(template_version=[DIGEST_A], repository="pipelines", dry_run=False)
    assert schedule_command.cli_schedule(args, client=client) == 0
    (schedule,) = client.schedules.values()
    assert schedule.spec.template_uri == URIS_A["weekly-retraining"]
    assert "schedule drink-shops-weekly-retraining: create" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"pipeline_root": "/tmp/root"}, "expected gs://BUCKET/PATH"),
        ({"template_version": [DIGEST_A]}, "give --repository too"),
        ({"template_version": [f"{HOST}/weekly-retraining/latest"]}, "not a version digest"),
        (
            {
                "template_version": [
                    f"{HOST.replace('drink-shops', 'elsewhere')}/weekly-retraining/{DIGEST_A}"
                ]
            },
            "is for project 'elsewhere'",
        ),
        ({"template_version": [f"{HOST}/train-only/{DIGEST_A}"]}, "which no schedule runs"),
    ],
)
def test_cli_schedule_rejects_bad_input_without_touching_vertex(
    overrides: dict[str, Any], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeScheduleClient()
    assert schedule_command.cli_schedule(_args(dry_run=False, **overrides), client=client) == 2
    assert message in capsys.readouterr().err
    assert client.calls == []


def test_compile_py_schedule_arguments_reach_the_handler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vertex_retrain.cli import main as cli

    args = cli.build_parser().parse_args(
        [
            "schedule",
            "--project=drink-shops",
            "--location=asia-east1",
            f"--service-account={TARGET.service_account}",
            f"--pipeline-root={TARGET.pipeline_root}",
            f"--template-version={DIGEST_A}",
            "--repository=pipelines",
            f"--schedules={WEEKLY_FILE}",
            "--dry-run",
        ]
    )
    assert cli._HANDLERS[args.command] == "vertex_retrain.cli.schedule_command:cli_schedule"
    client = FakeScheduleClient()
    assert schedule_command.cli_schedule(args, client=client) == 0
    assert f"template_uri: (none) → {URIS_A['weekly-retraining']}" in capsys.readouterr().out
    assert client.mutations() == []

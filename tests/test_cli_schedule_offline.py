"""`schedule --dry-run` works offline: declared schedules, next five runs, pinned templates;
with every flag and a reachable Vertex it also shows the diff; without credentials it says so."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_schedule_reconcile import (
    URIS_A,
    WEEKLY_FILE,
    WEEKLY_RETRAINING,
    FakeScheduleClient,
    _args,
)

from vertex_retrain.cli import schedule_command
from vertex_retrain.cli.schedule_offline import format_declared
from vertex_retrain.cli.schedule_source import load_schedules

REPO = Path(__file__).resolve().parent.parent


def test_schedule_dry_run_without_flags_or_credentials_shows_the_declared_schedules(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "CLOUDSDK_"))}
    result = subprocess.run(
        [sys.executable, str(REPO / "compile.py"), "schedule", "--schedules",
         str(WEEKLY_FILE), "--dry-run"],
        cwd=tmp_path, env={**env, "HOME": str(tmp_path), "NO_GCE_CHECK": "True"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "schedule drink-shops-weekly-retraining (active)"
    assert "  pipeline: weekly-retraining" in lines
    assert "  source: ../pipelines/scheduled.py:weekly" in lines
    assert any(line.startswith("  template: not pinned: pass --template-version") for line in lines)
    assert "compile.py upload" in result.stdout  # the command as it was invoked
    assert "  next 5 runs (Asia/Taipei):" in lines
    runs = [line for line in lines if line.startswith("    ")]
    assert len(runs) == 5 and all(run.endswith("Mon (UTC+0800)") for run in runs)
    assert lines[-1].startswith("diff against Vertex: not shown; it needs --project")
    assert result.stderr == ""


def test_format_declared_shows_the_pinned_template_and_runs_in_the_time_zone() -> None:
    now = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)  # Monday 04:00 in Taipei
    text = format_declared((WEEKLY_RETRAINING,), URIS_A, now=now)
    assert f"  template: {URIS_A['weekly-retraining']}" in text
    assert "    2026-12-07 03:00 Mon (UTC+0800)" in text.splitlines()[7]
    assert "  parameters: the template's defaults" in text


def test_schedule_dry_run_with_flags_but_unreachable_vertex_still_shows_the_declarations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Unreachable(FakeScheduleClient):
        def list(self, display_name: str) -> list:  # type: ignore[type-arg]
            raise PermissionError("no application default credentials")

    assert schedule_command.cli_schedule(_args(), client=Unreachable()) == 0
    out = capsys.readouterr().out
    assert f"  template: {URIS_A['weekly-retraining']}" in out
    assert "diff against Vertex: not shown; Vertex could not be reached (PermissionError" in out
    assert "gcloud auth application-default login" in out


def test_schedule_without_dry_run_needs_every_flag_and_a_reachable_vertex(
    capsys: pytest.CaptureFixture[str],
) -> None:
    missing = _args(dry_run=False, project=None, template_version=[])
    assert schedule_command.cli_schedule(missing, client=FakeScheduleClient()) == 2
    assert "needs --project, --template-version" in capsys.readouterr().err

    class Unreachable(FakeScheduleClient):
        def list(self, display_name: str) -> list:  # type: ignore[type-arg]
            raise ConnectionError("offline")

    assert schedule_command.cli_schedule(_args(dry_run=False), client=Unreachable()) == 1
    assert "Vertex could not be reached (ConnectionError: offline)" in capsys.readouterr().err


def _with_values(tmp_path: Path, values: str) -> str:
    """WEEKLY_FILE's schedule, declaring ``values`` as its parameter_values."""
    scheduled = REPO / "tests" / "data" / "pipelines" / "scheduled.py"
    path = tmp_path / "schedules.yaml"
    path.write_text(
        WEEKLY_FILE.read_text().replace("../pipelines/scheduled.py", str(scheduled))
        + f"  parameter_values: {values}\n"
    )
    return str(path)


@pytest.mark.parametrize(
    ("dry_run", "project"), [(True, None), (True, "drink-shops"), (False, "drink-shops")]
)
def test_schedule_refuses_unknown_and_out_of_range_parameter_values_before_vertex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool, project: str | None
) -> None:
    path = _with_values(tmp_path, "{accelerator_cont: 2, accelerator_count: 99}")
    client = FakeScheduleClient()
    args = _args(schedules=path, dry_run=dry_run, project=project)
    assert schedule_command.cli_schedule(args, client=client) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 2 and captured.out == ""
    prefix = "schedule: drink-shops-weekly-retraining: parameter_values: "
    assert lines[0].startswith(
        prefix + "unknown parameter 'accelerator_cont' (did you mean 'accelerator_count'?)"
    )
    assert lines[1].startswith(
        prefix + "parameter 'accelerator_count' must be from 0 to 16, got 99"
    )
    assert client.calls == []


@pytest.mark.parametrize("count", [0, 16])
def test_schedule_parameter_values_check_accepts_both_ends_of_a_range(
    tmp_path: Path, count: int
) -> None:
    # 0 and 16 fit the range of accelerator_count (the job of scheduled.py refuses them:
    # its T4 takes 1, 2 or 4, which the preflight checks; see the test below).
    path = _with_values(tmp_path, f"{{accelerator_count: {count}}}")
    ((declaration, _),) = schedule_command._scheduled_pipelines(load_schedules(path))
    assert declaration.parameter_values == {"accelerator_count": count}


@pytest.mark.parametrize(("count", "refused"), [(2, False), (3, True)])
@pytest.mark.parametrize("dry_run", [True, False])
def test_schedule_refuses_values_whose_job_vertex_refuses_dry_run_or_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool, count: int, refused: bool
) -> None:
    # The dry run needs no flag; the real schedule is refused before Vertex is called.
    path = _with_values(tmp_path, f"{{accelerator_count: {count}}}")
    client = FakeScheduleClient()
    args = _args(schedules=path, dry_run=dry_run, project=None if dry_run else "drink-shops")
    code = schedule_command.cli_schedule(args, client=client)
    captured = capsys.readouterr()
    if not refused:
        assert code == 0, captured.err
        assert captured.err == ""
        if dry_run:
            assert "  parameters: accelerator_count=2\n" in captured.out
        return
    assert code == 2 and captured.out == "" and client.calls == []
    lines = captured.err.splitlines()
    assert lines[0].startswith(
        "schedule: error: task train: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount "
        "= 3: NVIDIA_TESLA_T4 takes 1, 2 or 4 GPUs per machine"
    )
    assert lines[-1].startswith("schedule: refused by preflight (1 error(s)); nothing was sent")


@pytest.mark.parametrize(("values", "refused"), [("{}", True), ("{data_uri: 'gs://b/d'}", False)])
def test_schedule_refuses_a_parameter_without_default_left_unset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], values: str, refused: bool
) -> None:
    required = REPO / "tests" / "data" / "pipelines" / "scheduled_required.py"
    path = tmp_path / "schedules.yaml"
    path.write_text(
        WEEKLY_FILE.read_text().replace("../pipelines/scheduled.py", str(required))
        + f"  parameter_values: {values}\n"
    )
    code = schedule_command.cli_schedule(_args(schedules=str(path), project=None))
    err = capsys.readouterr().err
    assert code == (2 if refused else 0)
    if refused:
        (line,) = err.splitlines()
        assert "parameter 'data_uri' has no default and was not given" in line
        assert "e.g. parameter_values: {data_uri: " in line and "--param" not in line

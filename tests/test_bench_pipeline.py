"""bench_pipeline: log parsing, job accounting, user-code time, and the empty-task baseline."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_pipeline as bp  # noqa: E402
from bench.figures import check_figure  # noqa: E402
from bench.report_plots import check_plot  # noqa: E402

LOG = (
    "10:00:00.000 - INFO - Running pipeline: \x1b[95m'weekly-retraining'\x1b[0m\n"
    "10:00:00.100 - INFO - Executing task \x1b[96m'prepare-dataset'\x1b[0m\n"
    "    [KFP Executor 2026-01-01 10:00:00,200 INFO]: Executing task 'not-a-task-line'\n"
    "10:00:02.600 - INFO - Task \x1b[96m'prepare-dataset'\x1b[0m finished with status "
    "\x1b[92mSUCCESS\x1b[0m\n"
    "23:59:59.500 - INFO - Executing task 'train-custom-job'\n"
    "00:00:09.500 - INFO - Task 'train-custom-job' finished with status SUCCESS\n"
)


def test_task_seconds_reads_kfp_local_log_lines_across_midnight() -> None:
    assert bp.task_seconds(LOG) == {
        "prepare-dataset": pytest.approx(2.5),
        "train-custom-job": pytest.approx(10.0),
    }


def test_last_run_keeps_only_the_last_pipeline_in_a_shared_log() -> None:
    shared = "10:00:00.000 - INFO - Running pipeline: 'bench-noop'\n" + LOG
    assert bp.last_run(shared) == LOG
    assert bp.last_run("no run header") == "no run header"


def test_job_attempt_seconds_sums_attempts_per_job(tmp_path: Path) -> None:
    for job, walls in {"train-1": [3.0, 4.5], "trial-2": [2.0]}.items():
        folder = tmp_path / "jobs" / job
        folder.mkdir(parents=True)
        attempts = [{"wall_seconds": w} for w in walls]
        (folder / "state.json").write_text(json.dumps({"goodput": {"attempts": attempts}}))
    assert bp.job_attempt_seconds(tmp_path) == {"train-1": 7.5, "trial-2": 2.0}


def test_user_code_seconds_counts_jobs_not_their_tasks() -> None:
    tasks = {"prepare-dataset": 2.5, "train-custom-job": 12.0, "hp-tune": 30.0, "deploy-model": 0.1}
    user = bp.user_code_seconds(tasks, {"job-a": 9.0, "job-b": 20.0}, empty_task=0.2)
    assert user == {
        "prepare-dataset": pytest.approx(2.3),
        "train-custom-job": 0.0,
        "hp-tune": 0.0,
        "deploy-model": 0.0,  # never negative
        "jobs": 29.0,
    }


def test_overhead_parts_add_up_to_wall_minus_user_code() -> None:
    tasks = {"prepare-dataset": 2.0, "train-custom-job": 10.0, "evaluate-model": 3.0}
    # Training and evaluation both run their user code as local CustomJobs.
    jobs = {"train-job": 8.5, "evaluation-job": 2.0}
    user = bp.user_code_seconds(tasks, jobs, empty_task=0.25)
    parts = bp.overhead_parts(16.0, tasks, 10.5, 0.25)
    assert parts == {
        "fixed cost of every task": pytest.approx(0.25),
        "job tasks beyond their jobs' attempts": pytest.approx(2.5),
        "between tasks (kfp.local)": pytest.approx(1.0),
    }
    assert sum(parts.values()) == pytest.approx(16.0 - sum(user.values()))


def test_figures_judge_the_25_percent_target() -> None:
    tasks = {"prepare-dataset": 2.0, "train-custom-job": 10.0}
    user = {"prepare-dataset": 1.8, "train-custom-job": 0.0, "jobs": 9.0}
    missed = bp._figures(20.0, tasks, user, 0.2, quick=True)
    check_figure(missed)
    check_plot(missed["plot"])
    assert missed["met"] is False and "Missed" in missed["notes"]
    met = bp._figures(12.0, tasks, user, 0.2, quick=False)
    assert met["met"] is True and met["ratio"] == pytest.approx(12.0 / 10.8)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:You may be attemping:RuntimeWarning")
def test_noop_pipeline_runs_locally_and_is_timed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.noop_component import noop_pipeline

    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    wall, tasks = bp._run(noop_pipeline, {})
    assert set(tasks) == {"noop"}
    assert 0 < tasks["noop"] <= wall


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:You may be attemping:RuntimeWarning")
def test_bench_pipeline_run_quick_is_well_formed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "outer"))
    result = bp.run(quick=True)
    check_figure(result)
    check_plot(result["plot"])
    rows = {label: value for label, value, _ in result["rows"]}
    assert "task train-custom-job: wall" in rows and "task prepare-dataset: wall" in rows
    job_task_walls = sum(
        value
        for label, value in rows.items()
        if label.startswith("task ") and bp.JOB_TASKS.match(label[5:].removesuffix(": wall"))
    )
    assert 0 < rows["CustomJob attempts (user code)"] < job_task_walls
    assert 0 < result["baseline"]["value"] < result["measured"]["value"]  # user code < wall
    assert result["met"] == (result["ratio"] - 1 <= bp.TARGET_OVERHEAD)
    assert not (tmp_path / "outer").exists()  # the run used its own scratch root
    assert os.environ["VERTEX_LOCAL_ROOT"] == str(tmp_path / "outer")  # and restored ours

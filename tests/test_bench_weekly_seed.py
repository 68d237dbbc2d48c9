"""bench_weekly_seed: which step a process belongs to, per-step peaks, the verdicts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_weekly_seed as bw  # noqa: E402
from bench.figures import check_figure  # noqa: E402
from bench.report_plots import check_plot  # noqa: E402


def _executor_input(task: str) -> str:
    return json.dumps({"outputs": {"outputFile": f"/r/pipeline-root/run-1/{task}/out.json"}})


def test_task_of_reads_the_task_from_the_executor_input() -> None:
    argv = ["python", "-m", "kfp.dsl.executor_main", "--executor_input", _executor_input("x-y")]
    assert bw.task_of(argv) == "x-y"
    assert bw.task_of(["python", "compile.py", "run"]) is None
    assert bw.task_of(["p", "--executor_input", "not json"]) is None
    assert bw.task_of(["p", "--executor_input"]) is None
    assert bw.task_of(["p", "--executor_input", '{"outputs": []}']) is None


def test_owners_gives_descendants_to_their_task_and_the_rest_to_its_owner() -> None:
    table = {
        1: bw.Proc(0, 1, 10),
        100: bw.Proc(1, 5, 1_000),  # the run
        101: bw.Proc(100, 6, 2_000),  # a task process
        102: bw.Proc(101, 7, 30_000),  # its job's replica
        103: bw.Proc(102, 8, 400_000),  # the replica's own child
        104: bw.Proc(100, 9, 5),  # a helper process of the run that runs no task
        200: bw.Proc(1, 10, 7_000),  # an orphaned model server of the run
        300: bw.Proc(1, 11, 999_999),  # someone else's process
    }
    owners = bw.owners(table, 100, {101: "train-custom-job"}.get, lambda pid: pid == 200)
    assert owners == {
        100: bw.ORCHESTRATOR,
        104: bw.ORCHESTRATOR,
        101: "train-custom-job",
        102: "train-custom-job",
        103: "train-custom-job",
        200: bw.OUTSIDE,
    }


def test_owners_survives_a_parent_loop() -> None:
    table = {5: bw.Proc(6, 1, 1), 6: bw.Proc(5, 2, 1)}  # /proc read mid-change: no hang
    assert bw.owners(table, 100, lambda pid: None, lambda pid: False) == {}


def test_proportional_bytes_reads_this_process_and_none_for_a_gone_one() -> None:
    mine = bw.proportional_bytes(os.getpid())
    resident = bw.resident_bytes(os.getpid())
    assert mine is not None and resident is not None and 0 < mine <= resident
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert bw.proportional_bytes(int(gone.stdout)) is None


def test_run_sampler_finds_a_task_process_and_an_orphan_of_the_run(tmp_path: Path) -> None:
    root = tmp_path / "root"
    hold = "import sys, time; x = b'x' * 60_000_000; print('ready', flush=True); time.sleep(60)"
    task = subprocess.Popen(
        [sys.executable, "-c", hold, "--executor_input", _executor_input("prepare-dataset")],
        stdout=subprocess.PIPE,
        text=True,
    )
    # A process whose parent exits at once: it leaves this tree, but names the run's root.
    orphan_code = (
        "import subprocess, sys; "
        f"p = subprocess.Popen([sys.executable, '-c', {hold!r}], stdout=subprocess.PIPE, "
        "stderr=subprocess.DEVNULL, text=True); p.stdout.readline(); print(p.pid, flush=True)"
    )
    env = {**os.environ, "VERTEX_LOCAL_ROOT": str(root)}
    parent = subprocess.run(
        [sys.executable, "-c", orphan_code], env=env, capture_output=True, text=True, check=True
    )
    orphan = int(parent.stdout.split()[0])
    try:
        assert task.stdout is not None and task.stdout.readline().strip() == "ready"
        sampler = bw.RunSampler(os.getpid(), root)
        sampler.sample()
        assert sampler.peaks["prepare-dataset"] > 60_000_000
        assert sampler.peaks[bw.OUTSIDE] > 60_000_000
        assert sampler.peaks[bw.ORCHESTRATOR] > 0  # this process
        assert sampler.total_peak >= sum(sampler.peaks.values())
        # Shared pages count once in all: at most the resident sum, at least the held bytes.
        assert 120_000_000 < sampler.total_pss_peak <= sampler.total_peak
    finally:
        task.kill()
        task.wait()
        os.kill(orphan, signal.SIGKILL)


def _measured(wall: float, peak: int) -> bw.WeeklyRun:
    steps = {"check-data": 3.0, "prepare-dataset": 2.0, "train-custom-job": wall * 0.8}
    peaks = {"check-data": 4 * 10**8, "prepare-dataset": 2 * 10**8, "train-custom-job": peak}
    peaks[bw.ORCHESTRATOR] = 2 * 10**8
    return bw.WeeklyRun(
        wall, steps, peaks, peak + 2 * 10**8, {"metrics": {"baseline_ndcg_at_10": 0.2}}
    )


def test_weekly_figure_meets_both_targets_and_reports_every_step() -> None:
    result = bw.weekly_figure(_measured(1800.0, 3 * 10**9), bw.SEED_SCALE, 89_637_887, False)
    check_figure(result)
    check_plot(result["plot"])
    assert result["met"] is True
    assert result["baseline"]["value"] == pytest.approx(1440.0)  # the training step
    assert result["ratio"] == pytest.approx(1.25)
    labels = {row[0]: row[1] for row in result["rows"]}
    assert labels["step prepare-dataset: peak RSS"] == pytest.approx(0.2)
    assert labels["whole run: peak RSS (all processes)"] == pytest.approx(3.2)
    assert labels["model baseline_ndcg_at_10"] == pytest.approx(0.2)
    assert result["plot"]["categories"] == ["check-data", "prepare-dataset", "train-custom-job"]


def test_weekly_figure_says_a_step_too_short_to_sample_was_not_sampled() -> None:
    measured = _measured(1800.0, 3 * 10**9)
    measured.step_seconds["data-window"] = 0.05
    result = bw.weekly_figure(measured, bw.SEED_SCALE, 89_637_887, False)
    labels = {row[0]: row[1] for row in result["rows"]}
    assert labels["step data-window: peak RSS"] == "not sampled (ended within 0.25 s)"
    assert labels["step check-data: peak RSS"] == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("wall", "peak", "missed"),
    [(2701.0, 10**9, "Wall 45.0 min (MISSED"), (600.0, 6 * 10**9, "6.20 GB (MISSED")],
)
def test_weekly_figure_misses_either_target(wall: float, peak: int, missed: str) -> None:
    result = bw.weekly_figure(_measured(wall, peak), bw.SEED_SCALE, 1, False)
    assert result["met"] is False
    assert missed in result["notes"]
    assert "train-custom-job" in result["notes"]


def test_weekly_figure_quick_has_no_verdict() -> None:
    result = bw.weekly_figure(_measured(60.0, 10**8), bw.QUICK_SCALE, 1, True)
    assert result["target"] is None and result["met"] is None


def test_link_dataset_links_the_files_and_leaves_caches_behind(tmp_path: Path) -> None:
    source, target = tmp_path / "data", tmp_path / "root" / "transactions"
    (source / "transactions").mkdir(parents=True)
    (source / "_encoded" / "k").mkdir(parents=True)
    (source / "transactions" / "week-0000.parquet").write_bytes(b"rows")
    (source / "drinks.parquet").write_bytes(b"drinks")
    (source / "_encoded" / "k" / "meta.json").write_text("{}")
    bw.link_dataset(source, target)
    linked = target / "transactions" / "week-0000.parquet"
    assert linked.read_bytes() == b"rows"
    assert linked.stat().st_ino == (source / "transactions" / "week-0000.parquet").stat().st_ino
    assert (target / "drinks.parquet").is_file()
    assert not (target / "_encoded").exists()


def test_report_gives_the_seed_scale_run_a_longer_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bench import report

    limits: dict[str, float] = {}

    def isolated(module: str, quick: bool, timeout: float) -> dict[str, object]:
        limits[module] = timeout
        return {"module": module, "seconds": 0.0, "error": "not run"}

    monkeypatch.setattr(report, "run_isolated", isolated)
    modules = ["bench_cli", "bench_weekly_seed"]
    report.build_report(modules, quick=False, doc=tmp_path / "b.md", img_dir=tmp_path / "img")
    assert limits == {"bench_cli": 900.0, "bench_weekly_seed": 7200.0}
    assert bw.TIMEOUT_SECONDS["full"] < limits["bench_weekly_seed"]  # its own error comes first

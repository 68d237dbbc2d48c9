"""The weekly pipeline at seed scale, locally, one epoch: wall time and peak RSS per step.

`python -m bench.bench_weekly_seed [--quick]`.

`compile.py run examples/drink_shops/pipelines.py:weekly --local --no-cache --json` with the
trainer's source from this clone and `--epochs 1 --batch_size 512` runs as a process on a
fresh local root whose `gs://drink-shops-ml/transactions` holds the seed-scale
dataset (500,000 members x 2,000 stores x 156 weeks, about 89.6 million rows; generated once
into the benchmark cache by `bench.measure.ensure_dataset`, then hard-linked into the root).
Everything is cold, as in every new week: no task cache, no pre-encoded dataset.

While it runs, every process of the run is sampled from /proc every 0.25 s: the command,
its descendants, and any process outside that tree whose environment names the run's local
root. Each process counts toward the step whose kfp.local task process it descends from (the
task is read from the `--executor_input` that process was started with); the command itself
is the orchestrator. A step's peak RSS is the largest sum over its processes in one sample;
the run's peak is the largest sum over all of them (resident sets are summed, so pages two
processes share count twice: an upper bound of the memory in use, a lower bound of the true
peak by what a 0.25 s burst allocates). The run's peak PSS is the largest sum of the same
processes' proportional set sizes (/proc/PID/smaps_rollup: a shared page split among its
sharers, so counted once in all): the memory the run holds. Step wall times come from
kfp.local's log (`bench.bench_pipeline.task_seconds`).

The baseline is the training step (`train-custom-job`), measured in the same run: the ratio
says how much the whole run costs over the training it exists for. Targets (issue 15, item 4):
the whole run <= 45 min and <= 6 GB (10^9 bytes) peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bench_pipeline import last_run, task_seconds
from bench.figures import figure, print_figure
from bench.measure import (
    REPO,
    SEED_SCALE,
    cache_root,
    ensure_dataset,
    exit_on_sigterm,
    parent_and_start,
    python_env,
    resident_bytes,
    stop_command,
)

TARGET_SECONDS = 45 * 60
TARGET_PEAK_BYTES = 6 * 10**9
QUICK_SCALE = {"members": 5_000, "stores": 200, "weeks": 26, "seed": 0}
TIMEOUT_SECONDS = {"quick": 600.0, "full": 6600.0}  # under bench.report's limits for it
TRAINING_TASK = "train-custom-job"
ORCHESTRATOR = "orchestrator (compile.py run)"
OUTSIDE = "outside the run's tree (model servers)"
TRANSACTIONS = Path("gcs", "drink-shops-ml", "transactions")  # the pipeline's default URI
PIPELINE = "examples/drink_shops/pipelines.py:weekly"
"""The drink shops' configured weekly template (the library's own has no team's defaults)."""
SOURCE = REPO / "examples" / "drink_shops" / "trainer"
"""The trainer's source as it is in this clone (a team would upload it to its bucket)."""
METRICS = ("candidate_ndcg_at_10", "candidate_usual_ndcg_at_10", "baseline_ndcg_at_10")
"""Headline figures shown with the run: the model, "reorder your usual", popularity."""
_SAMPLE_S = 0.25
_GB = 1e9


@dataclass(frozen=True)
class Proc:
    """One process as /proc shows it."""

    ppid: int
    start: int  # clock ticks after boot: with the pid, names the process uniquely
    rss: int  # bytes


def read_processes() -> dict[int, Proc]:
    """Every process's parent, start time and resident set, from /proc (vanished ones skipped)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat, resident = parent_and_start(entry.name), resident_bytes(entry.name)
        if stat is not None and resident is not None:
            table[int(entry.name)] = Proc(stat[0], stat[1], resident)
    return table


def task_of(argv: list[str]) -> str | None:
    """The kfp.local task a process runs: the folder of the executor output file named in the
    `--executor_input` it was started with (`<pipeline root>/<run>/<task>/...`); else None."""
    try:
        document = json.loads(argv[argv.index("--executor_input") + 1])
        return Path(document["outputs"]["outputFile"]).parent.name or None
    except (ValueError, IndexError, KeyError, TypeError):
        return None


def proportional_bytes(pid: int) -> int | None:
    """A process's proportional set size (its private pages plus its share of each page it
    shares) in bytes, from /proc/PID/smaps_rollup; None when it is gone or unreadable."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        return None
    return None


def owners(
    table: Mapping[int, Proc],
    run_pid: int,
    task_of_pid: Callable[[int], str | None],
    outside: Callable[[int], bool],
) -> dict[int, str]:
    """The owner of each of the run's processes in one sample of the process table.

    A process below a direct child of `run_pid` belongs to that child's task (or to the
    orchestrator when the child runs no task); `run_pid` is the orchestrator; a process
    outside the tree counts (as :data:`OUTSIDE`) only when `outside` says it is the run's.
    """
    found: dict[int, str] = {}
    for pid in table:
        owner = ORCHESTRATOR if pid == run_pid else None
        current, seen = pid, 0
        while owner is None and current in table and seen < 256:
            parent = table[current].ppid
            if parent == run_pid:
                owner = task_of_pid(current) or ORCHESTRATOR
            current, seen = parent, seen + 1
        if owner is None and outside(pid):
            owner = OUTSIDE
        if owner is not None:
            found[pid] = owner
    return found


@dataclass
class RunSampler:
    """Peak resident bytes per owner (step, orchestrator, outside) of one local run."""

    run_pid: int
    local_root: Path
    peaks: dict[str, int] = field(default_factory=dict)
    total_peak: int = 0
    total_pss_peak: int = 0
    """The largest sum of proportional set sizes: shared pages counted once in all."""
    _table: dict[int, Proc] = field(default_factory=dict, repr=False)
    _tasks: dict[tuple[int, int], str | None] = field(default_factory=dict, repr=False)
    _marked: dict[tuple[int, int], bool] = field(default_factory=dict, repr=False)

    def sample(self) -> None:
        """Reads /proc once and raises the peaks."""
        self._table = read_processes()
        owned = owners(self._table, self.run_pid, self._task, self._outside)
        sums: dict[str, int] = {}
        for pid, owner in owned.items():
            sums[owner] = sums.get(owner, 0) + self._table[pid].rss
        for owner, resident in sums.items():
            self.peaks[owner] = max(self.peaks.get(owner, 0), resident)
        self.total_peak = max(self.total_peak, sum(sums.values()))
        proportional = sum(proportional_bytes(pid) or 0 for pid in owned)
        self.total_pss_peak = max(self.total_pss_peak, proportional)

    def _key(self, pid: int) -> tuple[int, int]:
        return pid, self._table[pid].start

    def _task(self, pid: int) -> str | None:
        key = self._key(pid)
        if key not in self._tasks:  # a process's arguments do not change: read them once
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                return None
            self._tasks[key] = task_of(argv.split("\0"))
        return self._tasks[key]

    def _outside(self, pid: int) -> bool:
        key = self._key(pid)
        if key not in self._marked:
            marker = f"VERTEX_LOCAL_ROOT={self.local_root}".encode()
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                return False
            self._marked[key] = marker in environ
        return self._marked[key]


@dataclass(frozen=True)
class WeeklyRun:
    """What one measured run produced."""

    wall_seconds: float
    step_seconds: dict[str, float]
    peaks: dict[str, int]
    total_peak: int
    summary: dict[str, Any]
    total_pss_peak: int = 0
    """The run's peak in proportional set sizes (shared pages once): 0 where not sampled."""


def link_dataset(source: Path, target: Path) -> None:
    """Hard-links the dataset's files into `target` (a copy where links cannot cross devices);
    caches beside the source (folders starting with `_`) stay behind, so the run is cold."""
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if path.is_dir() or any(part.startswith("_") for part in rel.parts):
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target / rel)
        except OSError:
            shutil.copy2(path, target / rel)


def run_weekly(dataset: Path, scratch: Path, *, epochs: int, timeout: float) -> WeeklyRun:
    """Runs the weekly pipeline on `dataset` under a local root in `scratch`, sampling it.

    Raises:
        RuntimeError: The run failed or ran past `timeout` (it is stopped, tasks included).
    """
    root = scratch / "root"
    link_dataset(dataset, root / TRANSACTIONS)
    return run_in_root(root, scratch, epochs=epochs, timeout=timeout)


def run_in_root(root: Path, scratch: Path, *, epochs: int, timeout: float) -> WeeklyRun:
    """Runs the weekly pipeline once under the local root `root` (whose transactions are in
    place), sampling it; its stdout and stderr go to `scratch`. A root that holds an earlier
    run's champion gives the week that champion, as a real next week would have it.

    Raises:
        RuntimeError: The run failed or ran past `timeout` (it is stopped, tasks included).
    """
    scratch.mkdir(parents=True, exist_ok=True)
    training_args = json.dumps(["--epochs", str(epochs), "--batch_size", "512"])
    argv = [sys.executable, "compile.py", "run", PIPELINE, "--local", "--no-cache", "--json",
            "--param", f"source_uri={SOURCE}",
            "--param", f"training_args={training_args}"]  # fmt: skip
    env = {**python_env(), "VERTEX_LOCAL_ROOT": str(root)}
    with (scratch / "stdout").open("wb") as out, (scratch / "stderr").open("wb") as err:
        began = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=err)
        sampler = RunSampler(proc.pid, root)
        try:
            while proc.poll() is None:
                if time.perf_counter() - began > timeout:
                    raise RuntimeError(f"the weekly run ran past {timeout:.0f} s")
                sampler.sample()
                time.sleep(_SAMPLE_S)
        finally:
            stop_command(proc)  # past the timeout, or stopped: the command stops its tasks
        wall = time.perf_counter() - began
    stdout = (scratch / "stdout").read_text(errors="replace")
    if proc.returncode != 0:
        stderr = (scratch / "stderr").read_text(errors="replace")
        raise RuntimeError(f"the weekly run exited {proc.returncode}:\n{stderr[-3000:]}")
    logs = sorted((root / "logs").glob("run-*.log"))
    steps = task_seconds(last_run(logs[-1].read_text(encoding="utf-8"))) if logs else {}
    summary = json.loads(stdout) if stdout.strip().startswith("{") else {}
    return WeeklyRun(
        wall, steps, dict(sampler.peaks), sampler.total_peak, summary, sampler.total_pss_peak
    )


def run(quick: bool) -> dict[str, Any]:
    """Run the weekly pipeline once and return the figures (also printed).

    Args:
        quick: 5,000 members x 200 stores x 26 weeks instead of the seed scale; no targets.
    """
    scale = QUICK_SCALE if quick else SEED_SCALE
    dataset, _ = ensure_dataset(**scale)
    rows = json.loads((dataset / "generation.json").read_text(encoding="utf-8"))["rows"]
    cache_root().mkdir(parents=True, exist_ok=True)
    # Beside the cached dataset, so the hard links stay on one file system.
    with tempfile.TemporaryDirectory(prefix="weekly-seed-", dir=cache_root()) as tmp:
        measured = run_weekly(
            dataset, Path(tmp), epochs=1, timeout=TIMEOUT_SECONDS["quick" if quick else "full"]
        )
    return weekly_figure(measured, scale, rows, quick)


def weekly_figure(
    measured: WeeklyRun, scale: Mapping[str, int], rows: int, quick: bool
) -> dict[str, Any]:
    """The result in the report's shape: per-step rows, the verdicts, what drives them."""
    steps = measured.step_seconds
    names = list(steps) + sorted(set(measured.peaks) - set(steps) - {ORCHESTRATOR, OUTSIDE})
    train = steps.get(TRAINING_TASK, 0.0)
    time_met = measured.wall_seconds <= TARGET_SECONDS
    memory_met = measured.total_peak <= TARGET_PEAK_BYTES
    slowest = max(steps, key=lambda n: steps[n], default="none")
    largest = max(names, key=lambda n: measured.peaks.get(n, 0), default="none")
    scale_text = (
        f"{scale['members']:,} members x {scale['stores']:,} stores x {scale['weeks']} weeks "
        f"({rows:,} rows)"
    )
    notes = (
        f"{'Quick pass, no targets: ' if quick else ''}{scale_text}, 1 epoch, cold (no task "
        f"cache, no pre-encoded data). Wall {measured.wall_seconds / 60:.1f} min "
        f"({'met' if time_met else 'MISSED'}: <= {TARGET_SECONDS // 60} min); whole-run peak "
        f"RSS {measured.total_peak / _GB:.2f} GB ({'met' if memory_met else 'MISSED'}: "
        f"<= {TARGET_PEAK_BYTES / _GB:.0f} GB). The slowest step is {slowest} "
        f"({steps.get(slowest, 0.0) / 60:.1f} min), the largest {largest} "
        f"({measured.peaks.get(largest, 0) / _GB:.2f} GB). Steps' wall times do not add up to "
        "the run's: the command also prepares the run (trainer wheel, source) and kfp.local "
        "starts each task."
    )
    table: list[tuple[str, float | int | str, str]] = [
        ("whole run: wall", measured.wall_seconds, "s"),
        ("whole run: peak RSS (all processes)", measured.total_peak / _GB, "GB"),
        (
            "whole run: peak PSS (all processes, shared pages once)",
            measured.total_pss_peak / _GB,
            "GB",
        ),
        (f"{ORCHESTRATOR}: peak RSS", measured.peaks.get(ORCHESTRATOR, 0) / _GB, "GB"),
        (f"{OUTSIDE}: peak RSS", measured.peaks.get(OUTSIDE, 0) / _GB, "GB"),
    ]
    for name in names:
        peak = measured.peaks.get(name, 0)
        table += [
            (f"step {name}: wall", steps.get(name, 0.0), "s"),
            # A step that ends between two samples is never seen: say so rather than "0 GB".
            (f"step {name}: peak RSS", peak / _GB, "GB")
            if peak
            else (f"step {name}: peak RSS", f"not sampled (ended within {_SAMPLE_S} s)", ""),
        ]
    metrics = measured.summary.get("metrics") or {}
    table += [(f"model {k}", float(metrics[k]), "") for k in METRICS if _number(metrics.get(k))]
    return figure(
        name="Weekly pipeline at seed scale, locally, one epoch",
        what=(
            "`compile.py run examples/drink_shops/pipelines.py:weekly --local --no-cache` "
            "(1 epoch) on "
            f"{scale_text}: the whole run's wall time and, per step, wall time (kfp.local's "
            "log) and peak RSS of the step's processes (sampled from /proc every 0.25 s); "
            "the baseline is the training step in the same run (`bench/bench_weekly_seed.py`)."
        ),
        baseline=("training step (train-custom-job) wall time", train),
        measured=("whole run wall time", measured.wall_seconds),
        unit="s",
        ratio_meaning="whole run / training step",
        target=None if quick else "<= 45 min and <= 6 GB peak RSS, end to end",
        met=None if quick else time_met and memory_met,
        notes=notes,
        rows=table,
        plot={
            "kind": "bar",
            "categories": names,
            "series": {
                "wall time (min)": [steps.get(n, 0.0) / 60 for n in names],
                "peak RSS (GB)": [measured.peaks.get(n, 0) / _GB for n in names],
            },
            "ylabel": "minutes; GB",
        },
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def main() -> None:
    """CLI: print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_weekly_seed", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="5,000 members, 26 weeks")
    print_figure(run(parser.parse_args().quick))


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    main()

"""The weekly pipeline at seed scale, warm-started: a week after a champion, end to end.

`python -m bench.bench_weekly_warm [--quick]`.

Two weeks in a row on one fresh local root, as a team's first two weeks would run:
the drink shops' weekly pipeline run as `bench.bench_weekly_seed` runs it (`--local
--no-cache --json`, one epoch, batch 512) on the seed-scale dataset (500,000 members x 2,000
stores x 156 weeks; `bench.measure.ensure_dataset`),
which trains fully and makes the first champion; then the next week is appended to the root's
transactions (`trainer.data.append_week`; the cached dataset stays as it was: its files are
hard links and `generation.json` is replaced, not written in place) and the same command runs
again. The weekly template warm-starts where a champion exists and the trainer declares it
(the drink shops' trainer does), so the second week trains from the champion on the newest
weeks plus a replay share. Both runs are sampled as `bench.bench_weekly_seed` samples one
(wall time, peak RSS of every process of the run, per step); the second run must say it
warm-started (its summary's `training_kind`), else the benchmark fails rather than report a
full week as a warm one.

The baseline is the first (full) week measured in the same run. Targets (issue 24): the
warm-started week end to end in at most 6 minutes with at most 4 GB (10^9 bytes) peak RSS.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bench.bench_weekly_seed import (
    QUICK_SCALE,
    TRANSACTIONS,
    WeeklyRun,
    link_dataset,
    run_in_root,
)
from bench.figures import figure, print_figure
from bench.measure import SEED_SCALE, cache_root, ensure_dataset, exit_on_sigterm

TARGET_SECONDS = 6 * 60
TARGET_PEAK_BYTES = 4 * 10**9
TIMEOUT_SECONDS = {"quick": 600.0, "full": 4800.0}  # per run; under bench.report's limit
TRAINING_TASK = "train-custom-job"
_GB = 1e9


def training_kind(summary: dict[str, Any]) -> str:
    """The kind of training a run's `--json` summary says it ran (``""`` when it says none)."""
    facts = summary.get("training_kind")
    return str(facts.get("kind", "")) if isinstance(facts, dict) else ""


def run(quick: bool) -> dict[str, Any]:
    """Run the two weeks and return the figures (also printed).

    Args:
        quick: 5,000 members x 200 stores x 26 weeks instead of the seed scale; no targets.

    Raises:
        RuntimeError: A run failed, or the second week did not warm-start.
    """
    scale = QUICK_SCALE if quick else SEED_SCALE
    dataset, _ = ensure_dataset(**scale)
    timeout = TIMEOUT_SECONDS["quick" if quick else "full"]
    cache_root().mkdir(parents=True, exist_ok=True)
    # Beside the cached dataset, so the hard links stay on one file system.
    with tempfile.TemporaryDirectory(prefix="weekly-warm-", dir=cache_root()) as tmp:
        root = Path(tmp) / "root"
        link_dataset(dataset, root / TRANSACTIONS)
        full = run_in_root(root, Path(tmp) / "week-1", epochs=1, timeout=timeout)
        from trainer.data import append_week  # the example's generator: bench only

        append_week(root / TRANSACTIONS)
        warm = run_in_root(root, Path(tmp) / "week-2", epochs=1, timeout=timeout)
    return warm_figure(full, warm, scale, quick)


def warm_figure(
    full: WeeklyRun, warm: WeeklyRun, scale: dict[str, int], quick: bool
) -> dict[str, Any]:
    """The result in the report's shape, with the verdicts.

    Raises:
        RuntimeError: The second week's summary does not say it warm-started.
    """
    kinds = training_kind(full.summary), training_kind(warm.summary)
    if kinds[1] != "warm":
        reason = (warm.summary.get("training_kind") or {}).get("reason", "no reason given")
        raise RuntimeError(
            f"the second week trained {kinds[1] or 'with no training kind'} ({reason}), "
            "not warm-started from the first week's champion"
        )
    time_met = warm.wall_seconds <= TARGET_SECONDS
    memory_met = warm.total_peak <= TARGET_PEAK_BYTES
    scale_text = (
        f"{scale['members']:,} members x {scale['stores']:,} stores x {scale['weeks']} weeks"
    )
    rows: list[tuple[str, float | int | str, str]] = [
        ("week 1 (full): training kind", kinds[0], ""),
        ("week 1 (full): peak RSS", full.total_peak / _GB, "GB"),
        ("week 1 (full): training step wall", full.step_seconds.get(TRAINING_TASK, 0.0), "s"),
        ("week 2 (warm): peak RSS", warm.total_peak / _GB, "GB"),
        ("week 2 (warm): peak PSS (shared pages once)", warm.total_pss_peak / _GB, "GB"),
        ("week 2 (warm): training step wall", warm.step_seconds.get(TRAINING_TASK, 0.0), "s"),
        ("week 2 (warm): why", str(warm.summary["training_kind"].get("reason", "")), ""),
    ]
    rows += [
        (f"week 2 step {name}: wall", seconds, "s") for name, seconds in warm.step_seconds.items()
    ]
    # Which processes make the peak: each step's own largest sum, and the orchestrator's.
    rows += [
        (f"week 2 {name}: peak RSS", warm.peaks[name] / _GB, "GB")
        for name in [*warm.step_seconds, *sorted(set(warm.peaks) - set(warm.step_seconds))]
        if warm.peaks.get(name)
    ]
    notes = (
        f"{'Quick pass, no targets: ' if quick else ''}{scale_text}, 1 epoch, no task cache. "
        f"The warm week ran end to end in {warm.wall_seconds / 60:.1f} min "
        f"({'met' if time_met else 'MISSED'}: <= {TARGET_SECONDS // 60} min) with "
        f"{warm.total_peak / _GB:.2f} GB peak RSS ({'met' if memory_met else 'MISSED'}: "
        f"<= {TARGET_PEAK_BYTES / _GB:.0f} GB); the full week before it took "
        f"{full.wall_seconds / 60:.1f} min. Peak RSS sums every process of the run (an upper "
        "bound where processes share pages)."
    )
    return figure(
        name="Weekly pipeline at seed scale, warm-started, locally",
        what=(
            f"Two weekly runs on one local root ({scale_text}, `--no-cache`, 1 epoch): "
            "the first trains fully and makes the champion, a week is appended, the second "
            "warm-starts from it; wall time and peak RSS of each run, sampled as the cold "
            "seed-scale run is (`bench/bench_weekly_warm.py`)."
        ),
        baseline=("full week (the first) wall time", full.wall_seconds),
        measured=("warm-started week wall time", warm.wall_seconds),
        unit="s",
        ratio_meaning="warm week / full week, end to end",
        target=None if quick else "warm week <= 6 min and <= 4 GB peak RSS, end to end",
        met=None if quick else time_met and memory_met,
        notes=notes,
        rows=rows,
        plot={
            "kind": "bar",
            "categories": ["full week", "warm week"],
            "series": {
                "wall time (min)": [full.wall_seconds / 60, warm.wall_seconds / 60],
                "peak RSS (GB)": [full.total_peak / _GB, warm.total_peak / _GB],
            },
            "ylabel": "minutes; GB",
        },
    )


def main() -> None:
    """CLI: print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_weekly_warm", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="5,000 members, 26 weeks")
    print_figure(run(parser.parse_args().quick))


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    main()

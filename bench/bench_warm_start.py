"""Warm start against full retrain over consecutive weeks, over seeds.

`python -m bench.bench_warm_start [--members N] [--stores N] [--weeks N] [--next-weeks 4]
[--seeds 0,1,2]`.

For each seed (a world of its own, drift on, the world's defaults): generate `--weeks` weeks
and train the first champion fully (`python -m trainer.task --epochs 1`, batch 512, one
thread, the seed-scale weekly pipeline's setting). Then `--next-weeks` times: append a week
(`trainer.data append`), split (train, selection, gate: the newest week), and train the week
both ways on the same split: a full retrain, and a warm start from the previous week's warm
model (`--warm_start_from`, the trainer's defaults: the newest 2 weeks plus a 5% replay, one
epoch), the line a run of warm weeks would follow. Each model is scored on the week's gate
period by `python -m trainer.evaluate` (NDCG@10). Measured per training process: CPU time
(the time verdict's: one thread, so far less stretched by a shared machine than its wall
time, though not untouched: seed 0's first champion took 1,942 s of CPU at load 2.2-2.6 and
2,388 s with five busy processes on the 2 cores, 3 December 2026; each week's rows give the
load at the start of each kind), wall time, peak resident memory (the process tree,
sampled), and the training loop's own seconds (steps x batch / samples per second, from
metrics.json). The encoded dataset of each week is built before either training, so neither
pays for it.

A seed at the seeds' scale takes hours of one core (about 3), more than one session of the
2-core machine for 3 seeds, so each seed trains its warm line first (a chain: each week needs
the model of the week before, which lives in the bench cache) and its full retrains after
(independent: each needs only that week's data, generated again by any run). Each finished
step's figures (the first champion, each week's full and warm training with its score) are
kept, at the seeds' scale in the repository (`bench/results/warm-start/<scale>-seed<N>-<trainer
digest>/`, so a commit carries them to the next machine; at other scales in the bench cache),
and a later run of the same trainer code resumes at
the step that was stopped. Seeds can run as separate processes (`--seeds 0`, `--seeds 1`) at
once. `--kept` trains nothing: it prints the figure over the weeks kept for every seed so far.

Targets (issue 24, at the seeds' scale): a warm week's training takes at most a fifth of a
full retrain's, and its gate NDCG@10 is within 0.005 of the full retrain's in every week
(mean of the seeds). At another scale the verdict says only whether that scale shows it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.figures import figure, print_figure
from bench.measure import (
    SEED_SCALE,
    ensure_dataset,
    exit_on_sigterm,
    python_env,
    run_measured,
)
from bench.warm_start_kept import (
    RESULTS_ROOT,
    at_seed_scale,
    common_weeks,
    kept_seed,
    kept_step,
    state_folder,
    steps_folder,
)

REDUCED_SCALE = {"members": 20_000, "stores": 80, "weeks": 104}
"""What `make bench` runs (`run(quick=False)`): the seeds' scale (`--seed-scale`) would take
hours on 2 cores (nine epochs at 500,000 members per seed)."""
QUICK_SCALE = {"members": 3_000, "stores": 30, "weeks": 52}
SEEDS = (0, 1, 2)
NEXT_WEEKS = 4
MAX_TIME_RATIO = 0.2
MAX_NDCG_GAP = 0.005
TARGET = (
    f"warm training CPU time <= {MAX_TIME_RATIO:g} x full retrain's, and |warm - full| gate "
    f"NDCG@10 <= {MAX_NDCG_GAP} in every week (mean over seeds)"
)
TRAIN_FLAGS = ["--epochs", "1", "--batch_size", "512", "--num_threads", "1",
               "--log_every_steps", "100000", "--checkpoint_every_seconds", "0"]  # fmt: skip


def _prime(manifest: Path, cache: Path) -> None:
    """Encodes the week's rows once, before either training reads them."""
    from trainer import encoded
    from trainer.features import read_catalogue
    from trainer.split import load_manifest

    loaded = load_manifest(str(manifest))
    encoded.load_or_build(loaded, read_catalogue(loaded), cache)


def _train(manifest: Path, out: Path, cache: Path, *extra: str) -> dict[str, Any]:
    if out.exists():  # a training stopped part-way in an earlier run: start it afresh
        shutil.rmtree(out)
    load = os.getloadavg()[0]
    measured = run_measured(
        [sys.executable, "-m", "trainer.task", "--data", str(manifest), "--output_dir", str(out),
         "--cache_dir", str(cache), *TRAIN_FLAGS, *extra],
        env=python_env(), timeout=4 * 3600,
    )  # fmt: skip
    training = json.loads((out / "model" / "metrics.json").read_text())["training"]
    loop = training["steps"] * training["global_batch"] / max(training["samples_per_second"], 1e-9)
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_at_start": load,
        "wall_seconds": measured.wall_seconds,
        "cpu_seconds": measured.cpu_seconds,
        "loop_seconds": loop,
        "peak_rss_gib": measured.peak_rss_bytes / 2**30,
        "trained_rows": training.get("trained_rows", training["train_rows"]),
        "train_rows": training["train_rows"],
        "warm_start": training.get("warm_start", {}),
    }


def _gate_ndcg(model: Path, manifest: Path, out: Path) -> float:
    run_measured(
        [sys.executable, "-m", "trainer.evaluate", "--candidate-model-dir", str(model),
         "--data", str(manifest), "--metrics-output", str(out), "--num-threads", "1"],
        env=python_env(), timeout=3600,
    )  # fmt: skip
    return float(json.loads(out.read_text())["candidate"]["ndcg_at_10"])


def _trained_and_scored(
    manifest: Path, out: Path, cache: Path, *extra: str
) -> Callable[[], dict[str, Any]]:
    def step() -> dict[str, Any]:
        result = _train(manifest, out, cache, *extra)
        result["ndcg_at_10"] = _gate_ndcg(out / "model", manifest, out / "gate.json")
        return result

    return step


def _world(scale: dict[str, int], seed: int, state: Path) -> Path:
    """This run's copy of the generated world (weeks are appended to it, not to the cache)."""
    data = state / "data"
    if not (data / "generation.json").is_file():
        base, _ = ensure_dataset(**scale, seed=seed)
        partial = state / "data.partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(base, partial)
        shutil.rmtree(data, ignore_errors=True)
        partial.rename(data)
    return data


def _week_split(data: Path, scale: dict[str, int], week: int, manifest: Path) -> None:
    """Appends weeks up to week +`week` (those a stopped run did not) and splits the data as
    of that week. Appending adds a file per week and changes no other, so the split of an
    earlier week stays valid after later weeks are appended.

    Raises:
        RuntimeError: The data is already past week +`week` and that week's split is gone
            (it cannot be made again from this copy).
    """
    from trainer.data import append_week
    from trainer.split import make_time_split

    if manifest.is_file():
        return
    appended = (
        len(json.loads((data / "generation.json").read_text("utf-8"))["weeks"]) - scale["weeks"]
    )
    if appended > week:
        raise RuntimeError(
            f"{data} already holds week +{appended} but the split as of week +{week} "
            f"({manifest}) is gone; remove {data.parent} to start the world afresh"
        )
    for _ in range(week - appended):
        append_week(data)
    make_time_split(str(data), str(manifest.parent))


def _has_model(out: Path) -> bool:
    """Whether a finished training's model is under `out`."""
    return (out / "model" / "metrics.json").is_file()


def run_seed(scale: dict[str, int], seed: int, next_weeks: int) -> dict[str, Any]:
    """One world: the first champion and the warm line (each week warm-started from the week
    before), then each week's full retrain.

    The warm line goes first because it is a chain: a warm week needs the previous week's
    model, which only this machine's bench cache holds. The full retrains are independent:
    each needs only the week's data, which any run can generate again. Each finished step's
    figures are kept under :func:`steps_folder` (in the repository, so a commit carries them
    to another machine or session) and reused by a later run of the same trainer code; when
    the warm line is unfinished and the model it would continue from is gone, the line is
    trained again from the first champion and its kept figures are replaced. The world's
    data, encoded rows and models are removed once every step of the seed is kept.
    """
    state, steps = state_folder(scale, seed), steps_folder(scale, seed)
    state.mkdir(parents=True, exist_ok=True)
    cache = state / "encoded"
    weeks = range(1, next_weeks + 1)

    def split(week: int) -> Path:
        manifest = state / f"week{week}" / "manifest.json"
        _week_split(_world(scale, seed, state), scale, week, manifest)
        _prime(manifest, cache)
        return manifest

    def first_step() -> dict[str, Any]:
        return _train(split(0), state / "full0", cache)

    def before(week: int) -> Path:  # the training a warm week continues
        return state / ("full0" if week == 1 else f"warm{week - 1}")

    warm_kept = {week: steps / f"week{week}-warm.json" for week in weeks}
    missing = [week for week in weeks if not warm_kept[week].is_file()]
    if missing:
        start = missing[0]
        if not _has_model(before(start)):  # the chain's last model is gone: start again
            for path in [steps / "first.json", *warm_kept.values()]:
                path.unlink(missing_ok=True)
            start = 1
        kept_step(steps / "first.json", first_step)
        for week in range(start, next_weeks + 1):
            warm_from = f"--warm_start_from={before(week) / 'model'}"
            out = state / f"warm{week}"
            kept_step(warm_kept[week], _trained_and_scored(split(week), out, cache, warm_from))
    for week in weeks:
        kept = steps / f"week{week}-full.json"
        if not kept.is_file():
            kept_step(kept, _trained_and_scored(split(week), state / f"full{week}", cache))
    shutil.rmtree(state, ignore_errors=True)
    return kept_seed(scale, seed, next_weeks)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per week, the mean over seeds of each kind's times, memory and gate NDCG@10, and the
    verdicts (pure: what the figure and the tests read)."""
    per_week = []
    for index in range(len(results[0]["weeks"])):
        weeks = [r["weeks"][index] for r in results]
        row: dict[str, Any] = {"week": weeks[0]["week"]}
        for kind in ("full", "warm"):
            for key in ("wall_seconds", "cpu_seconds", "loop_seconds", "peak_rss_gib",
                        "ndcg_at_10", "load_at_start"):  # fmt: skip
                row[f"{kind}_{key}"] = _mean([w[kind][key] for w in weeks])
        row["wall_ratio"] = row["warm_wall_seconds"] / row["full_wall_seconds"]
        row["cpu_ratio"] = row["warm_cpu_seconds"] / row["full_cpu_seconds"]
        row["loop_ratio"] = row["warm_loop_seconds"] / row["full_loop_seconds"]
        row["ndcg_gap"] = row["warm_ndcg_at_10"] - row["full_ndcg_at_10"]
        per_week.append(row)
    # CPU seconds, not wall: each training runs one thread, so its CPU time is close to its
    # time on a core of its own (cache sharing still adds some under load), and a seed's steps
    # span hours (and sessions) of a shared machine.
    time_met = all(row["cpu_ratio"] <= MAX_TIME_RATIO for row in per_week)
    quality_met = all(abs(row["ndcg_gap"]) <= MAX_NDCG_GAP for row in per_week)
    return {"weeks": per_week, "time_met": time_met, "quality_met": quality_met}


class NothingKeptError(Exception):
    """`--kept` found no week kept for every seed."""


def run(
    quick: bool,
    scale: dict[str, int] | None = None,
    seeds: tuple[int, ...] = SEEDS,
    next_weeks: int = NEXT_WEEKS,
    kept_only: bool = False,
) -> dict[str, Any]:
    """Every seed, then the figure.

    Args:
        quick: One seed, two weeks at :data:`QUICK_SCALE` (a smoke run), unless told more.
        scale: Members, stores and weeks (default :data:`REDUCED_SCALE`, or
            :data:`QUICK_SCALE` when quick).
        seeds: The worlds.
        next_weeks: Weeks appended and trained both ways.
        kept_only: Train nothing; the figure covers the weeks kept for every seed.

    Raises:
        NothingKeptError: `kept_only` and no week is kept for every seed.
    """
    if scale is None:
        scale = QUICK_SCALE if quick else REDUCED_SCALE
        if quick:
            seeds, next_weeks = seeds[:1], min(next_weeks, 2)
    load = os.getloadavg()[0]
    began = time.perf_counter()
    measure = kept_seed if kept_only else run_seed
    results = common_weeks([measure(scale, seed, next_weeks) for seed in seeds])
    if not results[0]["weeks"]:
        raise NothingKeptError(
            f"no week is kept for every one of seeds {','.join(map(str, seeds))} under "
            f"{RESULTS_ROOT} (for this scale and trainer code); run without --kept first"
        )
    summary = summarize(results)
    rows: list[tuple[str, float | int | str, str]] = []
    for row in summary["weeks"]:
        week = f"week +{row['week']}"
        rows += [
            (f"{week}: full retrain wall time (mean)", row["full_wall_seconds"], "s"),
            (f"{week}: warm start wall time (mean)", row["warm_wall_seconds"], "s"),
            (f"{week}: full retrain / warm start CPU time (mean)",
             f"{row['full_cpu_seconds']:.0f} / {row['warm_cpu_seconds']:.0f}", "s"),
            (f"{week}: warm / full CPU time (the time verdict's)", row["cpu_ratio"], ""),
            (f"{week}: warm / full wall time", row["wall_ratio"], ""),
            (f"{week}: warm / full training-loop time", row["loop_ratio"], ""),
            (f"{week}: peak memory full / warm (mean)",
             f"{row['full_peak_rss_gib']:.2f} / {row['warm_peak_rss_gib']:.2f}", "GiB"),
            (f"{week}: load average at start full / warm (mean)",
             f"{row['full_load_at_start']:.1f} / {row['warm_load_at_start']:.1f}", ""),
            (f"{week}: gate NDCG@10 full / warm (mean)",
             f"{row['full_ndcg_at_10']:.4f} / {row['warm_ndcg_at_10']:.4f}", ""),
            (f"{week}: warm - full gate NDCG@10 (mean)", f"{row['ndcg_gap']:+.4f}", ""),
        ]  # fmt: skip
    for result in results:
        gaps = ", ".join(
            f"{w['warm']['ndcg_at_10'] - w['full']['ndcg_at_10']:+.4f}" for w in result["weeks"]
        )
        rows.append((f"seed {result['seed']}: warm - full NDCG@10 per week", gaps, ""))
        rows.append((f"seed {result['seed']}: load average at start", result["load_at_start"], ""))
    full_scale = at_seed_scale(scale)
    notes = (
        f"{len(seeds)} seed(s) at {scale['members']:,} members x {scale['stores']:,} stores x "
        f"{scale['weeks']} weeks, then {next_weeks} weeks appended, drift on; "
        f"{time.perf_counter() - began:.0f} s in all; load average {load:.1f} at start (the 2 "
        "cores are shared). Time verdict "
        f"{'met' if summary['time_met'] else 'MISSED'}, quality verdict "
        f"{'met' if summary['quality_met'] else 'MISSED'}."
    )
    reported = [row["week"] for row in summary["weeks"]]
    if len(reported) < next_weeks:
        notes += (
            f" PARTIAL: weeks {', '.join(f'+{w}' for w in reported)} of {next_weeks} (those kept "
            "for every seed so far); the verdicts cover only these."
        )
    if not full_scale:
        notes += (
            " Reduced scale: the issue's claims are for the seeds' scale (500,000 members: a "
            "warm week's training at most a fifth of a full retrain's and within 0.005 NDCG@10 "
            "in each of 4 weeks; the warm-started weekly pipeline end to end in 6 minutes and "
            "4 GB). This run does NOT measure them; process start-up and the counting passes "
            "weigh more at a small scale, so its wall-time ratio overstates the seeds' scale's. "
            "Command: `python -m bench.report --only bench_warm_start` (the same as `python -m "
            f"bench.bench_warm_start --members {scale['members']} --stores {scale['stores']} "
            f"--weeks {scale['weeks']} --next-weeks {next_weeks} --seeds "
            f"{','.join(map(str, seeds))}`)."
        )
    last = summary["weeks"][-1]
    return figure(
        name=f"Warm start against full retrain over {len(reported)} weeks, {len(seeds)} seeds, "
        + ("the seeds' scale" if full_scale else f"reduced scale ({scale['members']:,} members)"),
        what=(
            "Each next week trained fully and warm-started from the previous week's warm "
            "model on the same split, `--epochs 1` (warm: the trainer's warm-start defaults), "
            "gate-week NDCG@10 by `trainer.evaluate` (`bench/bench_warm_start.py`)."
        ),
        baseline=(f"full retrain CPU time, week +{last['week']}", last["full_cpu_seconds"]),
        measured=(f"warm start CPU time, week +{last['week']}", last["warm_cpu_seconds"]),
        unit="s",
        ratio_meaning="warm / full training CPU time of the last week (mean over seeds)",
        target=TARGET,
        met=summary["time_met"] and summary["quality_met"] and len(reported) == next_weeks,
        notes=notes,
        rows=rows,
    )


def main() -> None:
    """CLI: print the figure."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_warm_start", description=__doc__)
    for key, value in REDUCED_SCALE.items():
        parser.add_argument(f"--{key}", type=int, default=value, help=f"default {value:,}")
    parser.add_argument("--seed-scale", action="store_true", help="500,000 members x 2,000 x 156")
    parser.add_argument("--quick", action="store_true", help="one seed, two weeks, 3,000 members")
    parser.add_argument("--next-weeks", type=int, default=NEXT_WEEKS)
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated")
    parser.add_argument(
        "--kept", action="store_true", help="train nothing: the figure over the kept weeks"
    )
    args = parser.parse_args()
    scale = (
        {k: v for k, v in SEED_SCALE.items() if k != "seed"}
        if args.seed_scale
        else {key: getattr(args, key) for key in REDUCED_SCALE}
    )
    seeds = tuple(int(s) for s in args.seeds.split(","))
    try:
        if args.quick:
            print_figure(run(True, kept_only=args.kept))
        else:
            print_figure(run(False, scale, seeds, args.next_weeks, kept_only=args.kept))
    except NothingKeptError as error:
        print(f"bench_warm_start: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    main()

"""Scaling curve: time and peak memory against the member table, 10,000 to 500,000 members.

`python -m bench.bench_scaling [--quick]`.

For each size (members 10k, 50k, 100k, 500k; 2,000 stores, 26 weeks of history, so the rows
grow with the members), four commands run as processes, each measured for wall time and the
peak resident set of its process tree (`bench.measure`):

- generate: `python -m trainer.data generate`;
- prepare: the `prepare_dataset` step's logic (`vertex_retrain.steps.prepare.prepare`: plan
  the time split from Parquet metadata and two columns, hash every file, write the manifest);
- train: `python -m trainer.task --max_steps 1000` (batch 512, one thread), reported as the
  training time of those 1,000 steps (from its own samples/s), plus its start-up;
- evaluate: `python -m trainer.evaluate` on the trained model (the evaluation job).

The trainer splits the raw data itself here, as it does when given a dataset folder. The
baseline, in the same run, is the smallest size: each ratio is the cost at 500,000 members
over the cost at 10,000, against a member ratio of 50. Each curve, time and peak RSS, is
judged segment by segment (between neighbouring sizes) by its exponent p (cost ~ members^p):
p above 1.05 (5% slack for timing noise) is worse than linear, and the notes name every
such curve and segment. Training's target is stricter: "flat", the cost of 1,000 steps not
growing with the member table (issue 15's training throughput target).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.drink_shops import dataset_declaration
from bench.figures import figure, print_figure
from bench.measure import Measured, exit_on_sigterm, python_env, run_measured

SIZES = (10_000, 50_000, 100_000, 500_000)
QUICK_SIZES = (10_000, 50_000, 100_000)
STORES, WEEKS, STEPS, BATCH = 2_000, 26, 1_000, 512
LINEAR_SLACK = 1.05
"""The largest exponent p (cost ~ members^p) a segment may show and still count as linear."""
PREPARE = (
    "import json, sys; from vertex_retrain.steps.prepare import prepare; "
    "prepare(backend='local', data_uri=sys.argv[1], output_dir=sys.argv[2], "
    "dataset_declaration=json.loads(sys.argv[3]))"
)
"""The prepare_dataset step's logic as a command (the step has none of its own)."""


def _size(members: int, weeks: int, steps: int, scratch: Path) -> dict[str, Any]:
    data, out = scratch / f"data-{members}", scratch / f"out-{members}"
    env = python_env()
    generate = run_measured(
        [sys.executable, "-m", "trainer.data", "generate", "--members", str(members),
         "--stores", str(STORES), "--weeks", str(weeks), "--seed", "0", "--out", str(data)],
        env=env,
    )  # fmt: skip
    prepare = run_measured(
        [
            sys.executable,
            "-c",
            PREPARE,
            str(data),
            str(out / "prepared"),
            json.dumps(dataset_declaration()),
        ],
        env=env,
    )
    train = run_measured(
        [sys.executable, "-m", "trainer.task", "--data", str(data), "--output_dir", str(out),
         "--epochs", "1", "--max_steps", str(steps), "--batch_size", str(BATCH),
         "--num_threads", "1", "--log_every_steps", "500", "--checkpoint_every_seconds", "0"],
        env=env,
    )  # fmt: skip
    metrics = json.loads((out / "model" / "metrics.json").read_text(encoding="utf-8"))
    evaluate = run_measured(
        [sys.executable, "-m", "trainer.evaluate", "--candidate-model-dir", str(out / "model"),
         "--data", str(data), "--metrics-output", str(out / "evaluation.json"),
         "--num-threads", "1"],
        env=env,
    )  # fmt: skip
    rows = json.loads((data / "generation.json").read_text(encoding="utf-8"))["rows"]
    training = metrics["training"]
    return {
        "members": members,
        "rows": rows,
        "generate": _stage(generate),
        "prepare": _stage(prepare),
        "train": {
            **_stage(train),
            "steps_seconds": steps * BATCH / training["samples_per_second"],
            "startup_seconds": training["startup_seconds"],
        },
        "evaluate": _stage(evaluate),
    }


def _stage(measured: Measured) -> dict[str, float]:
    return {"seconds": measured.wall_seconds, "peak_rss_gib": measured.peak_rss_bytes / 2**30}


def _exponent(first: float, last: float, growth: float) -> float:
    """The power p with cost ∝ size**p between two sizes `growth` apart."""
    return math.log(last / first) / math.log(growth)


def run(quick: bool) -> dict[str, Any]:
    """Measure every size; the smallest is the baseline.

    Args:
        quick: 10k to 100k members and 8 weeks, 300 steps.
    """
    sizes, weeks, steps = (QUICK_SIZES, 8, 300) if quick else (SIZES, WEEKS, STEPS)
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        results = [_size(members, weeks, steps, Path(tmp)) for members in sizes]
    first, last = results[0], results[-1]
    growth = last["members"] / first["members"]
    rows_growth = last["rows"] / first["rows"]
    times = {
        "generate": lambda r: r["generate"]["seconds"],
        "prepare": lambda r: r["prepare"]["seconds"],
        f"train {steps:,} steps": lambda r: r["train"]["steps_seconds"],
        "evaluate": lambda r: r["evaluate"]["seconds"],
    }
    memory = {
        f"{stage} peak RSS (GiB)": _peak_of(stage)
        for stage in ("generate", "prepare", "train", "evaluate")
    }
    curves = {**{f"{name} time": cost for name, cost in times.items()}, **memory}
    train_ratio = last["train"]["steps_seconds"] / first["train"]["steps_seconds"]
    flat = train_ratio <= 1.25
    exponents = {name: _exponent(cost(first), cost(last), growth) for name, cost in curves.items()}
    notes = (
        f"{growth:.0f}x the members is {rows_growth:.1f}x the rows. Cost ~ members^p between "
        f"{first['members']:,} and {last['members']:,}: "
        + ", ".join(f"{name} p = {p:.2f}" for name, p in exponents.items())
        + f". {linearity_verdict(results, curves)} Training: {steps:,} steps took "
        f"{train_ratio:.2f}x as long at {last['members']:,} members as at "
        f"{first['members']:,}: the step cost "
        + ("does not grow with the member table. " if flat else "grows with the member table. ")
        + "Fixed costs (interpreter, torch import, world building) flatten the small sizes."
        + _worker_note(results, weeks)
    )
    rows: list[tuple[str, float | int | str, str]] = []
    for result in results:
        label = f"{result['members'] // 1000}k members"
        rows += [
            (f"{label}: rows", result["rows"], ""),
            (f"{label}: generate", result["generate"]["seconds"], "s"),
            (f"{label}: generate peak RSS", result["generate"]["peak_rss_gib"], "GiB"),
            (f"{label}: prepare", result["prepare"]["seconds"], "s"),
            (f"{label}: prepare peak RSS", result["prepare"]["peak_rss_gib"], "GiB"),
            (f"{label}: train {steps:,} steps", result["train"]["steps_seconds"], "s"),
            (f"{label}: train start-up (cold cache)", result["train"]["startup_seconds"], "s"),
            (f"{label}: train peak RSS", result["train"]["peak_rss_gib"], "GiB"),
            (f"{label}: evaluate", result["evaluate"]["seconds"], "s"),
            (f"{label}: evaluate peak RSS", result["evaluate"]["peak_rss_gib"], "GiB"),
        ]
    return figure(
        name=f"Scaling curve: members {sizes[0] // 1000}k to {sizes[-1] // 1000}k",
        what=(
            f"Wall time and peak RSS of generate, prepare, train ({steps:,} steps of {BATCH}) "
            f"and evaluate, as processes, for {', '.join(f'{m:,}' for m in sizes)} members "
            f"({STORES:,} stores, {weeks} weeks); the smallest size is the baseline "
            "(`bench/bench_scaling.py`)."
        ),
        baseline=(
            f"train {steps:,} steps at {first['members']:,} members",
            first["train"]["steps_seconds"],
        ),
        measured=(
            f"train {steps:,} steps at {last['members']:,} members",
            last["train"]["steps_seconds"],
        ),
        unit="s",
        ratio_meaning=f"step time at {growth:.0f}x the members (1: flat)",
        target=None if quick else "training throughput does not fall as the member table grows",
        met=None if quick else flat,
        notes=notes,
        rows=rows,
        plot={
            "kind": "line",
            "x": [r["members"] for r in results],
            "log": True,
            "series": {
                **{f"{name} (s)": [cost(r) for r in results] for name, cost in times.items()},
                **{name: [cost(r) for r in results] for name, cost in memory.items()},
            },
            "xlabel": "members",
            "ylabel": "seconds; peak RSS in GiB",
        },
    )


def _worker_note(results: list[dict[str, Any]], weeks: int) -> str:
    """Where generation goes from one sampling process to several: its peak RSS (summed over
    the processes, each holding its own copy of the world) steps up there, once."""
    from trainer.data import PARALLEL_FROM

    below = [r["members"] for r in results if r["members"] * weeks < PARALLEL_FROM]
    above = [r["members"] for r in results if r["members"] * weeks >= PARALLEL_FROM]
    if not below or not above:
        return ""
    return (
        f" Generation samples in one process below {PARALLEL_FROM:,} member-weeks and in one "
        f"per core from there (`trainer.data.PARALLEL_FROM`), here between {below[-1]:,} and "
        f"{above[0]:,} members: each worker holds its own copy of the world, so generate's "
        "peak RSS (summed over its processes) steps up once there rather than growing."
    )


def _peak_of(stage: str) -> Callable[[dict[str, Any]], float]:
    return lambda result: float(result[stage]["peak_rss_gib"])


def linearity_verdict(
    results: list[dict[str, Any]], curves: dict[str, Callable[[dict[str, Any]], float]]
) -> str:
    """Which curves grow faster than linearly in members, and between which sizes.

    Each segment between neighbouring sizes is judged by its exponent p; above
    :data:`LINEAR_SLACK` it is worse than linear.
    """
    worse = []
    for name, cost in curves.items():
        for low, high in itertools.pairwise(results):
            p = _exponent(cost(low), cost(high), high["members"] / low["members"])
            if p > LINEAR_SLACK:
                worse.append(
                    f"{name} from {low['members']:,} to {high['members']:,} members (p = {p:.2f})"
                )
    if not worse:
        return (
            f"Every curve, time and peak RSS, is linear or better in every segment "
            f"(p <= {LINEAR_SLACK})."
        )
    return "Not linear or better: " + "; ".join(worse) + "."


def main() -> None:
    """CLI: print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_scaling", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10k to 100k members, 8 weeks")
    print_figure(run(parser.parse_args().quick))


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    main()

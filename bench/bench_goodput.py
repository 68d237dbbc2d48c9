"""Goodput under a Spot preemption every 30 s: SIGTERM checkpoints against periodic ones only.

The reference trainer (`trainer.task`) runs as a SPOT CustomJob on the local executor with
`PreemptionSchedule(after_seconds=P)`: every attempt is preempted P seconds after it starts
(SIGTERM, then SIGKILL after the 5 s local grace period) and restarted, as Vertex restarts a
preempted Spot job. Three arms run the same training (same data, steps, seed and
`--checkpoint_every_steps`, one CPU thread each):

- uninterrupted: no preemption; the reference time T0;
- SIGTERM checkpoints: the trainer as shipped (checkpoints when SIGTERM arrives, exits 143);
- periodic only: the same trainer with its SIGTERM handler removed
  (`bench/periodic_only_trainer.py`), so a preemption loses the steps since the last
  periodic checkpoint.

Runtime goodput, as the source documents define it, is the share of useful training steps:
useful steps / executed steps, the executor's own figure from the progress file. Wall-clock
efficiency, T0 / an arm's wall time, is reported next to it: every second a preemption adds
(steps redone, stopping, process start, data loading, checkpoint restore) counts against it,
restart overhead included. Targets (issue 15): runtime goodput stays 1.0 (>= 0.95) and
wall-clock efficiency >= 0.9 for the SIGTERM arm, at a preemption every 30 s.

    .venv/bin/python -m bench.bench_goodput [--quick]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.figures import figure, print_figure
from bench.measure import exit_on_sigterm

REPO = Path(__file__).resolve().parent.parent
TARGET = 0.95
EFFICIENCY_TARGET = 0.9
BATCH = 256
DATA_SCALE = {"members": 2000, "stores": 20, "weeks": 8, "seed": 1}
TRAINER = ["-m", "trainer.task"]
PERIODIC_ONLY = ["periodic_only_trainer.py"]
# (preemption interval, seconds of training): long enough that the periodic-only arm, whose
# attempts each lose some steps, still finishes within Vertex's six restarts.
SCHEDULE = {"quick": (12.0, 15.0), "full": (30.0, 60.0)}


def _image(scratch: Path) -> str:
    """A local image of the trainer plus the periodic-only wrapper (Python entrypoint)."""
    from vertex_retrain.backends.local.environments.builder import build_container_image

    context = scratch / "context"
    shutil.copytree(
        REPO / "examples" / "drink_shops" / "trainer",
        context / "trainer",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy2(REPO / "bench" / "periodic_only_trainer.py", context)
    (context / "Dockerfile").write_text('FROM python:3.11-slim\nENTRYPOINT ["python"]\n')
    return build_container_image(context, image_uri="bench/goodput-trainer:v1").uri


def _steps_per_second(data: Path, scratch: Path) -> float:
    """Training steps per second of this trainer on this machine, from a short direct run."""
    out = scratch / "calibration"
    subprocess.run(
        [sys.executable, "-m", "trainer.task", "--data", str(data), "--output_dir", str(out),
         "--epochs", "1000", "--max_steps", "400", "--batch_size", str(BATCH),
         "--checkpoint_every_steps", "0", "--num_threads", "1"],
        cwd=REPO, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    metrics = json.loads((out / "model" / "metrics.json").read_text(encoding="utf-8"))
    return float(metrics["training"]["samples_per_second"]) / BATCH


def _job(image: str, program: list[str], args: list[str], arm: str, spot: bool) -> dict:
    return {
        "displayName": f"goodput-{arm}",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": image, "args": [*program, *args]},
                }
            ],
            "scheduling": {"strategy": "SPOT" if spot else "STANDARD"},
            "baseOutputDirectory": {"outputUriPrefix": f"gs://bench-goodput/{arm}"},
        },
    }


def _run_arm(payload: dict, interval: float | None) -> dict[str, Any]:
    from vertex_retrain.backends.local.jobs.executor import PreemptionSchedule, run_custom_job

    tail: collections.deque[str] = collections.deque(maxlen=30)
    schedule = PreemptionSchedule(after_seconds=interval) if interval else None
    result = run_custom_job(payload, preemption=schedule, on_log=tail.append)
    stockout = bool(result.error and result.error.startswith("STOCKOUT"))
    if not result.succeeded and not (interval and stockout):
        raise RuntimeError(f"{payload['displayName']}: {result.error}\n" + "\n".join(tail))
    metrics: dict[str, Any] = {"training": {"steps": None}, "ndcg_at_10": None}
    if result.succeeded and result.model_path is not None:
        metrics = json.loads((result.model_path / "metrics.json").read_text(encoding="utf-8"))
    return {
        "finished": result.succeeded,  # False: Vertex's six restarts ran out (STOCKOUT)
        "wall": result.wall_seconds,
        "restarts": result.restarts,
        "step_goodput": result.goodput.goodput,
        "time_lost": result.goodput.time_lost_seconds,
        "steps": metrics["training"]["steps"],
        "ndcg": metrics["ndcg_at_10"],
    }


def run(quick: bool) -> dict[str, Any]:
    """Run the three arms; return the figures (also printed).

    Args:
        quick: Preempt every 12 s and train for about 15 s instead of every 30 s for 60 s.

    Returns:
        Baseline: runtime goodput with periodic checkpoints only; measured: with SIGTERM
        checkpoints; target: the latter >= 0.95.
    """
    interval, work = SCHEDULE["quick" if quick else "full"]
    saved_root = os.environ.get("VERTEX_LOCAL_ROOT")
    with tempfile.TemporaryDirectory(prefix="bench-goodput-") as tmp:
        scratch = Path(tmp)
        os.environ["VERTEX_LOCAL_ROOT"] = str(scratch / "root")
        try:
            from trainer.data import WorldConfig, generate

            data = scratch / "data"
            generate(WorldConfig(**DATA_SCALE), str(data))
            image = _image(scratch)
            rate = _steps_per_second(data, scratch)
            steps = max(200, int(rate * work))
            every = max(10, int(rate * interval / 3))
            args = ["--data", str(data), "--epochs", "100000", "--max_steps", str(steps),
                    "--batch_size", str(BATCH), "--checkpoint_every_steps", str(every),
                    "--checkpoint_every_seconds", "0", "--log_every_steps", "10",
                    "--num_threads", "1", "--seed", "0"]  # fmt: skip
            arms = {
                "uninterrupted": _run_arm(_job(image, TRAINER, args, "plain", False), None),
                "SIGTERM checkpoints": _run_arm(_job(image, TRAINER, args, "sig", True), interval),
                "periodic only": _run_arm(
                    _job(image, PERIODIC_ONLY, args, "periodic", True), interval
                ),
            }
        finally:
            if saved_root is None:
                os.environ.pop("VERTEX_LOCAL_ROOT", None)
            else:
                os.environ["VERTEX_LOCAL_ROOT"] = saved_root
    return _figures(arms, interval=interval, steps=steps, every=every, rate=rate, quick=quick)


def _figures(
    arms: dict[str, dict[str, Any]],
    *,
    interval: float,
    steps: int,
    every: int,
    rate: float,
    quick: bool,
) -> dict[str, Any]:
    t0 = arms["uninterrupted"]["wall"]
    efficiency = {  # an arm that never finished delivered nothing
        arm: t0 / figures["wall"] if figures.get("finished", True) else 0.0
        for arm, figures in arms.items()
        if arm != "uninterrupted"
    }
    goodput = {
        arm: (arms[arm]["step_goodput"] or 1.0) if arms[arm].get("finished", True) else 0.0
        for arm in efficiency
    }
    sig, periodic = goodput["SIGTERM checkpoints"], goodput["periodic only"]
    met = sig >= TARGET and efficiency["SIGTERM checkpoints"] >= EFFICIENCY_TARGET
    restart = arms["SIGTERM checkpoints"]["restarts"]
    lost_per_restart = (arms["SIGTERM checkpoints"]["wall"] - t0) / max(restart, 1)
    notes = (
        f"Preemption every {interval:g} s"
        + (" (quick pass: the issue's interval is 30 s)" if quick else "")
        + f"; {steps} steps at about {rate:.0f} steps/s, a periodic checkpoint every {every} "
        "steps (a third of the interval) in every arm. Runtime goodput is the share of "
        "useful steps (the source documents' definition). "
    )
    sig_efficiency = efficiency["SIGTERM checkpoints"]
    notes += (
        f"No step is redone after a restart (runtime goodput {sig:.2f}). "
        if sig >= TARGET
        else "The SIGTERM arm misses the target: steps were redone after a restart. "
    )
    notes += (
        f"Wall-clock efficiency: SIGTERM arm {sig_efficiency:.2f} (target "
        f"{EFFICIENCY_TARGET}: {'met' if sig_efficiency >= EFFICIENCY_TARGET else 'missed'}), "
        f"periodic only {efficiency['periodic only']:.2f}. Each of the SIGTERM arm's "
        f"{restart} restarts costs about {lost_per_restart:.1f} s that are not lost steps but "
        "the restart itself: a new Python process importing torch, mapping the pre-encoded "
        "dataset (`trainer.encoded`, no Parquet decoding) and restoring the checkpoint, plus "
        "the executor's poll; the trainer leaves without interpreter teardown. With a restart "
        f"every {interval:g} s that caps wall-clock efficiency near "
        f"{max(0.0, 1 - lost_per_restart / interval):.2f}. "
    )
    if not met:
        notes += (
            "The start-up is CPU-bound, so on this shared machine it stretches with the load "
            "average; a warm standby process (started before the preemption, waiting for the "
            "checkpoint) would raise it. "
        )
    notes += (
        "On Vertex, preemptions are far rarer than every 30 s and a restart takes minutes of "
        "scheduling (scheduling goodput, not runtime goodput)."
    )
    unfinished = [arm for arm, figures in arms.items() if not figures.get("finished", True)]
    if unfinished:
        notes += (
            f" {', '.join(unfinished)} never finished: the preemptions used up Vertex's six "
            "restarts (STOCKOUT), so its goodput counts as 0."
        )
    notes += (
        " Final NDCG@10 of every arm is listed: a resumed run trains on exactly the batches "
        "an uninterrupted one would, so they should agree."
    )
    rows: list[tuple[str, float | int | str, str]] = [
        ("runtime goodput (useful steps), periodic only", periodic, ""),
        ("runtime goodput (useful steps), SIGTERM checkpoints", sig, ""),
        ("wall-clock efficiency, periodic only", efficiency["periodic only"], ""),
        ("wall-clock efficiency, SIGTERM checkpoints", efficiency["SIGTERM checkpoints"], ""),
    ]
    for arm, figures in arms.items():
        rows += [
            (f"{arm}: wall time", figures["wall"], "s"),
            (f"{arm}: restarts", figures["restarts"], ""),
            (f"{arm}: final NDCG@10", figures["ndcg"] if figures["ndcg"] is not None else "-", ""),
        ]
    return figure(
        name="Goodput under a preemption every 30 s",
        what=(
            "The reference trainer as a SPOT CustomJob on the local executor, preempted "
            f"{interval:g} s into every attempt; runtime goodput = useful steps / executed "
            "steps, for a trainer that checkpoints on SIGTERM (measured) and the same trainer "
            "with periodic checkpoints only (baseline), all in the same run; wall-clock "
            "efficiency (uninterrupted wall time / preempted wall time) is listed too (see "
            "`bench/bench_goodput.py`)."
        ),
        baseline=("runtime goodput, periodic checkpoints only", periodic),
        measured=("runtime goodput, SIGTERM checkpoints", sig),
        unit="",
        ratio_meaning="SIGTERM goodput / periodic-only goodput",
        target=f"runtime goodput >= {TARGET} and wall-clock efficiency >= {EFFICIENCY_TARGET}",
        met=met,
        notes=notes,
        rows=rows,
        plot={
            "kind": "bar",
            "categories": ["runtime goodput (steps)", "wall-clock efficiency"],
            "series": {arm: [goodput[arm], efficiency[arm]] for arm in goodput},
            "ylabel": "goodput",
            "reference": {"label": f"target {TARGET}", "value": TARGET},
        },
    )


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="preempt every 12 s, ~15 s of work")
    print_figure(run(parser.parse_args().quick))

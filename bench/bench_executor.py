"""Overhead of the local CustomJob executor against launching the same script directly.

Two figures, each as executor vs. a baseline measured in the same run (the script started
with `subprocess.run([python, script])`):

- start latency: from the call to the first line of user code;
- wall ratio: job wall time ÷ the user code's own running time.

Run: `python -m bench.bench_executor [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import exit_on_sigterm

_SCRIPT = """\
import sys, time
print("FIRST", time.time(), flush=True)
began = time.perf_counter()
end = began + float(sys.argv[1])
x = 0
while time.perf_counter() < end:
    x += 1
print("USER", time.perf_counter() - began, flush=True)
"""


def _parse(lines: list[str]) -> tuple[float, float]:
    first = next(float(line.split()[-1]) for line in lines if "FIRST" in line)
    user = next(float(line.split()[-1]) for line in lines if "USER" in line)
    return first, user


def _direct(script: Path, work: float) -> tuple[float, float, float]:
    began = time.time()
    out = subprocess.run(
        [sys.executable, str(script), str(work)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    wall = time.time() - began
    first, user = _parse(out)
    return first - began, wall, user


def _executor(image: str, work: float) -> tuple[float, float, float]:
    from vertex_retrain.backends.local.jobs.executor import run_custom_job

    payload = {
        "displayName": "bench",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": image, "args": ["user.py", str(work)]},
                }
            ]
        },
    }
    lines: list[str] = []
    began = time.time()
    result = run_custom_job(payload, on_log=lines.append)
    wall = time.time() - began
    if not result.succeeded:
        raise RuntimeError(f"bench job failed: {result.error}")
    first, user = _parse(lines)
    return first - began, wall, user


def run(quick: bool) -> dict[str, Any]:
    """Measure the executor's overhead; return the figures (also printed).

    Args:
        quick: Fewer, shorter repetitions (for CI).

    Returns:
        Medians of start latency and wall/user ratios, for the executor and the baseline.
    """
    repeats, work = (3, 0.5) if quick else (10, 2.0)
    with tempfile.TemporaryDirectory(prefix="bench-executor-") as tmp:
        os.environ["VERTEX_LOCAL_ROOT"] = str(Path(tmp) / "root")
        from vertex_retrain.backends.local.environments.builder import build_container_image

        context = Path(tmp) / "ctx"
        context.mkdir()
        (context / "user.py").write_text(_SCRIPT)
        (context / "Dockerfile").write_text('FROM python:3.11-slim\nENTRYPOINT ["python"]\n')
        image = build_container_image(context, image_uri="bench/executor:v1").uri
        direct = [_direct(context / "user.py", work) for _ in range(repeats)]
        local = [_executor(image, work) for _ in range(repeats)]
    figures = {
        "repeats": repeats,
        "user_seconds": work,
        "baseline_start_seconds": statistics.median(d[0] for d in direct),
        "executor_start_seconds": statistics.median(e[0] for e in local),
        "baseline_wall_over_user": statistics.median(d[1] / d[2] for d in direct),
        "executor_wall_over_user": statistics.median(e[1] / e[2] for e in local),
    }
    figures["start_ratio_vs_baseline"] = (
        figures["executor_start_seconds"] / figures["baseline_start_seconds"]
    )
    figures["wall_ratio_vs_baseline"] = (
        figures["executor_wall_over_user"] / figures["baseline_wall_over_user"]
    )
    for name, value in figures.items():
        print(f"{name:28s} {value:.4f}" if isinstance(value, float) else f"{name:28s} {value}")
    return figures


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    run(parser.parse_args().quick)

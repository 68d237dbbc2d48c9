"""Benchmark: the prediction server's throughput with 8 concurrent clients against one.

`python -m bench.bench_serving [--quick]`. The reference model is trained for a few steps
through the trainer's command line (`bench.serving_load`) and served by `python -m
trainer.serve` in its own process, as a deployment runs it. The load generator, in this
process, sends one-instance requests (one member at one store, top 10) over kept-alive
connections: first from one client, each request waiting for the previous answer (the
baseline), then from 8 clients at once, the two runs interleaved twice. Also reported: p50
and p99 of each, the server's CPU per request, and `Predictor.predict` called directly
in-process on the same requests, without HTTP.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.figures import figure, print_figure
from bench.measure import exit_on_sigterm
from bench.serving_load import (
    REPO,
    Load,
    cpu_seconds,
    describe,
    measure,
    train_reference_model,
    wait_healthy,
)
from vertex_retrain.backends.local.serving.model_server import free_port

CLIENTS = 8
TARGET_RATIO = 1.3
ROUNDS = 2


def _direct_calls_per_s(model_dir: Path, bodies: list[bytes]) -> float:
    """`Predictor.predict` on each body's instances in this process, one torch thread (as
    the server runs it)."""
    import json

    import torch

    from trainer.predictor import Predictor

    torch.set_num_threads(1)
    predictor = Predictor(model_dir)
    instances = [json.loads(body)["instances"] for body in bodies]
    for batch in instances[:50]:
        predictor.predict(batch)
    began = time.perf_counter()
    for batch in instances:
        predictor.predict(batch)
    return len(instances) / (time.perf_counter() - began)


def _serve(model_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trainer.serve",
                "--model_dir",
                str(model_dir),
                "--port",
                str(port),
            ],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(port)
    except BaseException:
        server.kill()
        server.wait()
        raise
    return server, port


def _merge(loads: list[Load]) -> Load:
    latencies = [x for load in loads for x in load.latencies_s]
    return Load(latencies, sum(load.seconds for load in loads), loads[0].clients)


def run(quick: bool) -> dict[str, Any]:
    """Serve the reference model and load it from 1 and from 8 clients.

    Args:
        quick: 500 requests per run instead of 3,000.

    Returns:
        The report's figure: 8 clients' requests/s over one client's, against the 1.3 target.
    """
    requests = 500 if quick else 3000
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="bench-serving-") as scratch:
        root = Path(scratch)
        model = train_reference_model(root / "train")
        bodies = [model.body(rng, 1) for _ in range(requests)]
        direct = _direct_calls_per_s(model.model_dir, bodies)
        server, port = _serve(model.model_dir, root / "server.log")
        try:
            measure(port, "/predict", bodies[:200], CLIENTS)  # warm-up
            runs: dict[int, list[Load]] = {1: [], CLIENTS: []}
            cpu: dict[int, float] = {1: 0.0, CLIENTS: 0.0}
            for _ in range(ROUNDS):
                for clients in runs:
                    before = cpu_seconds(server.pid)
                    runs[clients].append(measure(port, "/predict", bodies, clients))
                    cpu[clients] += cpu_seconds(server.pid) - before
        finally:
            server.terminate()
            server.wait(timeout=60)
    one, many = _merge(runs[1]), _merge(runs[CLIENTS])
    total = ROUNDS * requests
    return _figure(
        describe(one),
        describe(many),
        {
            "requests": total,
            "request_bytes": len(bodies[0]),
            "direct_calls_per_s": direct,
            "cpu_us_one": 1e6 * cpu[1] / total,
            "cpu_us_many": 1e6 * cpu[CLIENTS] / total,
        },
    )


def _figure(one: dict[str, float], many: dict[str, float], extra: dict[str, Any]) -> dict[str, Any]:
    ratio = many["requests_per_s"] / one["requests_per_s"]
    met = ratio >= TARGET_RATIO
    notes = (
        f"{CLIENTS} clients get x{ratio:.2f} one client's throughput on {os.cpu_count()} cores. "
        "Requests that wait while the model scores are merged into its next call "
        "(`trainer/serve_batching.py`), so the server's CPU per request falls from "
        f"{extra['cpu_us_one']:.0f} us to {extra['cpu_us_many']:.0f} us under load; calls of "
        "up to 64 instances run on the event loop (a hand-off to a thread cost more than the "
        "call) and torch uses one thread per call (a second one made small calls slower)."
    )
    if not met:
        notes += " Missed: the merged calls did not amortise enough on this machine's load."
    return figure(
        name="Serving: prediction server over HTTP",
        what=(
            f"{extra['requests']:,} one-instance requests ({extra['request_bytes']} bytes) per "
            "side to the reference prediction server (`python -m trainer.serve`, its own "
            "process, a trained model) over kept-alive connections: one client waiting for each "
            f"answer (baseline) against {CLIENTS} concurrent clients, interleaved "
            f"(`bench/bench_serving.py`)."
        ),
        baseline=("1 client", one["requests_per_s"]),
        measured=(f"{CLIENTS} concurrent clients", many["requests_per_s"]),
        unit="req/s",
        ratio_meaning=f"{CLIENTS} clients' throughput / one client's",
        target=f"ratio >= {TARGET_RATIO:g}",
        met=met,
        notes=notes,
        rows=[
            ("p50 latency, 1 client", one["p50_ms"], "ms"),
            ("p99 latency, 1 client", one["p99_ms"], "ms"),
            (f"p50 latency, {CLIENTS} clients", many["p50_ms"], "ms"),
            (f"p99 latency, {CLIENTS} clients", many["p99_ms"], "ms"),
            ("server CPU per request, 1 client", extra["cpu_us_one"], "us"),
            (f"server CPU per request, {CLIENTS} clients", extra["cpu_us_many"], "us"),
            ("direct Predictor.predict calls (no HTTP)", extra["direct_calls_per_s"], "calls/s"),
            (
                "HTTP 1 client / direct calls",
                one["requests_per_s"] / extra["direct_calls_per_s"],
                "x",
            ),
        ],
        plot={
            "kind": "bar",
            "categories": ["requests/s"],
            "series": {
                "direct predictor": [extra["direct_calls_per_s"]],
                "HTTP, 1 client": [one["requests_per_s"]],
                f"HTTP, {CLIENTS} clients": [many["requests_per_s"]],
            },
            "ylabel": "requests per second",
        },
    )


def main() -> None:
    """CLI: print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_serving", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="500 requests per run")
    print_figure(run(parser.parse_args().quick))


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    main()

"""Benchmark: the endpoint router's overhead over calling the prediction server directly.

One client sends sequential requests over a kept-alive connection, alternating blocks between
the prediction server alone (baseline) and the router in front of it, in the same run. Prints
p50/p99 latency and requests/s for both and their ratios.

    .venv/bin/python -m bench.bench_router [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local.endpoint_servers import stop_servers
from vertex_retrain.backends.local.endpoints import LocalEndpoints
from vertex_retrain.backends.local.registry import ModelRegistry
from vertex_retrain.backends.local.router import start_router

REPO = Path(__file__).resolve().parent.parent
ECHO_SERVER = REPO / "tests" / "data" / "serving" / "echo_server.py"


def _timed_block(port: int, path: str, count: int) -> list[float]:
    body = json.dumps({"instances": [1, 2, 3]}).encode()
    headers = {"Content-Type": "application/json"}
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies = []
    try:
        for _ in range(count):
            start = time.perf_counter()
            client.request("POST", path, body, headers)
            response = client.getresponse()
            response.read()
            latencies.append(time.perf_counter() - start)
            if response.status != 200:
                raise RuntimeError(f"POST {path} answered {response.status}")
    finally:
        client.close()
    return latencies


def _summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "requests_per_s": len(ordered) / sum(ordered),
    }


def run(quick: bool) -> dict[str, Any]:
    """Deploy the echo server to a scratch endpoint and time it with and without the router.

    Args:
        quick: 4 x 100 requests per side instead of 4 x 1000.

    Returns:
        Figures for `server` and `router`, and `ratio`: router / server for the latencies and
        server / router for requests/s, so every ratio above 1 is the router's cost.
    """
    per_block = 100 if quick else 1000
    saved_root = os.environ.get("VERTEX_LOCAL_ROOT")
    with tempfile.TemporaryDirectory(prefix="bench-router-") as scratch:
        root = Path(scratch)
        os.environ["VERTEX_LOCAL_ROOT"] = str(root)  # logs and GCS_FUSE_ROOT stay in scratch
        (root / "model").mkdir()
        (root / "model" / "model.json").write_text(json.dumps({"name": "m", "bias": 1}))
        db = root / "registry.db"
        ModelRegistry(db).upload_version(
            "bench",
            artifact_uri=str(root / "model"),
            container_spec={
                "imageUri": "local/echo",
                "command": ["python", str(ECHO_SERVER)],
                "predictRoute": "/predict",
                "healthRoute": "/health",
            },
            sample_instances=[1],
        )
        endpoints = LocalEndpoints(db)
        endpoints.get_or_create("bench")
        deployed = endpoints.deploy("bench", "bench")
        try:
            with start_router("bench", db_path=db, seed=0) as router:
                server: list[float] = []
                routed: list[float] = []
                _timed_block(deployed.port or 0, "/predict", 50)  # warm-up
                _timed_block(router.port, "/predict", 50)
                for _ in range(4):
                    server += _timed_block(deployed.port or 0, "/predict", per_block)
                    routed += _timed_block(router.port, "/predict", per_block)
        finally:
            stop_servers("bench", db_path=db)
            if saved_root is None:
                os.environ.pop("VERTEX_LOCAL_ROOT", None)
            else:
                os.environ["VERTEX_LOCAL_ROOT"] = saved_root
    direct, via = _summary(server), _summary(routed)
    return {
        "requests_per_side": len(server),
        "server": direct,
        "router": via,
        "ratio": {
            "p50": via["p50_ms"] / direct["p50_ms"],
            "p99": via["p99_ms"] / direct["p99_ms"],
            "throughput": direct["requests_per_s"] / via["requests_per_s"],
        },
    }


def main() -> None:
    """Prints the figures of one run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 requests per side")
    figures = run(parser.parse_args().quick)
    print(f"requests per side: {figures['requests_per_side']} (sequential, keep-alive)")
    print(f"{'':8}{'p50 ms':>10}{'p99 ms':>10}{'req/s':>10}")
    for side in ("server", "router"):
        f = figures[side]
        print(f"{side:8}{f['p50_ms']:10.3f}{f['p99_ms']:10.3f}{f['requests_per_s']:10.0f}")
    r = figures["ratio"]
    print(
        f"router/server: p50 x{r['p50']:.2f}, p99 x{r['p99']:.2f}, "
        f"throughput cost x{r['throughput']:.2f} (cpus: {os.cpu_count()})"
    )


if __name__ == "__main__":
    main()

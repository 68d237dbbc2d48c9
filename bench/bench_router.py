"""Benchmark: the endpoint router's added latency over calling the model server directly.

Two endpoints are deployed on the local backend, each served by its own router process
(`vertex-retrain serve`): the reference prediction server (`trainer.serve`) with a trained
model, sent one-instance requests (one member at one store, top 10: what an app asks when a
member opens it), and the trivial echo server of the tests, whose answer costs almost nothing
and so shows the router's floor; also a 100-instance request to the reference server. One
client (the load generator of `bench.serving_load`, in this process) sends sequential
requests over a kept-alive connection, in blocks taken in turn by the model server alone (the
baseline), a proxy that only copies bytes (the cost of the extra hop itself) and the router.

    .venv/bin/python -m bench.bench_router [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.figures import figure, print_figure
from bench.measure import exit_on_sigterm
from bench.serving_load import (
    REPO,
    Load,
    ReferenceModel,
    cpu_seconds,
    describe,
    measure,
    start_byte_proxy,
    train_reference_model,
)
from vertex_retrain.backends.local.environments.builder import (
    build_container_image,
    build_python_package,
)
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import DeployedModel, LocalEndpoints

ECHO_SERVER = REPO / "tests" / "data" / "serving" / "echo_server.py"
ECHO_IMAGE = "us-docker.pkg.dev/local/echo:bench"
TARGET_RATIO = 1.10
BLOCKS = 4
BATCH = 100  # instances in the batch request (a list of members scored at once)


def _register(db: Path, root: Path, model: ReferenceModel) -> None:
    # The local backend serves a version from its serving package (the trainer's wheel, with
    # its `serve` extra) or from an image its builder recorded (the echo server).
    registry = ModelRegistry(db)
    local = db.parent
    (root / "echo").mkdir()
    (root / "echo" / "model.json").write_text(json.dumps({"name": "m", "bias": 1}))
    build_container_image(ECHO_SERVER.parent, image_uri=ECHO_IMAGE, root=local)
    registry.upload_version(
        "echo",
        artifact_uri=str(root / "echo"),
        container_spec={
            "imageUri": ECHO_IMAGE,
            "command": ["python", str(ECHO_SERVER)],
            "predictRoute": "/predict",
            "healthRoute": "/health",
        },
        sample_instances=[1],
    )
    package = build_python_package(
        REPO / "examples" / "drink_shops" / "trainer",
        destination_uri="gs://bench/packages",
        root=local,
    )
    registry.upload_version(
        "reference",
        artifact_uri=str(model.model_dir),
        container_spec={
            "imageUri": "local/trainer-serve",
            "command": ["python", "-m", "trainer.serve"],
            "predictRoute": "/predict",
            "healthRoute": "/health",
        },
        sample_instances=[json.loads(model.body(np.random.default_rng(0), 1))["instances"][0]],
        serving_package_uri=package.uri,
        serving_extras=["serve"],
    )


def _start_router(name: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    router = subprocess.Popen(
        [sys.executable, "-m", "vertex_retrain.cli.main", "serve", name, "--port", "0"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert router.stdout is not None
    for line in router.stdout:  # the banner names the URL once the router accepts requests
        found = re.search(r"at http://127\.0\.0\.1:(\d+)", line)
        if found:
            return router, int(found.group(1))
    router.wait()
    raise RuntimeError(f"serve {name} exited {router.returncode} before serving")


def _blocks(
    server: DeployedModel, ports: dict[str, int], router_pid: int, bodies: list[bytes]
) -> dict[str, Any]:
    """Blocks of `bodies` to the model server alone, through the byte proxy and through the
    router, in turn."""
    for port in ports.values():
        measure(port, "/predict", bodies[:100])  # warm-up
    latencies: dict[str, list[float]] = {side: [] for side in ports}
    cpu = {"router": 0.0, "server alone": 0.0, "server behind": 0.0}
    group = server.pid or 0  # its keeper's: the server runs in the keeper's process group
    for _ in range(BLOCKS):
        for side, port in ports.items():
            before, before_server = cpu_seconds(router_pid), cpu_seconds(group, group=True)
            latencies[side] += measure(port, "/predict", bodies).latencies_s
            if side == "router":
                cpu["router"] += cpu_seconds(router_pid) - before
                cpu["server behind"] += cpu_seconds(group, group=True) - before_server
            elif side == "server":
                cpu["server alone"] += cpu_seconds(group, group=True) - before_server
    alone, proxy, via = (Load(latencies[s], sum(latencies[s]), 1) for s in ports)
    count = len(latencies["router"])
    return {
        "server": describe(alone),
        "proxy": describe(proxy),
        "router": describe(via),
        "p50_ratio": via.p50_ms() / alone.p50_ms(),
        "proxy_p50_ratio": proxy.p50_ms() / alone.p50_ms(),
        "p99_ratio": via.quantile_ms(0.99) / alone.quantile_ms(0.99),
        "added_p50_us": 1000 * (via.p50_ms() - alone.p50_ms()),
        "proxy_added_p50_us": 1000 * (proxy.p50_ms() - alone.p50_ms()),
        "router_cpu_us_per_request": 1e6 * cpu["router"] / count,
        "server_cpu_us_alone": 1e6 * cpu["server alone"] / count,
        "server_cpu_us_behind": 1e6 * cpu["server behind"] / count,
        "request_bytes": len(bodies[0]),
    }


def _compare(
    name: str, cases: dict[str, list[bytes]], env: dict[str, str], db: Path
) -> dict[str, dict[str, Any]]:
    """Serve the endpoint with its router (`serve`) and time each case's requests."""
    (server,) = LocalEndpoints(db).get(name).deployed_models
    router, router_port = _start_router(name, env)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            proxy, proxy_port = start_byte_proxy(server.port or 0, Path(scratch))
            ports = {"server": server.port or 0, "proxy": proxy_port, "router": router_port}
            try:
                return {case: _blocks(server, ports, router.pid, b) for case, b in cases.items()}
            finally:
                proxy.terminate()
                proxy.wait(timeout=60)
    finally:
        router.terminate()  # `serve` stops the endpoint's model servers as it exits
        router.communicate(timeout=60)


def run(quick: bool) -> dict[str, Any]:
    """Train and deploy the reference model and the echo server; time both paths for each.

    Args:
        quick: 4 x 150 requests per side instead of 4 x 1,000.

    Returns:
        The report's figure: the reference request's p50 ratio against the 10% target, with
        the router's added microseconds and the trivial request's figures in the rows.
    """
    per_block = 150 if quick else 1000
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="bench-router-") as scratch:
        root = Path(scratch)
        model = train_reference_model(root / "train")
        env = {**os.environ, "VERTEX_LOCAL_ROOT": str(root / "local"), "PYTHONPATH": str(REPO)}
        saved = os.environ.get("VERTEX_LOCAL_ROOT")
        os.environ["VERTEX_LOCAL_ROOT"] = env["VERTEX_LOCAL_ROOT"]  # logs stay in scratch
        db = root / "local" / "registry.db"
        try:
            _register(db, root, model)
            endpoints = LocalEndpoints(db)
            requests = {
                "reference": [model.body(rng, 1) for _ in range(per_block)],
                "batch": [model.body(rng, BATCH) for _ in range(per_block // 4)],
                "echo": [json.dumps({"instances": [1, 2, 3]}).encode()] * per_block,
            }
            results: dict[str, dict[str, Any]] = {}
            for name, cases in (("reference", ("reference", "batch")), ("echo", ("echo",))):
                endpoints.get_or_create(name)
                endpoints.deploy(name, name)
                try:
                    results |= _compare(name, {c: requests[c] for c in cases}, env, db)
                finally:
                    stop_servers(name, db_path=db)
        finally:
            if saved is None:
                os.environ.pop("VERTEX_LOCAL_ROOT", None)
            else:
                os.environ["VERTEX_LOCAL_ROOT"] = saved
    return _figure(results, BLOCKS * per_block)


def _figure(results: dict[str, dict[str, Any]], requests: int) -> dict[str, Any]:
    ref, batch, echo = results["reference"], results["batch"], results["echo"]
    met = ref["p50_ratio"] <= TARGET_RATIO
    notes = (
        f"Judged on the one-instance request: the router adds {ref['added_p50_us']:.0f} us to "
        f"its p50. A proxy that only copies bytes adds {ref['proxy_added_p50_us']:.0f} us "
        f"(x{ref['proxy_p50_ratio']:.2f}): the price of one more process and loopback hop on "
        "this machine. The rest is the router's work, "
        f"{ref['router_cpu_us_per_request']:.0f} us of CPU per request, "
        "most of it in uvicorn's and asyncio's per-request Python (the router's own code, "
        "httptools parsing, JSON check, traffic draw and pooled forwarding, is a small part). "
        f"The floor, on a trivial echo server answering in {echo['server']['p50_ms']:.2f} ms: "
        f"x{echo['p50_ratio']:.2f} (+{echo['added_p50_us']:.0f} us). On a {BATCH}-instance "
        f"request the router is x{batch['p50_ratio']:.2f} "
        f"({'within' if batch['p50_ratio'] <= TARGET_RATIO else 'over'} the 10% target)."
    )
    if not met:
        notes += (
            " Missed for one instance, on 2 cores shared by client, router and server: the "
            "target holds only for answers slower than about "
            f"{ref['added_p50_us'] / 100:.1f} ms."
        )
    return figure(
        name="Serving: endpoint router + prediction server",
        what=(
            f"{requests:,} sequential keep-alive POST requests per side, in turn to a locally "
            "deployed model server alone (baseline), through a byte-copying proxy, and through "
            "the endpoint router (`vertex-retrain serve`), each in its own process; the "
            f"request is one instance ({ref['request_bytes']} bytes: one member at one shop, "
            "top 10, what an app asks) to `trainer.serve` with a trained reference model; also "
            f"a {BATCH}-instance request, and a trivial one to the test echo server for the "
            "floor (`bench/bench_router.py`)."
        ),
        baseline=("reference server alone, p50", ref["server"]["p50_ms"]),
        measured=("router + reference server, p50", ref["router"]["p50_ms"]),
        unit="ms",
        ratio=ref["p50_ratio"],
        ratio_meaning="router p50 / server p50 (above 1: the router's cost)",
        target=f"ratio <= {TARGET_RATIO:g}",
        met=met,
        notes=notes,
        rows=[
            ("router's added p50", ref["added_p50_us"], "us"),
            ("byte proxy's added p50 (the hop alone)", ref["proxy_added_p50_us"], "us"),
            ("router CPU per request", ref["router_cpu_us_per_request"], "us"),
            ("server CPU per request, alone", ref["server_cpu_us_alone"], "us"),
            ("server CPU per request, behind the router", ref["server_cpu_us_behind"], "us"),
            ("p99, reference server alone", ref["server"]["p99_ms"], "ms"),
            ("p99, router + reference server", ref["router"]["p99_ms"], "ms"),
            ("p99 ratio", ref["p99_ratio"], "x"),
            (f"p50, server alone, {BATCH} instances", batch["server"]["p50_ms"], "ms"),
            (f"p50 ratio, {BATCH} instances", batch["p50_ratio"], "x"),
            (f"p99, router + server, {BATCH} instances", batch["router"]["p99_ms"], "ms"),
            ("p50, echo server alone", echo["server"]["p50_ms"], "ms"),
            ("p50 ratio, echo (the floor)", echo["p50_ratio"], "x"),
            ("router's added p50, echo", echo["added_p50_us"], "us"),
            ("byte proxy's added p50, echo", echo["proxy_added_p50_us"], "us"),
            ("p99, router + echo server", echo["router"]["p99_ms"], "ms"),
        ],
        plot={
            "kind": "bar",
            "categories": ["1 instance p50", "1 instance p99", "echo p50", "echo p99"],
            "series": {
                label: [
                    ref[side]["p50_ms"],
                    ref[side]["p99_ms"],
                    echo[side]["p50_ms"],
                    echo[side]["p99_ms"],
                ]
                for label, side in (
                    ("server alone", "server"),
                    ("byte proxy + server", "proxy"),
                    ("router + server", "router"),
                )
            },
            "ylabel": "latency (ms)",
        },
    )


def main() -> None:
    """Prints the figures of one run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="600 requests per side")
    print_figure(run(parser.parse_args().quick))


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    main()

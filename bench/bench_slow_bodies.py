"""Benchmark: a normal client's answers while 200 clients send their request bodies slowly.

`python -m bench.bench_slow_bodies [--quick]`. The reference model (`bench.serving_load`) is
served by `python -m trainer.serve` in its own process, and deployed on the local backend
behind the endpoint router (`vertex-retrain serve`). Against each, a normal client sends
one-instance predict requests one after another, each on a new connection, first alone (the
baseline) and then while 200 slow senders (another process) each send a request head with
`Content-Length: 1000` and then one body byte a second, opening a new connection as soon as
the server answers or closes theirs. A request counts as answered when it gets its 200
within 1 s. Before the servers buffered bodies themselves, 32 such senders took every
request slot and normal clients got nothing but 503s.

    .venv/bin/python -m bench.bench_slow_bodies [--quick]
    .venv/bin/python -m bench.bench_slow_bodies attack PORT SENDERS READY_FILE STATS_FILE
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.figures import figure, print_figure
from bench.measure import exit_on_sigterm, python_env
from bench.serving_load import REPO, ReferenceModel, train_reference_model, wait_healthy
from vertex_retrain.backends.local.serving.model_server import free_port

SENDERS = 200
WITHIN_S = 1.0
TARGET = 0.9
SLOW_HEAD = b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"


# ---- the slow senders' process ----


async def _slow_sender(port: int, stats: Counter[str], stop: asyncio.Event) -> None:
    """One slow sender: a head, then a byte a second; again as soon as the server answers."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            stats["refused connects"] += 1
            await asyncio.sleep(0.1)
            continue
        stats["connections"] += 1
        try:
            writer.write(SLOW_HEAD)
            stats["bytes sent"] += len(SLOW_HEAD)
            while not stop.is_set():
                try:
                    data = await asyncio.wait_for(reader.read(4096), 1.0)
                except TimeoutError:
                    writer.write(b" ")
                    stats["bytes sent"] += 1
                    continue
                found = re.match(rb"HTTP/1\.1 (\d+)", data)
                stats[f"answered {found.group(1).decode()}" if found else "closed"] += 1
                break
        except OSError:
            stats["reset"] += 1
        finally:
            writer.close()


async def _attack(port: int, senders: int, ready: Path, out: Path) -> None:
    stats: Counter[str] = Counter()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    tasks = [asyncio.create_task(_slow_sender(port, stats, stop)) for _ in range(senders)]
    while stats["connections"] < senders and not stop.is_set():
        await asyncio.sleep(0.05)
    ready.write_text("ready")
    await asyncio.gather(*tasks)
    out.write_text(json.dumps(stats))


# ---- the benchmark ----


def _normal_client(port: int, bodies: list[bytes]) -> dict[str, Any]:
    """Sequential requests on new connections; how many got their 200 within `WITHIN_S`."""
    latencies, statuses = [], Counter[str]()
    for body in bodies:
        began = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.request("POST", "/predict", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            status = str(response.status)
        except OSError as error:
            status = type(error).__name__
        finally:
            connection.close()
        took = time.perf_counter() - began
        statuses[status] += 1
        latencies.append(took if status == "200" else float("inf"))
        time.sleep(0.05)
    answered = sum(took <= WITHIN_S for took in latencies)
    finite = sorted(took for took in latencies if took != float("inf")) or [float("nan")]
    return {
        "answered_share": answered / len(bodies),
        "requests": len(bodies),
        "statuses": dict(statuses),
        "p50_ms": 1000 * finite[len(finite) // 2],
        "max_ms": 1000 * finite[-1],
    }


def _under_attack(port: int, bodies: list[bytes], scratch: Path) -> dict[str, Any]:
    ready, out = scratch / f"ready-{port}", scratch / f"stats-{port}.json"
    argv = [sys.executable, "-m", "bench.bench_slow_bodies", "attack", str(port)]
    attacker = subprocess.Popen([*argv, str(SENDERS), str(ready), str(out)], cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            if attacker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the slow senders did not start")
            time.sleep(0.05)
        time.sleep(2.0)  # past the senders' windows: the server waits for their bodies
        began = time.perf_counter()
        client = _normal_client(port, bodies)
        client["attack_s"] = time.perf_counter() - began
    finally:
        attacker.send_signal(signal.SIGTERM)
        attacker.wait(timeout=60)
    client["attack"] = json.loads(out.read_text())
    return client


def _baseline_and_attack(port: int, bodies: list[bytes], scratch: Path) -> dict[str, Any]:
    _normal_client(port, bodies[:10])  # warm-up
    return {"alone": _normal_client(port, bodies), "attacked": _under_attack(port, bodies, scratch)}


def _prediction_server(model: ReferenceModel, bodies: list[bytes], scratch: Path) -> Any:
    port = free_port()
    argv = [sys.executable, "-m", "trainer.serve", "--model_dir", str(model.model_dir)]
    with (scratch / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [*argv, "--port", str(port)],
            cwd=REPO,
            env=python_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(port)
        return _baseline_and_attack(port, bodies, scratch)
    finally:
        server.terminate()
        server.wait(timeout=60)


def _router(model: ReferenceModel, bodies: list[bytes], scratch: Path) -> Any:
    from bench.bench_router import _start_router
    from vertex_retrain.backends.local.environments.builder import build_python_package
    from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    local = scratch / "local"
    env = {**python_env(), "VERTEX_LOCAL_ROOT": str(local)}
    db = local / "registry.db"
    package = build_python_package(
        REPO / "examples" / "drink_shops" / "trainer",
        destination_uri="gs://bench/packages",
        root=local,
    )
    ModelRegistry(db).upload_version(
        "reference",
        artifact_uri=str(model.model_dir),
        container_spec={
            "imageUri": "local/trainer-serve",
            "command": ["python", "-m", "trainer.serve"],
            "predictRoute": "/predict",
            "healthRoute": "/health",
        },
        sample_instances=[json.loads(bodies[0])["instances"][0]],
        serving_package_uri=package.uri,
        serving_extras=["serve"],
    )
    endpoints = LocalEndpoints(db)
    endpoints.get_or_create("reference")
    saved = os.environ.get("VERTEX_LOCAL_ROOT")
    os.environ["VERTEX_LOCAL_ROOT"] = str(local)  # the server's logs stay in scratch
    try:
        endpoints.deploy("reference", "reference")
        router, port = _start_router("reference", env)
        try:
            return _baseline_and_attack(port, bodies, scratch)
        finally:
            router.terminate()  # `serve` stops the endpoint's model servers as it exits
            router.communicate(timeout=60)
    finally:
        if saved is None:
            os.environ.pop("VERTEX_LOCAL_ROOT", None)
        else:
            os.environ["VERTEX_LOCAL_ROOT"] = saved


def run(quick: bool) -> dict[str, Any]:
    """Both servers, alone and under the slow senders.

    Args:
        quick: 40 requests per run instead of 200.

    Returns:
        The report's figure: the prediction server's answered share under attack against
        its share alone, the router's in the rows; met when both reach 90%.
    """
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="bench-slow-bodies-") as folder:
        scratch = Path(folder)
        model = train_reference_model(scratch / "train")
        bodies = [model.body(rng, 1) for _ in range(40 if quick else 200)]
        server = _prediction_server(model, bodies, scratch)
        router = _router(model, bodies, scratch)
    return _figure(server, router)


def _figure(server: dict[str, Any], router: dict[str, Any]) -> dict[str, Any]:
    share = {
        name: side["attacked"]["answered_share"]
        for name, side in (("server", server), ("router", router))
    }
    met = min(share.values()) >= TARGET
    attack = server["attacked"]["attack"]
    notes = (
        "During the prediction server's run the slow senders opened "
        f"{attack.get('connections', 0):,} connections in "
        f"{server['attacked']['attack_s']:.0f} s and sent "
        f"{attack.get('bytes sent', 0) / 1000:.0f} KB; the server answered "
        f"{attack.get('answered 503', 0):,} of them 503 (more bodies arriving than it waits "
        f"for at once) and {attack.get('answered 408', 0):,} 408 (a body past its deadline). "
        "The server holds a request until its body has arrived, so slow senders take none of "
        "its 32 request slots; at most 32 bodies are awaited at once, each within 5 s plus its "
        "size at 50 kB/s. Statuses of the normal client, alone and attacked: server "
        f"{server['alone']['statuses']} / {server['attacked']['statuses']}, router "
        f"{router['alone']['statuses']} / {router['attacked']['statuses']}."
    )
    if not met:
        notes += (
            " Missed: on 2 cores the senders' reconnections, the server and the client share "
            "the CPU; the answered share falls with the load, not with slots held."
        )
    return figure(
        name="Serving: slow request bodies",
        what=(
            f"A normal client sends {server['alone']['requests']} one-instance predict "
            "requests in turn, each on a new connection, to `python -m trainer.serve` and to "
            "the endpoint router in front of it, first alone (baseline) and then while "
            f"{SENDERS} slow senders each send a `Content-Length: 1000` head and one body byte "
            "a second, reconnecting as soon as they are answered (`bench/bench_slow_bodies.py`)."
            f" Answered: a 200 within {WITHIN_S:g} s."
        ),
        baseline=("prediction server, alone: answered share", server["alone"]["answered_share"]),
        measured=(
            f"prediction server, {SENDERS} slow senders: answered share",
            share["server"],
        ),
        unit="share",
        ratio_meaning="answered share attacked / alone",
        target=f">= {TARGET:.0%} answered within {WITHIN_S:g} s on both servers",
        met=met,
        notes=notes,
        rows=[
            ("router, alone: answered share", router["alone"]["answered_share"], "share"),
            (f"router, {SENDERS} slow senders: answered share", share["router"], "share"),
            ("p50, prediction server alone", server["alone"]["p50_ms"], "ms"),
            ("p50, prediction server attacked", server["attacked"]["p50_ms"], "ms"),
            ("slowest answer, prediction server attacked", server["attacked"]["max_ms"], "ms"),
            ("p50, router alone", router["alone"]["p50_ms"], "ms"),
            ("p50, router attacked", router["attacked"]["p50_ms"], "ms"),
            ("slowest answer, router attacked", router["attacked"]["max_ms"], "ms"),
        ],
        plot={
            "kind": "bar",
            "categories": ["prediction server", "router"],
            "series": {
                "alone": [server["alone"]["answered_share"], router["alone"]["answered_share"]],
                f"{SENDERS} slow senders": [share["server"], share["router"]],
            },
            "ylabel": f"share answered within {WITHIN_S:g} s",
            "reference": {"label": "target", "value": TARGET},
        },
    )


def main() -> None:
    """Prints the figure of one run, or runs the slow senders (`attack`)."""
    if sys.argv[1:2] == ["attack"]:
        port, senders, ready, out = sys.argv[2:6]
        asyncio.run(_attack(int(port), int(senders), Path(ready), Path(out)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 requests per run")
    print_figure(run(parser.parse_args().quick))


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    main()

"""What the serving benchmarks share: a trained reference model, requests, a load generator.

The model is trained the way a pipeline trains it, through the trainer's command line
(`trainer.data generate`, then `trainer.task` for a few steps): a real artifact of the current
model, small enough to make in seconds. Its cost per request does not depend on how many
members it knows (an embedding lookup) but on the catalogue (96 drinks, as at seed scale)
and the network's widths, which are the trainer's defaults.

The load generator runs in the benchmark's process, apart from the servers it measures: an
asyncio client over kept-alive connections whose answers httptools parses, costing a few
tens of microseconds a request, so on 2 cores most of the CPU is left to the servers (a
thread per client with `http.client` in the server's own process, as before, measured mostly
the client and the GIL).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httptools
import numpy as np

from bench.measure import python_env

REPO = Path(__file__).resolve().parent.parent
MEMBERS, STORES, WEEKS, TRAIN_STEPS = 2000, 200, 8, 40
TIMESTAMP = "2023-02-24T08:30:00"
TOP_K = 10


@dataclass(frozen=True)
class ReferenceModel:
    """A trained artifact of the reference recommender and ids it knows.

    Attributes:
        model_dir: The artifact folder (`AIP_STORAGE_URI`).
        members: Member ids in its vocabulary.
        stores: Store ids in its catalogue.
    """

    model_dir: Path
    members: list[int]
    stores: list[int]

    def body(self, rng: np.random.Generator, instances: int) -> bytes:
        """A predict request: `instances` random (member, store) pairs, top 10 each."""
        chosen = [
            {
                "member_id": int(rng.choice(self.members)),
                "store_id": int(rng.choice(self.stores)),
                "timestamp": TIMESTAMP,
                "k": TOP_K,
            }
            for _ in range(instances)
        ]
        return json.dumps({"instances": chosen}).encode()


def _run(argv: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        [sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-1500:]}")


def train_reference_model(root: Path) -> ReferenceModel:
    """Generate a small dataset under `root` and train the reference model on it (seconds).

    Raises:
        RuntimeError: A step failed (its stderr is in the message).
    """
    data, model_dir = root / "data", root / "model"
    sizes = ["--members", str(MEMBERS), "--stores", str(STORES), "--weeks", str(WEEKS)]
    _run(["-m", "trainer.data", "generate", *sizes, "--seed", "0", "--out", str(data)])
    env = {**python_env(), "AIP_MODEL_DIR": str(model_dir)}
    folders = ["--output_dir", str(root / "out"), "--cache_dir", str(root / "cache")]
    steps = ["--epochs", "1", "--max_steps", str(TRAIN_STEPS)]
    _run(["-m", "trainer.task", "--data", str(data), *folders, *steps], env)
    members = json.loads((model_dir / "vocab.json").read_text())["member_ids"]
    stores = json.loads((model_dir / "catalogue.json").read_text())["store_ids"]
    return ReferenceModel(model_dir, members, stores)


class _Client(asyncio.Protocol):
    """One kept-alive connection sending one request at a time."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._done: asyncio.Future[None] | None = None
        self.status = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        self._parser.feed_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_exception(ConnectionError("the server closed the connection"))

    def on_message_complete(self) -> None:
        self.status = self._parser.get_status_code()
        assert self._done is not None
        self._done.set_result(None)

    async def exchange(self, request: bytes) -> int:
        assert self._transport is not None
        self._done = asyncio.get_running_loop().create_future()
        self._transport.write(request)
        await self._done
        return self.status


@dataclass(frozen=True)
class Load:
    """What one load run measured.

    Attributes:
        latencies_s: Seconds of each request, from its first byte sent to its answer's last.
        seconds: Wall time of the whole run.
        clients: Connections sending at once.
    """

    latencies_s: list[float]
    seconds: float
    clients: int

    @property
    def requests_per_s(self) -> float:
        """Throughput of the run."""
        return len(self.latencies_s) / self.seconds

    def quantile_ms(self, q: float) -> float:
        """A latency quantile (0.5: p50) in milliseconds."""
        ordered = sorted(self.latencies_s)
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def p50_ms(self) -> float:
        """Median latency in milliseconds."""
        return 1000 * statistics.median(self.latencies_s)


async def _load(port: int, path: str, bodies: list[bytes], clients: int) -> Load:
    loop = asyncio.get_running_loop()
    connections = [
        (await loop.create_connection(_Client, "127.0.0.1", port))[1] for _ in range(clients)
    ]
    requests = [
        b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body)
        for body in bodies
    ]
    latencies: list[float] = []

    async def client(connection: _Client, share: list[bytes]) -> None:
        for request in share:
            began = time.perf_counter()
            status = await connection.exchange(request)
            latencies.append(time.perf_counter() - began)
            if status != 200:
                raise RuntimeError(f"POST {path} on port {port} answered {status}")

    began = time.perf_counter()
    await asyncio.gather(*(client(c, requests[i::clients]) for i, c in enumerate(connections)))
    seconds = time.perf_counter() - began
    for connection in connections:
        assert connection._transport is not None
        connection._transport.close()
    return Load(latencies, seconds, clients)


def measure(port: int, path: str, bodies: list[bytes], clients: int = 1) -> Load:
    """Send every body once over `clients` kept-alive connections, each waiting for its
    answer before its next request; raises RuntimeError on an answer other than 200."""
    return asyncio.run(_load(port, path, bodies, clients))


def wait_healthy(port: int, route: str = "/health", timeout_s: float = 120.0) -> None:
    """Poll a server's health route until it answers 200.

    Raises:
        TimeoutError: It did not within `timeout_s`.
    """
    import http.client

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            connection.request("GET", route)
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.1)
    raise TimeoutError(f"no healthy server on port {port} after {timeout_s:g} s")


def cpu_seconds(pid: int, *, group: bool = False) -> float:
    """User plus system CPU seconds a process has used so far (Linux /proc); with `group`,
    those of every process in the group it leads (a deployed model's keeper and server)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat") if group else [Path(f"/proc/{pid}/stat")]:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended meanwhile
        if not group or int(fields[2]) == pid:  # fields[2]: the process group
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def describe(load: Load) -> dict[str, Any]:
    """p50, p99 (ms) and requests/s of a run."""
    return {
        "p50_ms": load.p50_ms(),
        "p99_ms": load.quantile_ms(0.99),
        "requests_per_s": load.requests_per_s,
    }


class _Pipe(asyncio.Protocol):
    """One side of the byte proxy: what arrives is written to the other side."""

    def __init__(self, other: asyncio.Transport | None = None) -> None:
        self.other = other
        self.transport: asyncio.Transport | None = None
        self.pending: list[bytes] = []
        self.connecting: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        if self.other is None:
            self.pending.append(data)
        else:
            self.other.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.other is not None:
            self.other.close()


async def _byte_proxy(upstream: int, ready: Path) -> None:
    loop = asyncio.get_running_loop()

    def accept() -> _Pipe:
        client = _Pipe()

        async def connect() -> None:
            transport, _ = await loop.create_connection(
                lambda: _Pipe(client.transport), "127.0.0.1", upstream
            )
            client.other = transport
            for data in client.pending:
                transport.write(data)

        client.connecting = loop.create_task(connect())
        return client

    server = await loop.create_server(accept, "127.0.0.1", 0)
    ready.write_text(str(server.sockets[0].getsockname()[1]))
    await server.serve_forever()


def start_byte_proxy(upstream: int, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A process that copies bytes between a client and `upstream`, parsing nothing: the
    least any router adds (one more loopback hop and process), the floor to compare with."""
    ready = folder / "byte-proxy.port"
    proxy = subprocess.Popen(
        [sys.executable, "-m", "bench.serving_load", str(upstream), str(ready)], cwd=REPO
    )
    deadline = time.monotonic() + 60
    while not ready.exists() or not ready.read_text():
        if proxy.poll() is not None or time.monotonic() > deadline:
            proxy.kill()
            raise RuntimeError("the byte proxy did not start")
        time.sleep(0.05)
    return proxy, int(ready.read_text())


if __name__ == "__main__":  # the byte proxy's process (start_byte_proxy)
    asyncio.run(_byte_proxy(int(sys.argv[1]), Path(sys.argv[2])))

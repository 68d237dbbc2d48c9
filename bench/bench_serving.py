"""Prediction server latency (p50/p99) and throughput on 127.0.0.1.

`python -m bench.bench_serving [--full]`. A model is exported from a small generated dataset
(untrained weights: scoring cost does not depend on their values) and served in-process.
Baseline in the same run: `Predictor.predict` called directly, without HTTP; the ratio is the
share of the model's own throughput that survives the HTTP layer.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.data import generate
from trainer.export import export_model
from trainer.features import encode_rows, read_catalogue, read_columns, store_popularity
from trainer.model import DrinkRecommender, ModelConfig
from trainer.predictor import Predictor
from trainer.serve import start_server
from trainer.split import plan_time_split
from trainer.world import WorldConfig


def _export(root: Path, members: int) -> tuple[Path, list[int], list[int]]:
    generate(WorldConfig(members=members, stores=200, weeks=3, seed=0), root / "data")
    manifest = plan_time_split(str(root / "data"))
    catalogue = read_catalogue(manifest)
    columns = read_columns(manifest, "train")
    vocab = np.unique(columns["member_id"])
    rows = encode_rows(columns, vocab, catalogue)
    popularity = store_popularity(rows, catalogue, columns["week"], 4)
    torch.manual_seed(0)
    config = ModelConfig(
        int(vocab.size),
        int(catalogue.store_ids.size),
        int(catalogue.drink_ids.size),
        catalogue.n_categories,
        32,
        64,
    )
    export_model(root / "model", DrinkRecommender(config), catalogue, vocab, popularity, {})
    return root / "model", vocab.tolist(), catalogue.store_ids.tolist()


def _instances(
    rng: np.random.Generator, members: list[int], stores: list[int], n: int
) -> list[dict[str, Any]]:
    return [
        {
            "member_id": int(rng.choice(members)),
            "store_id": int(rng.choice(stores)),
            "timestamp": f"2023-01-{rng.integers(10, 20)}T{rng.integers(7, 22):02d}:30:00",
        }
        for _ in range(n)
    ]


def _client(port: int, bodies: list[bytes], latencies: list[float]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for body in bodies:
        began = time.perf_counter()
        conn.request("POST", "/predict", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        latencies.append(time.perf_counter() - began)
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")
    conn.close()


def run(quick: bool, clients: int = 4, batch: int = 1) -> dict[str, Any]:
    """Serve and load-test a model.

    Args:
        quick: 400 requests; otherwise 4,000 (always bounded).
        clients: concurrent keep-alive connections for the throughput phase.
        batch: instances per request.
    """
    requests = 400 if quick else 4000
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir, members, stores = _export(Path(tmp), 2000 if quick else 20000)
        bodies = [
            json.dumps({"instances": _instances(rng, members, stores, batch)}).encode()
            for _ in range(requests)
        ]
        predictor = Predictor(model_dir)
        began = time.perf_counter()
        for body in bodies:
            predictor.predict(json.loads(body)["instances"])
        direct_rps = requests / (time.perf_counter() - began)
        with start_server(model_dir) as server:
            port = int(server.url.rsplit(":", 1)[1])
            sequential: list[float] = []
            _client(port, bodies, sequential)
            concurrent: list[float] = []
            threads = [
                threading.Thread(target=_client, args=(port, bodies[i::clients], concurrent))
                for i in range(clients)
            ]
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            concurrent_seconds = time.perf_counter() - began
    quantiles = statistics.quantiles(sequential, n=100)
    sequential_rps = requests / sum(sequential)
    return {
        "requests": requests,
        "instances_per_request": batch,
        "p50_ms": quantiles[49] * 1e3,
        "p99_ms": quantiles[98] * 1e3,
        "sequential_requests_per_s": sequential_rps,
        "concurrent_clients": clients,
        "concurrent_requests_per_s": requests / concurrent_seconds,
        "direct_predict_calls_per_s": direct_rps,
        "ratio_http_vs_direct": sequential_rps / direct_rps,
    }


def main() -> None:
    """CLI: print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_serving", description=__doc__)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--batch", type=int, default=1, help="instances per request")
    args = parser.parse_args()
    figures = run(not args.full, batch=args.batch)
    print(json.dumps(figures, indent=2))
    print(
        f"p50 {figures['p50_ms']:.2f} ms, p99 {figures['p99_ms']:.2f} ms, "
        f"{figures['sequential_requests_per_s']:,.0f} req/s sequential, "
        f"{figures['concurrent_requests_per_s']:,.0f} req/s with "
        f"{figures['concurrent_clients']} clients; "
        f"HTTP keeps {figures['ratio_http_vs_direct']:.2f} of direct predict throughput"
    )


if __name__ == "__main__":
    main()

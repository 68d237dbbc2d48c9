"""Mapping benchmarks that return their own dicts onto the report's shape.

`bench_executor`, `bench_router`, `bench_trainer`, `bench_serving` and `bench_datagen`
predate `bench.figures.figure`; each adapter reads their keys. A benchmark whose keys
change falls back to a raw table in the report rather than failing it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bench.figures import figure

TRAINER_TARGET = 0.9


def _executor(raw: Mapping[str, Any]) -> dict[str, Any]:
    return figure(
        name="Local executor overhead",
        what=(
            f"A CPU-bound script running {raw['user_seconds']} s of user code, {raw['repeats']} "
            "times as a local CustomJob (`run_custom_job`) and as a bare "
            "`subprocess.run([python, script])`; medians of wall time / the script's own "
            "running time."
        ),
        baseline=("bare subprocess: wall / user time", raw["baseline_wall_over_user"]),
        measured=("local CustomJob: wall / user time", raw["executor_wall_over_user"]),
        unit="x",
        notes="The issue sets no target for the executor alone; see Local run overhead.",
        rows=[
            ("start latency, bare subprocess", raw["baseline_start_seconds"], "s"),
            ("start latency, local CustomJob", raw["executor_start_seconds"], "s"),
            ("start latency ratio", raw["start_ratio_vs_baseline"], "x"),
        ],
        plot={
            "kind": "bar",
            "categories": ["start latency (s)", "wall / user time"],
            "series": {
                "bare subprocess": [
                    raw["baseline_start_seconds"],
                    raw["baseline_wall_over_user"],
                ],
                "local CustomJob": [
                    raw["executor_start_seconds"],
                    raw["executor_wall_over_user"],
                ],
            },
            "ylabel": "seconds / ratio",
        },
    )


def _router(raw: Mapping[str, Any]) -> dict[str, Any]:
    server, router, ratio = raw["server"], raw["router"], raw["ratio"]
    return figure(
        name="Serving: endpoint router + prediction server",
        what=(
            f"{raw['requests_per_side']} sequential keep-alive POST requests per side to a "
            "locally deployed prediction server, alternating blocks between the server alone "
            "(baseline) and the endpoint router in front of it (`bench/bench_router.py`)."
        ),
        baseline=("prediction server alone, p50", server["p50_ms"]),
        measured=("router + prediction server, p50", router["p50_ms"]),
        unit="ms",
        ratio_meaning="router p50 / server p50 (above 1: the router's cost)",
        notes="The issue sets no target for serving; p99 and requests/s are in the table.",
        rows=[
            ("p99, server alone", server["p99_ms"], "ms"),
            ("p99, router + server", router["p99_ms"], "ms"),
            ("p99 ratio", ratio["p99"], "x"),
            ("requests/s, server alone", server["requests_per_s"], "req/s"),
            ("requests/s, router + server", router["requests_per_s"], "req/s"),
            ("throughput cost (server req/s / router req/s)", ratio["throughput"], "x"),
        ],
        plot={
            "kind": "bar",
            "categories": ["p50 (ms)", "p99 (ms)"],
            "series": {
                "server alone": [server["p50_ms"], server["p99_ms"]],
                "router + server": [router["p50_ms"], router["p99_ms"]],
            },
            "ylabel": "latency (ms)",
        },
    )


def _trainer(raw: Mapping[str, Any]) -> dict[str, Any]:
    ratio = float(raw["ratio"])
    target = float(raw.get("target_ratio", TRAINER_TARGET))
    met = ratio >= target
    notes = (
        f"Both loops train from the same weights on the same batches ({raw['steps']} steps of "
        f"{raw['batch_size']} rows, {raw['train_rows']:,} training rows, on {raw['device']}); "
        "the best of interleaved repetitions is kept."
    )
    if not met:
        notes += (
            " Missed: the trainer loop's per-step extras (stop checks, loss logging, "
            "progress.json, TensorBoard scalars, checkpoints every "
            f"{raw['checkpoint_every_steps']} steps) cost more than 10% at this step size; "
            "larger batches or less frequent logging and checkpoints amortise them."
        )
    return figure(
        name="Trainer throughput",
        what=(
            "Training samples/s of `trainer.task`'s loop against a bare PyTorch loop over the "
            "same model and data (`bench/bench_trainer.py`)."
        ),
        baseline=("bare PyTorch loop", raw["bare_samples_per_s"]),
        measured=("trainer.task loop", raw["trainer_samples_per_s"]),
        unit="samples/s",
        ratio_meaning="trainer throughput / bare-loop throughput",
        target=f"ratio >= {target:g}",
        met=met,
        notes=notes,
        rows=[
            ("checkpoint every", raw["checkpoint_every_steps"], "steps"),
            ("embedding dim", raw["embedding_dim"], ""),
        ],
        plot={
            "kind": "bar",
            "categories": ["samples/s"],
            "series": {
                "bare PyTorch loop": [raw["bare_samples_per_s"]],
                "trainer.task loop": [raw["trainer_samples_per_s"]],
            },
            "ylabel": "training samples per second",
        },
    )


def _serving(raw: Mapping[str, Any]) -> dict[str, Any]:
    return figure(
        name="Serving: prediction server over HTTP",
        what=(
            f"{raw['requests']:,} requests of {raw['instances_per_request']} instance(s) to the "
            "reference prediction server (`trainer.serve`) over HTTP, sequentially and with "
            f"{raw['concurrent_clients']} concurrent clients, against calling the predictor "
            "directly in-process (`bench/bench_serving.py`)."
        ),
        baseline=("direct predictor calls", raw["direct_predict_calls_per_s"]),
        measured=("HTTP requests, sequential", raw["sequential_requests_per_s"]),
        unit="req/s",
        ratio_meaning="HTTP throughput / direct-call throughput",
        notes="The issue sets no target for the prediction server alone.",
        rows=[
            ("p50 latency", raw["p50_ms"], "ms"),
            ("p99 latency", raw["p99_ms"], "ms"),
            (
                f"{raw['concurrent_clients']} concurrent clients",
                raw["concurrent_requests_per_s"],
                "req/s",
            ),
        ],
        plot={
            "kind": "bar",
            "categories": ["requests/s"],
            "series": {
                "direct predictor": [raw["direct_predict_calls_per_s"]],
                "HTTP sequential": [raw["sequential_requests_per_s"]],
                "HTTP concurrent": [raw["concurrent_requests_per_s"]],
            },
            "ylabel": "requests per second",
        },
    )


def _datagen(raw: Mapping[str, Any]) -> dict[str, Any]:
    return figure(
        name="Synthetic data generation",
        what=(
            f"`trainer.data.generate` for {raw['members']:,} members x {raw['stores']:,} stores "
            f"x {raw['weeks']} weeks ({raw['rows']:,} rows), against writing the same tables "
            "to Parquet alone (`bench/bench_datagen.py`)."
        ),
        baseline=("Parquet write only", raw["parquet_write_only_rows_per_s"]),
        measured=("generate end to end", raw["rows_per_s"]),
        unit="rows/s",
        ratio_meaning="generation rate / write-only rate",
        notes="The issue sets no target; full-scale figures are extrapolated, not generated.",
        rows=[
            ("bytes per row", raw["bytes_per_row"], "B"),
            ("full scale rows (extrapolated)", raw["full_scale_rows_extrapolated"], ""),
            ("full scale size (extrapolated)", raw["full_scale_bytes_extrapolated"] / 1e9, "GB"),
            ("full scale time (extrapolated)", raw["full_scale_seconds_extrapolated"] / 60, "min"),
        ],
        plot={
            "kind": "bar",
            "categories": ["rows/s"],
            "series": {
                "Parquet write only": [raw["parquet_write_only_rows_per_s"]],
                "generate end to end": [raw["rows_per_s"]],
            },
            "ylabel": "rows per second",
        },
    )


ADAPTERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "bench_executor": _executor,
    "bench_router": _router,
    "bench_trainer": _trainer,
    "bench_serving": _serving,
    "bench_datagen": _datagen,
}

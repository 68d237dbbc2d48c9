"""``estimate`` words its assumptions for the pipeline as configured: the machine its training
job holds (no GPU named for a CPU-only job), and a trainer source it cannot read here."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from tests.examples import DRINK_SHOPS
from vertex_retrain.cli.compile_commands import cli_estimate, hours_assumption

WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"
CPU_ONLY = ["machine_type=n1-standard-4", "accelerator_type=", "accelerator_count=0"]


def _estimate(params: list[str]) -> str:
    out = io.StringIO()
    args = argparse.Namespace(name=WEEKLY, param=params, training_hours=2.0)
    assert cli_estimate(args, out=out) == 0
    return out.getvalue()


def test_estimate_names_no_gpu_for_a_cpu_only_training_job() -> None:
    lines = _estimate(CPU_ONLY).splitlines()
    (assumption,) = [line for line in lines if line.startswith("assumption:")]
    assert "takes 2 h on its machine (no GPU)" in assumption
    assert "one GPU" not in assumption and "multi-GPU" not in assumption
    assert "train: no GPU" in lines and "train: 0 GPU(s)" not in lines


def test_estimate_names_one_gpu_for_a_gpu_training_job() -> None:
    text = _estimate(["accelerator_count=1"])
    assert "one training job takes 2 h on one GPU (--training-hours" in text
    assert "train: 1 GPU(s)" in text and "no GPU" not in text


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ([0, 0], "2 h on its machine (no GPU)"),
        ([1, 0], "2 h on one GPU (a job without a GPU: on its machine)"),
        ([4], "2 h on one GPU (--training-hours"),
    ],
)
def test_hours_assumption_follows_the_jobs_machines(gpus: list[int], expected: str) -> None:
    assert expected in hours_assumption(2.0, gpus)


def test_estimate_says_how_to_read_a_cloud_storage_source_it_cannot_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    source = "source_uri=gs://my-bucket/nowhere"
    (month,) = [line for line in _estimate([source]).splitlines() if "  month:" in line]
    assert "'gs://my-bucket/nowhere' cannot be read on this machine: pass --param " in month
    assert "source_uri=<local path> to read it" in month

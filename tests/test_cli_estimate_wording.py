"""``estimate`` words its assumptions for the pipeline as configured: the machine its training
job holds (no GPU named for a CPU-only job), and a trainer source it cannot read here."""

from __future__ import annotations

import argparse
import io

import pytest

from tests.examples import DRINK_SHOPS
from vertex_retrain.cli.compile_commands import cli_estimate, hours_assumption

WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"
CPU_ONLY = ("machine_type=n1-standard-4", "accelerator_type=", "accelerator_count=0")
UNREADABLE_SOURCE = "source_uri=gs://my-bucket/nowhere"


def _estimate(params: tuple[str, ...]) -> str:
    out = io.StringIO()
    args = argparse.Namespace(name=WEEKLY, param=list(params), training_hours=2.0)
    assert cli_estimate(args, out=out) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def cpu_estimate(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The estimate of a CPU-only job whose source is a gs:// folder not on this machine
    (one estimate for the tests that read it: each takes seconds)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path_factory.mktemp("empty-root")))
        return _estimate((*CPU_ONLY, UNREADABLE_SOURCE))


def test_estimate_names_no_gpu_for_a_cpu_only_training_job(cpu_estimate: str) -> None:
    lines = cpu_estimate.splitlines()
    (assumption,) = [line for line in lines if line.startswith("assumption:")]
    assert "takes 2 h on its machine (no GPU)" in assumption
    assert "one GPU" not in assumption and "multi-GPU" not in assumption
    assert "train: no GPU" in lines and "train: 0 GPU(s)" not in lines


def test_estimate_names_one_gpu_for_a_gpu_training_job() -> None:
    text = _estimate(("accelerator_count=1",))
    assert "one training job takes 2 h on one GPU (--training-hours" in text
    assert "train: 1 GPU(s)" in text and "no GPU" not in text


def test_estimate_says_how_to_read_a_cloud_storage_source_it_cannot_read_here(
    cpu_estimate: str,
) -> None:
    (month,) = [line for line in cpu_estimate.splitlines() if "  month:" in line]
    assert "'gs://my-bucket/nowhere' cannot be read on this machine: pass --param " in month
    assert "source_uri=<local path> to read it" in month


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

"""Spot rehearsal: preemptions, resume from checkpoint, STOCKOUT after six restarts, goodput."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.executor import FAILED, SUCCEEDED, run_custom_job
from vertex_retrain.backends.local.jobs.job_payload import JobSpecError
from vertex_retrain.backends.local.jobs.spot import GoodputStats, PreemptionSchedule, Progress

JOBS = Path(__file__).parent / "data" / "local_jobs"
STEPS = 30


@pytest.fixture
def image(root: Path) -> str:
    return build_container_image(JOBS, image_uri="us-docker.pkg.dev/p/r/jobs:v1").uri


def spot_job(image: str, args: list[str], strategy: str = "SPOT") -> dict[str, Any]:
    return {
        "displayName": "spot job",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": image, "args": ["resumable_trainer.py", *args]},
                }
            ],
            "scheduling": {"strategy": strategy},
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/spot"},
        },
    }


@pytest.mark.slow
def test_run_custom_job_spot_resumes_across_two_preemptions(root: Path, image: str) -> None:
    # Each attempt is preempted 1 s after it starts: ample time for the trainer to install
    # its SIGTERM handler even on a loaded machine, and (at 0.1 s a step) too little for the
    # second attempt to finish the steps the first left, on any machine.
    schedule = PreemptionSchedule(after_seconds=1.0, max_preemptions=2, grace_seconds=2.0)
    lines: list[str] = []
    result = run_custom_job(
        spot_job(image, [f"--steps={STEPS}", "--step-seconds=0.1", "--checkpoint-every=4"]),
        preemption=schedule,
        on_log=lines.append,
    )
    assert result.state == SUCCEEDED, result.error
    assert result.restarts == 2
    model = json.loads((root / "gcs" / "bkt" / "spot" / "model" / "result.json").read_text())
    assert model == {"total": sum(i * i for i in range(STEPS)), "steps": STEPS}
    assert sum("SIGTERM: checkpointed" in line for line in lines) == 2
    starts = [line for line in lines if "starting at step" in line]
    assert starts[0].endswith("step 0") and not starts[1].endswith("step 0")
    goodput = result.goodput
    assert [a["outcome"] for a in goodput.attempts] == ["preempted", "preempted", "succeeded"]
    assert goodput.useful_steps == STEPS
    assert goodput.executed_steps >= STEPS
    assert goodput.goodput == pytest.approx(STEPS / goodput.executed_steps, abs=1e-4)
    assert goodput.time_lost_seconds >= 0
    state = json.loads((result.job_dir / "state.json").read_text())
    assert state["goodput"]["restarts"] == 2


@pytest.mark.slow
def test_run_custom_job_spot_fails_with_stockout_on_seventh_preemption(
    root: Path, image: str
) -> None:
    schedule = PreemptionSchedule(after_seconds=0.4, grace_seconds=0.5)
    result = run_custom_job(
        spot_job(image, ["--steps=1000", "--step-seconds=0.05"]),
        preemption=schedule,
        on_log=lambda _: None,
    )
    assert result.state == FAILED
    assert result.restarts == 6
    assert "STOCKOUT" in (result.error or "") and "7 times" in (result.error or "")
    assert len(result.goodput.attempts) == 7
    assert all(a["outcome"] == "preempted" for a in result.goodput.attempts)
    assert result.goodput.time_lost_seconds > 0


def test_run_custom_job_preemption_needs_spot_strategy(root: Path, image: str) -> None:
    with pytest.raises(JobSpecError, match="strategy"):
        run_custom_job(
            spot_job(image, [], strategy="STANDARD"),
            preemption=PreemptionSchedule(after_seconds=1),
        )


def test_preemption_schedule_random_is_seeded_and_bounded() -> None:
    first = PreemptionSchedule(rate_per_second=2.0, seed=7, max_preemptions=3).delays()
    again = PreemptionSchedule(rate_per_second=2.0, seed=7, max_preemptions=3).delays()
    other = PreemptionSchedule(rate_per_second=2.0, seed=8, max_preemptions=3).delays()
    assert first == again and first != other
    assert all(d is not None and d > 0 for d in first[:3])
    assert first[3:] == [None] * 4


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"after_seconds": 1, "rate_per_second": 1},
        {"after_seconds": 0},
        {"after_seconds": 1, "max_preemptions": -1},
    ],
)
def test_preemption_schedule_rejects_bad_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"PreemptionSchedule|max_preemptions"):
        PreemptionSchedule(**kwargs)


def test_goodput_counts_redone_steps_and_lost_time() -> None:
    stats = GoodputStats()
    stats.record_attempt(
        "preempted", 10.0, None, Progress(step=8, checkpoint_step=5, total_steps=20), 2.0
    )
    stats.record_attempt("succeeded", 15.0, Progress(8, 5, 20), Progress(20, 20, 20), 0.1)
    assert stats.executed_steps == 8 + 15
    assert stats.useful_steps == 20
    assert stats.goodput == pytest.approx(20 / 23, abs=1e-4)
    # 3 of the first attempt's 8 steps were lost (3/8 of its 8 s of running) + 2 s to stop it.
    assert stats.time_lost_seconds == pytest.approx(8.0 * 3 / 8 + 2.0)


def test_goodput_without_progress_file_counts_whole_preempted_attempt() -> None:
    stats = GoodputStats()
    stats.record_attempt("preempted", 4.0, None, None, 1.0)
    assert stats.goodput is None and stats.useful_steps is None
    assert stats.time_lost_seconds == pytest.approx(4.0)

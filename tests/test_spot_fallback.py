"""A week that finishes despite Spot: lost Spot capacity falls back to on-demand and resumes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.base import CustomJobRun, JobFailedError
from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.spot import GoodputStats, Progress, stockout_message
from vertex_retrain.rules.job_failure import JobFailure
from vertex_retrain.rules.spot_fallback import FallbackPolicy, decide_fallback
from vertex_retrain.steps.train import TrainingJobFailedError, TrainingRequest, train

JOBS = Path(__file__).parent / "data" / "local_jobs"
STOCKOUT = stockout_message(7)


def _decide(**overrides: Any) -> Any:
    arguments: dict[str, Any] = {
        "strategy": "SPOT",
        "failure": JobFailure(state="JOB_STATE_FAILED", message=STOCKOUT),
        "policy": FallbackPolicy(enabled=True, deadline_seconds=3600),
        "elapsed_seconds": 600.0,
        "job_timeout_seconds": 14400,
    }
    return decide_fallback(**{**arguments, **overrides})


def test_decide_fallback_cuts_the_on_demand_timeout_to_the_deadline() -> None:
    decision = _decide()
    assert decision.fall_back and decision.timeout_seconds == 3000
    assert "STANDARD" in decision.reason
    assert _decide(policy=FallbackPolicy(enabled=True)).timeout_seconds == 14400


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"policy": FallbackPolicy(enabled=False)}, "off"),
        ({"strategy": "STANDARD"}, "not SPOT"),
        ({"failure": JobFailure("JOB_STATE_FAILED", "exited with code 1")}, "another reason"),
        ({"elapsed_seconds": 3600.0}, "no time is left"),
    ],
)
def test_decide_fallback_refuses(overrides: dict[str, Any], why: str) -> None:
    decision = _decide(**overrides)
    assert not decision.fall_back and why in decision.reason


def test_fallback_policy_rejects_a_negative_deadline() -> None:
    with pytest.raises(ValueError, match="spot_fallback_deadline_seconds"):
        FallbackPolicy(enabled=True, deadline_seconds=-1)


def test_goodput_of_a_job_resuming_another_jobs_checkpoint_counts_its_own_steps() -> None:
    stats = GoodputStats()
    # The on-demand job starts from the Spot job's checkpoint at step 12 and runs to 30.
    stats.record_attempt("succeeded", 5.0, Progress(14, 12, 30), Progress(30, 30, 30))
    assert (stats.origin_step, stats.useful_steps, stats.executed_steps) == (12, 18, 18)
    assert stats.goodput == 1.0


@dataclass
class _ScriptedBackend:
    """Fails the first job with ``failure``, then runs the next ones."""

    failure: str
    name: str = "local"
    payloads: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def run_custom_job(self, payload: dict[str, Any], **options: Any) -> CustomJobRun:
        self.payloads.append(payload)
        self.calls.append(options)
        Path(options["gcp_resources_path"]).write_text(json.dumps({"job": len(self.payloads)}))
        if len(self.payloads) == 1:
            raise JobFailedError(self.failure)
        return CustomJobRun("job-2", "JOB_STATE_SUCCEEDED", "gs://b/out/model", 1.0, 0, {})


def _request(**overrides: Any) -> TrainingRequest:
    fields: dict[str, Any] = {
        "backend": "local",
        "display_name": "fallback",
        "base_output_directory": "gs://b/out",
        "image_uri": "us-docker.pkg.dev/p/r/jobs:v1",
        "machine_type": "n1-standard-4",
        "accelerator_type": "",
        "accelerator_count": 0,
        "scheduling_strategy": "SPOT",
        "timeout_seconds": 600,
        "local_preemption_after_seconds": 1.0,
    }
    return TrainingRequest(**{**fields, **overrides})


def test_train_falls_back_to_the_same_job_on_demand(tmp_path: Path) -> None:
    backend = _ScriptedBackend(STOCKOUT)
    resources = tmp_path / "gcp_resources"
    result = train(
        _request(),
        gcp_resources_path=str(resources),
        request_key="run-1-train",
        backend=backend,  # type: ignore[arg-type]
        fallback=FallbackPolicy(enabled=True, deadline_seconds=3600),
    )
    spot, on_demand = (payload["jobSpec"] for payload in backend.payloads)
    assert spot["scheduling"]["strategy"] == "SPOT"
    assert on_demand["scheduling"]["strategy"] == "STANDARD"
    # Same program and output directory: the trainer finds the Spot attempts' checkpoints.
    assert on_demand["workerPoolSpecs"] == spot["workerPoolSpecs"]
    assert on_demand["baseOutputDirectory"] == spot["baseOutputDirectory"]
    assert on_demand["scheduling"]["timeout"] == spot["scheduling"]["timeout"] == "600s"
    second = backend.calls[1]
    assert second["request_key"] == "run-1-train-on-demand"
    assert second["gcp_resources_path"] == f"{resources}.on-demand"
    assert second.get("preemption_after_s", 0.0) == 0.0
    # The task's gcp_resources now names the job that produced the model.
    assert json.loads(resources.read_text()) == {"job": 2}
    assert result.model_uri == "gs://b/out/model"
    assert result.metrics["spot_fallback"] == 1.0
    assert result.metrics["spot_seconds"] >= 0 and "on_demand_seconds" in result.metrics


def test_train_without_fallback_fails_with_the_spot_error(tmp_path: Path) -> None:
    backend = _ScriptedBackend(STOCKOUT)
    with pytest.raises(TrainingJobFailedError, match="STOCKOUT"):
        train(
            _request(),
            gcp_resources_path=str(tmp_path / "gcp_resources"),
            backend=backend,  # type: ignore[arg-type]
        )
    assert len(backend.payloads) == 1


def test_train_does_not_fall_back_after_a_crash(tmp_path: Path) -> None:
    backend = _ScriptedBackend("replica workerpool0-0 exited with code 1")
    with pytest.raises(TrainingJobFailedError, match="code 1"):
        train(
            _request(),
            gcp_resources_path=str(tmp_path / "gcp_resources"),
            backend=backend,  # type: ignore[arg-type]
            fallback=FallbackPolicy(enabled=True),
        )
    assert len(backend.payloads) == 1


@pytest.mark.slow
def test_local_rehearsal_seventh_preemption_then_on_demand_resumes(
    root: Path, tmp_path: Path
) -> None:
    image = build_container_image(JOBS, image_uri="us-docker.pkg.dev/p/r/jobs:v1").uri
    steps = 600
    # Seven Spot attempts of 1 s each (at 0.02 s a step) cannot finish 600 steps, so the
    # seventh preemption fails the Spot job; the on-demand job must finish the rest.
    request = _request(
        image_uri=image,
        args=["resumable_trainer.py", f"--steps={steps}", "--step-seconds=0.02"],
        base_output_directory="gs://bkt/fallback",
    )
    result = train(
        request,
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        fallback=FallbackPolicy(enabled=True, deadline_seconds=600),
    )
    assert result.state == "JOB_STATE_SUCCEEDED"
    assert result.metrics["spot_fallback"] == 1.0
    model = json.loads((root / "gcs" / "bkt" / "fallback" / "model" / "result.json").read_text())
    assert model == {"total": sum(i * i for i in range(steps)), "steps": steps}
    jobs = sorted((root / "jobs").iterdir(), key=lambda job: job.stat().st_mtime)
    spot_state = json.loads((jobs[0] / "state.json").read_text())
    assert "STOCKOUT" in spot_state["error"] and spot_state["restarts"] == 6
    on_demand_log = (jobs[-1] / "logs" / "workerpool0-0.log").read_text()
    first_step = int(on_demand_log.split("starting at step ", 1)[1].split()[0])
    assert 0 < first_step < steps, "the on-demand job started over instead of resuming"
    assert first_step == spot_state["goodput"]["attempts"][-1]["checkpoint_step"]
    # The on-demand job is credited with its own steps only, so its goodput stays <= 1.
    on_demand_goodput = json.loads((jobs[-1] / "state.json").read_text())["goodput"]
    assert on_demand_goodput["useful_steps"] == steps - first_step
    assert result.goodput == on_demand_goodput["goodput"] <= 1.0

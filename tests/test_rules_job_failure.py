"""Whether a failed job lost its capacity: state and structured error first, then known
messages with their sources; an unknown failure is never capacity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.vertex_jobs import FakeJobServiceClient
from vertex_retrain.backends.vertex._protos import job_failure
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.rules.job_failure import KNOWN_MESSAGES, JobFailure, capacity_verdict
from vertex_retrain.rules.spot_fallback import FallbackPolicy
from vertex_retrain.steps.train import TrainingJobFailedError, TrainingRequest, train

FAILED = "JOB_STATE_FAILED"
ZONE = (
    "The zone 'us-central1-a' does not have enough resources available to fulfill the "
    "request. Try a different zone, or try again later."
)


@pytest.mark.parametrize(
    "message",
    [ZONE, "Resources are insufficient in region: us-central1.", "ZONE_RESOURCE_POOL_EXHAUSTED"],
)
def test_capacity_verdict_recognises_known_capacity_messages(message: str) -> None:
    verdict = capacity_verdict(JobFailure(FAILED, message))
    assert verdict.lost_capacity and verdict.source


@pytest.mark.parametrize(
    ("failure", "why"),
    [
        (JobFailure("JOB_STATE_CANCELLED", ZONE), "JOB_STATE_CANCELLED"),
        (JobFailure(FAILED, ZONE, code=7), "PERMISSION_DENIED"),
        (JobFailure(FAILED, ZONE, reasons=("RESOURCE_QUOTA_EXCEEDED",)), "quota"),
        (
            JobFailure(
                FAILED,
                "The following quota metrics exceed quota limits: aiplatform.googleapis.com/"
                "custom_model_training_nvidia_t4_gpus (not enough resources)",
            ),
            "quota metrics exceed",
        ),
        (
            JobFailure(FAILED, "The replica workerpool0-0 exited with a non-zero status of 1."),
            "exited",
        ),
        (JobFailure(FAILED, "my trainer's preemption handler crashed"), "unknown failure"),
        (JobFailure(FAILED, "The replica workerpool0-0 was preempted"), "unknown failure"),
    ],
)
def test_capacity_verdict_refuses_what_is_not_capacity(failure: JobFailure, why: str) -> None:
    verdict = capacity_verdict(failure)
    assert not verdict.lost_capacity and why in verdict.evidence


def test_capacity_verdict_reads_a_structured_reason_before_the_message() -> None:
    verdict = capacity_verdict(
        JobFailure(FAILED, "Internal error", code=8, reasons=("ZONE_RESOURCE_POOL_EXHAUSTED",))
    )
    assert verdict.lost_capacity and "ZONE_RESOURCE_POOL_EXHAUSTED" in verdict.evidence


def test_capacity_verdict_every_known_message_names_its_source() -> None:
    assert all(known.source for known in KNOWN_MESSAGES)
    first_capacity = next(i for i, k in enumerate(KNOWN_MESSAGES) if k.capacity)
    assert not any(k.capacity for k in KNOWN_MESSAGES[:first_capacity])
    assert all(k.capacity for k in KNOWN_MESSAGES[first_capacity:])


ERROR_INFO = {
    "code": 8,
    "message": "Internal error occurred for the current attempt.",
    "details": [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "ZONE_RESOURCE_POOL_EXHAUSTED",
            "domain": "compute.googleapis.com",
        }
    ],
}


def test_job_failure_reads_code_and_reasons_from_a_failed_job_resource() -> None:
    failure = job_failure({"state": FAILED, "error": ERROR_INFO})
    assert failure == JobFailure(
        FAILED, ERROR_INFO["message"], code=8, reasons=("ZONE_RESOURCE_POOL_EXHAUSTED",)
    )


def _request() -> TrainingRequest:
    return TrainingRequest(
        backend="vertex",
        display_name="m",
        base_output_directory="gs://b/out",
        image_uri="europe-west4-docker.pkg.dev/p/r/trainer@sha256:" + "a" * 64,
        machine_type="n1-standard-4",
        accelerator_type="",
        accelerator_count=0,
        scheduling_strategy="SPOT",
        timeout_seconds=600,
        project="p",
        location="europe-west4",
    )


def _train(tmp_path: Path, client: FakeJobServiceClient) -> Any:
    backend = VertexBackend(
        "p", "europe-west4", job_client_factory=client.factory(), retry_wait_s=0.0
    )
    return train(
        _request(),
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        request_key="k",
        backend=backend,
        fallback=FallbackPolicy(enabled=True, deadline_seconds=3600),
    )


def test_vertex_spot_job_with_a_structured_stockout_falls_back_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FakeJobServiceClient(("JOB_STATE_FAILED",), failure=ERROR_INFO)
    monkeypatch.setattr("time.sleep", lambda _s: None)
    with pytest.raises(TrainingJobFailedError, match="on-demand job that continued it failed too"):
        _train(tmp_path, client)  # the fake fails every job, the on-demand one too
    strategies = [p["job_spec"]["scheduling"]["strategy"] for p in client.created_payloads]
    assert strategies == ["SPOT", "STANDARD"]


def test_vertex_spot_job_that_crashed_does_not_fall_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FakeJobServiceClient(("JOB_STATE_FAILED",))
    monkeypatch.setattr("time.sleep", lambda _s: None)
    with pytest.raises(TrainingJobFailedError, match="exited with status 1"):
        _train(tmp_path, client)
    assert len(client.created_payloads) == 1


def test_vertex_goodput_and_restarts_are_unknown_not_invented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FakeJobServiceClient()
    monkeypatch.setattr("time.sleep", lambda _s: None)
    result = _train(tmp_path, client)
    assert (result.goodput, result.restarts) == (None, None)
    assert "goodput" not in result.metrics and "restarts" not in result.metrics

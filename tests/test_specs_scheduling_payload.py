"""Scheduling.to_payload: each option written under its Vertex name, and only when it is set."""

from __future__ import annotations

import pytest

from vertex_retrain.specs import Scheduling


def test_scheduling_to_payload_writes_nothing_by_default() -> None:
    assert Scheduling().to_payload() == {}


@pytest.mark.parametrize(
    ("scheduling", "payload"),
    [
        (Scheduling(timeout_s=7200), {"timeout": "7200s"}),
        (Scheduling(timeout_s=0), {"timeout": "0s"}),
        (Scheduling(strategy="SPOT"), {"strategy": "SPOT"}),
        (Scheduling(strategy="FLEX_START"), {"strategy": "FLEX_START"}),
        (Scheduling(max_wait_s=1800), {"maxWaitDuration": "1800s"}),
        (Scheduling(max_wait_s=0), {"maxWaitDuration": "0s"}),
        (Scheduling(restart_job_on_worker_restart=True), {"restartJobOnWorkerRestart": True}),
        (Scheduling(disable_retries=True), {"disableRetries": True}),
    ],
)
def test_scheduling_to_payload_writes_each_option_alone(
    scheduling: Scheduling, payload: dict[str, object]
) -> None:
    assert scheduling.to_payload() == payload


def test_scheduling_to_payload_writes_every_option_together() -> None:
    scheduling = Scheduling(
        timeout_s=3600,
        strategy="FLEX_START",
        max_wait_s=600,
        restart_job_on_worker_restart=True,
        disable_retries=True,
    )
    assert scheduling.to_payload() == {
        "timeout": "3600s",
        "strategy": "FLEX_START",
        "maxWaitDuration": "600s",
        "restartJobOnWorkerRestart": True,
        "disableRetries": True,
    }

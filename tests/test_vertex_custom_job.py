"""CustomJob launcher against a fake JobServiceClient; GCPC's JobRemoteRunner code runs for real.

These tests prove the wiring at the client boundary, not behaviour on Vertex AI.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from tests.fakes.vertex_jobs import FakeJobServiceClient
from vertex_retrain.backends.vertex.custom_job import (
    VertexJobFailedError,
    VertexUnreachableError,
    custom_job_model_dir,
    run_custom_job_on_vertex,
)

ROOT = Path(__file__).resolve().parent.parent
PARENT = "projects/proj/locations/europe-west4"

PAYLOAD: dict[str, Any] = {
    "displayName": "train-recommender",
    "labels": {"team": "drinks"},
    "jobSpec": {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": "1",
                "containerSpec": {
                    "imageUri": "europe-west4-docker.pkg.dev/proj/repo/trainer@sha256:ab",
                    "args": ["--epochs", "3"],
                    "env": [{"name": "SEED", "value": "7"}],
                },
            }
        ],
        "scheduling": {"timeout": "3600s", "strategy": "SPOT", "restartJobOnWorkerRestart": True},
        "serviceAccount": "trainer@proj.iam.gserviceaccount.com",
        "baseOutputDirectory": {"outputUriPrefix": "gs://bucket/runs/1"},
    },
}


pytestmark = pytest.mark.usefixtures("fast_gcpc_polling")


def _run(fake: FakeJobServiceClient, tmp_path: Path, **kwargs: Any) -> dict[str, Any]:
    return run_custom_job_on_vertex(
        PAYLOAD,
        project="proj",
        location="europe-west4",
        gcp_resources_path=str(tmp_path / "out" / "gcp_resources"),
        job_client_factory=fake.factory(),
        retry_wait_s=0,
        **kwargs,
    )


def test_custom_job_payload_sent_parses_into_the_custom_job_proto(tmp_path: Path) -> None:
    fake = FakeJobServiceClient()
    _run(fake, tmp_path)
    (sent,) = fake.created_payloads
    # The dict GCPC hands to the client must parse strictly, as snake_case proto JSON.
    strict = aiplatform_v1.CustomJob.pb(aiplatform_v1.CustomJob())
    json_format.ParseDict(sent, strict, ignore_unknown_fields=False)
    job = aiplatform_v1.CustomJob.wrap(strict)
    assert job.job_spec.scheduling.strategy.name == "SPOT"
    assert job.job_spec.scheduling.timeout.total_seconds() == 3600
    pool = job.job_spec.worker_pool_specs[0]
    assert pool.machine_spec.accelerator_type.name == "NVIDIA_TESLA_T4"
    assert pool.container_spec.env[0].value == "7"
    assert job.labels["team"] == "drinks"


def test_custom_job_unknown_field_is_refused_before_any_call(tmp_path: Path) -> None:
    fake = FakeJobServiceClient()
    bad = {**PAYLOAD, "jobSpec": {**PAYLOAD["jobSpec"], "workerPools": []}}
    with pytest.raises(ValueError, match="workerPools"):
        run_custom_job_on_vertex(
            bad,
            project="proj",
            location="europe-west4",
            gcp_resources_path=str(tmp_path / "gcp_resources"),
            job_client_factory=fake.factory(),
        )
    assert fake.calls == []
    assert not (tmp_path / "gcp_resources").exists()


def test_custom_job_gcp_resources_written_right_after_create(tmp_path: Path) -> None:
    seen_at_first_get: list[dict[str, Any]] = []
    fake = FakeJobServiceClient()
    original_get = fake.get_custom_job
    path = tmp_path / "out" / "gcp_resources"

    def get_and_look(name: str, retry: Any = None) -> Any:
        if not seen_at_first_get:
            seen_at_first_get.append(json.loads(path.read_text()))
        return original_get(name, retry)

    fake.get_custom_job = get_and_look  # type: ignore[method-assign]
    final = _run(fake, tmp_path)
    job_name = f"{PARENT}/customJobs/1000"
    expected = {
        "resources": [
            {
                "resourceType": "CustomJob",
                "resourceUri": f"https://europe-west4-aiplatform.googleapis.com/v1/{job_name}",
            }
        ]
    }
    assert seen_at_first_get == [expected]
    assert json.loads(path.read_text()) == expected
    assert final["name"] == job_name and final["state"] == "JOB_STATE_SUCCEEDED"


def test_custom_job_restart_resumes_the_recorded_job(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(states=["JOB_STATE_RUNNING"] * 3 + ["JOB_STATE_SUCCEEDED"])
    path = tmp_path / "out" / "gcp_resources"
    first_get = fake.get_custom_job

    def die_on_first_get(name: str, retry: Any = None) -> Any:
        raise KeyboardInterrupt("launcher pod killed")

    fake.get_custom_job = die_on_first_get  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        _run(fake, tmp_path)
    assert path.exists() and len(fake.jobs) == 1

    fake.get_custom_job = first_get  # type: ignore[method-assign]
    final = _run(fake, tmp_path)
    assert len(fake.jobs) == 1
    assert [m for m, _ in fake.calls].count("create_customJobs") == 1
    assert final["name"] == f"{PARENT}/customJobs/1000"


def test_custom_job_request_key_adopts_live_job_when_gcp_resources_lost(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(states=["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"])
    _run(fake, tmp_path / "a", request_key="run-7/train")
    final = _run(fake, tmp_path / "b", request_key="run-7/train")
    assert len(fake.jobs) == 1
    assert final["name"] == f"{PARENT}/customJobs/1000"
    recorded = json.loads((tmp_path / "b" / "out" / "gcp_resources").read_text())
    assert recorded["resources"][0]["resourceUri"].endswith("/customJobs/1000")


def test_custom_job_request_key_does_not_adopt_a_failed_job(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(states=["JOB_STATE_FAILED"])
    with pytest.raises(VertexJobFailedError):
        _run(fake, tmp_path / "a", request_key="run-7/train")
    fake.states = ["JOB_STATE_SUCCEEDED"]
    final = _run(fake, tmp_path / "b", request_key="run-7/train")
    assert len(fake.jobs) == 2
    assert final["name"] == f"{PARENT}/customJobs/1001"


CODE_FAILED = {
    "code": 3,
    "message": "The replica workerpool0-0 exited with a non-zero status of 1.",
}
NO_CAPACITY = {
    "code": 8,
    "message": "The zone 'europe-west4-a' does not have enough resources available to fulfill "
    "the request.",
}


@pytest.mark.parametrize(
    ("failure", "first_run", "second_run", "started_again"),
    [
        (CODE_FAILED, "9", "9", False),  # this run's retry: the same code fails the same way
        (CODE_FAILED, "9", "10", True),  # another run: its own job
        (NO_CAPACITY, "9", "9", True),  # capacity may come back
        ({"code": 13, "message": "Internal error."}, "9", "9", True),  # unknown: maybe Vertex's
    ],
)
def test_custom_job_retry_of_a_failed_attempt_starts_again_only_when_it_may_pass(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: dict[str, Any],
    first_run: str,
    second_run: str,
    started_again: bool,
) -> None:
    fake = FakeJobServiceClient(states=["JOB_STATE_FAILED"], failure=failure)
    for attempt, run in (("a", first_run), ("b", second_run)):
        monkeypatch.setenv(
            "VERTEX_AI_PIPELINES_RUN_LABELS",
            json.dumps({"vertex-ai-pipelines-run-billing-id": run}),
        )
        with pytest.raises(VertexJobFailedError) as failed:
            _run(fake, tmp_path / attempt, request_key="train-key")
    assert len(fake.jobs) == (2 if started_again else 1)
    assert ("not started again" in str(failed.value)) is not started_again
    assert failure["message"] in str(failed.value)


def test_custom_job_lost_create_response_is_not_duplicated_with_request_key(
    tmp_path: Path,
) -> None:
    fake = FakeJobServiceClient(create_errors=[(ConnectionResetError("reset"), True)])
    final = _run(fake, tmp_path, request_key="run-8/train")
    assert len(fake.jobs) == 1
    assert final["state"] == "JOB_STATE_SUCCEEDED"


def test_custom_job_create_connection_error_without_request_key_is_not_retried(
    tmp_path: Path,
) -> None:
    fake = FakeJobServiceClient(create_errors=[(ConnectionResetError("reset"), False)])
    with pytest.raises(VertexUnreachableError, match="request_key"):
        _run(fake, tmp_path)
    assert [m for m, _ in fake.calls].count("create_customJobs") == 1


def test_custom_job_poll_retries_connection_errors_with_a_fresh_client(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(
        get_errors=[ConnectionError("down"), api_exceptions.ServiceUnavailable("503")]
    )
    final = _run(fake, tmp_path, connection_retries=3)
    assert final["state"] == "JOB_STATE_SUCCEEDED"
    assert fake.factory_calls == 3  # the first client, then one per retry


def test_custom_job_poll_gives_up_after_connection_retries(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(get_errors=[ConnectionError("down")] * 3)
    with pytest.raises(VertexUnreachableError, match="3 attempts"):
        _run(fake, tmp_path, connection_retries=3)


def test_custom_job_failure_raises_with_final_state_and_error(tmp_path: Path) -> None:
    fake = FakeJobServiceClient(states=["JOB_STATE_RUNNING", "JOB_STATE_FAILED"])
    with pytest.raises(VertexJobFailedError, match="exited with status 1") as caught:
        _run(fake, tmp_path)
    assert caught.value.job["state"] == "JOB_STATE_FAILED"
    assert caught.value.job["error"]["code"] == 13


def test_custom_job_corrupt_gcp_resources_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "out" / "gcp_resources"
    path.parent.mkdir(parents=True)
    path.write_text('{"resources": [{"resourceType": "CustomJob", "resourceUri": "x"}]}')
    fake = FakeJobServiceClient()
    with pytest.raises(ValueError, match="delete it to start a new job"):
        _run(fake, tmp_path)
    assert fake.jobs == {}


def test_custom_job_system_labels_are_attached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "VERTEX_AI_PIPELINES_RUN_LABELS", '{"vertex-ai-pipelines-run-billing-id": "9"}'
    )
    fake = FakeJobServiceClient()
    _run(fake, tmp_path, request_key="k")
    labels = fake.created_payloads[0]["labels"]
    assert labels["vertex-ai-pipelines-run-billing-id"] == "9"
    assert labels["team"] == "drinks"
    assert labels["vertex_retrain_request"].startswith("k")


def test_custom_job_model_dir_follows_base_output_directory() -> None:
    assert custom_job_model_dir(PAYLOAD) == "gs://bucket/runs/1/model"
    with pytest.raises(ValueError, match="baseOutputDirectory"):
        custom_job_model_dir({"jobSpec": {}})


_CHILD = textwrap.dedent(
    """
    import sys
    from google_cloud_pipeline_components.container.v1.gcp_launcher import job_remote_runner
    from vertex_retrain.backends.vertex.custom_job import run_custom_job_on_vertex
    from tests.fakes.vertex_jobs import FakeJobServiceClient

    job_remote_runner._POLLING_INTERVAL_IN_SECONDS = 0.05
    fake = FakeJobServiceClient(states=["JOB_STATE_RUNNING"], record_path=sys.argv[1])
    payload = {
        "displayName": "t",
        "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"},
            "replicaCount": "1", "containerSpec": {"imageUri": "img"}}]},
    }
    run_custom_job_on_vertex(payload, project="proj", location="europe-west4",
        gcp_resources_path=sys.argv[2], job_client_factory=fake.factory())
    sys.exit(3)  # never reached: the job runs until cancelled
    """
)


@pytest.mark.slow
def test_custom_job_sigterm_cancels_the_job(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), str(record), str(tmp_path / "gcp_resources")],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        # The first get happens inside GCPC's ExecutionContext, so the handler is installed.
        while '"get"' not in (record.read_text() if record.exists() else ""):
            assert child.poll() is None, child.communicate()[0].decode()
            assert time.monotonic() < deadline, "launcher never started polling"
            time.sleep(0.05)
        child.send_signal(signal.SIGTERM)
        output = child.communicate(timeout=30)[0].decode()
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()  # reaps it and closes its stdout pipe
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert child.returncode == 0, output
    assert {"method": "cancel", "name": f"{PARENT}/customJobs/1000"} in calls

"""Worker pools reach Vertex in their role's slot, whatever subset of roles a job has.

Vertex reads roles by position: [0] primary, [1] workers, [2] parameter servers or Reduction
Server, [3] evaluators, with ``{}`` in an unused middle slot. GCPC's launcher removes empty
values from the spec before it creates the job; the request must still carry the placeholders.
The request is checked where it leaves this package, at the (fake) JobServiceClient.
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform_v1

from tests.fakes.vertex_jobs import FakeJobServiceClient
from vertex_retrain.backends.vertex.custom_job import run_custom_job_on_vertex
from vertex_retrain.backends.vertex.tuning_job import run_tuning_job_on_vertex
from vertex_retrain.specs import (
    ContainerCode,
    CustomJobSpec,
    JobSpecError,
    Machine,
    WorkerPool,
    reduction_server_pool,
)

ROLES = ("workers", "parameter_servers", "reduction_server", "evaluators")
SLOT = {"workers": 1, "parameter_servers": 2, "reduction_server": 2, "evaluators": 3}
IMAGE = "europe-west4-docker.pkg.dev/proj/repo/trainer@sha256:ab"


pytestmark = pytest.mark.usefixtures("fast_gcpc_polling")


def _pool(replicas: int = 1, role: str = "primary") -> WorkerPool:
    machine = Machine("n1-standard-8", "NVIDIA_TESLA_T4", 1)
    return WorkerPool(machine, ContainerCode(IMAGE, args=(f"--role={role}",)), replicas)


def _spec(roles: tuple[str, ...]) -> CustomJobSpec:
    pools: dict[str, Any] = {}
    for role in roles:
        pools[role] = reduction_server_pool(2) if role == "reduction_server" else _pool(2, role)
    return CustomJobSpec(
        display_name="slots",
        primary=_pool(),
        base_output_dir="gs://bucket/runs/1",
        distribution="parameter_server" if "parameter_servers" in roles else "ddp",
        **pools,
    )


def _layouts() -> list[tuple[str, ...]]:
    subsets = [
        combo
        for size in range(len(ROLES) + 1)
        for combo in itertools.combinations(ROLES, size)
        # pool [2] holds one of the two
        if not {"parameter_servers", "reduction_server"} <= set(combo)
    ]
    return subsets


def _sent_slots(fake: FakeJobServiceClient, key: str = "job_spec") -> list[str]:
    """Role of each slot as the request carried it: the role flag, or '' for a placeholder."""
    pools = fake.created_payloads[0][key]["worker_pool_specs"]
    slots = []
    for pool in pools:
        args = pool.get("container_spec", {}).get("args", [])
        image = pool.get("container_spec", {}).get("image_uri", "")
        role = next((a.split("=", 1)[1] for a in args if a.startswith("--role=")), "")
        slots.append("reduction_server" if "reductionserver" in image else role)
    return slots


@pytest.mark.parametrize("roles", _layouts(), ids=lambda r: "+".join(("primary", *r)))
def test_every_role_subset_lands_in_its_slot_or_is_refused_with_a_reason(
    roles: tuple[str, ...], tmp_path: Path
) -> None:
    spec = _spec(roles)
    needs_workers = {"parameter_servers", "reduction_server"} & set(roles)
    if needs_workers and "workers" not in roles:
        with pytest.raises(JobSpecError) as refused:
            spec.to_payload()
        assert "pool [1]" in str(refused.value)  # the explanation names the missing workers
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # several GPUs / replicas: advice, not the point here
        payload = spec.to_payload()
    fake = FakeJobServiceClient()
    run_custom_job_on_vertex(
        payload,
        project="proj",
        location="europe-west4",
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        job_client_factory=fake.factory(),
        retry_wait_s=0,
    )
    expected = ["primary", "", "", ""]
    for role in roles:
        expected[SLOT[role]] = role
    while expected[-1] == "":
        expected.pop()
    assert _sent_slots(fake) == expected
    # And Vertex's own message type keeps the placeholders where they are.
    job = aiplatform_v1.CustomJob(fake.created_payloads[0])
    assert len(job.job_spec.worker_pool_specs) == len(expected)


def test_evaluator_only_tuning_trials_keep_the_evaluators_in_slot_three(tmp_path: Path) -> None:
    payload = {
        "displayName": "tune",
        "maxTrialCount": 2,
        "parallelTrialCount": 1,
        "studySpec": {
            "metrics": [{"metricId": "ndcg", "goal": "MAXIMIZE"}],
            "parameters": [
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}
            ],
        },
        "trialJobSpec": _spec(("evaluators",)).job_spec_payload(),
    }
    fake = FakeJobServiceClient()
    run_tuning_job_on_vertex(
        payload,
        project="proj",
        location="europe-west4",
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        job_client_factory=fake.factory(),
        retry_wait_s=0,
    )
    assert _sent_slots(fake, "trial_job_spec") == ["primary", "", "", "evaluators"]

"""The aiplatform-backed schedule client, run through the real SDK against a fake ScheduleService.

The gapic ``ScheduleServiceClient`` methods are replaced by an in-memory service, and the
Artifact Registry download by the locally compiled template, so the SDK's own request building
(PipelineJob, PipelineJobSchedule.create / update / pause / resume / list) runs offline.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from vertex_retrain.cli.schedule_reconcile import DeploymentTarget, reconcile
from vertex_retrain.cli.vertex_schedule_client import VertexScheduleClient, observed_from_resource
from vertex_retrain.schedules import ScheduleDeclaration

HOST = "https://asia-east1-kfp.pkg.dev/drink-shops/pipelines"
URI_A = f"{HOST}/tiny-params/sha256:{'a' * 64}"
URI_B = f"{HOST}/tiny-params/sha256:{'b' * 64}"
TARGET = DeploymentTarget(
    project="drink-shops",
    location="asia-east1",
    service_account="retrain@drink-shops.iam.gserviceaccount.com",
    pipeline_root="gs://drink-shops-pipelines/root",
)


class FakeScheduleService:
    """Stores Schedule protos like Vertex does; records each RPC."""

    def __init__(self) -> None:
        self.stored: dict[str, Any] = {}
        self.rpcs: list[str] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from google.cloud.aiplatform_v1.services.schedule_service import ScheduleServiceClient

        service = self

        def create_schedule(_: Any, parent: str, schedule: Any, timeout: Any = None) -> Any:
            return service.create(parent, schedule)

        def list_schedules(_: Any, request: dict[str, Any]) -> list[Any]:
            service.rpcs.append(f"list {request.get('filter', '')}")
            return [service._copy(schedule) for schedule in service.stored.values()]

        def get_schedule(_: Any, name: str, retry: Any = None) -> Any:
            service.rpcs.append("get")
            return service._copy(service.stored[name])

        def update_schedule(_: Any, schedule: Any, update_mask: Any) -> Any:
            return service.update(schedule, list(update_mask.paths))

        def pause_schedule(_: Any, name: str) -> None:
            service.set_state(name, "PAUSED")

        def resume_schedule(_: Any, name: str) -> None:
            service.set_state(name, "ACTIVE")

        for method in (
            create_schedule,
            list_schedules,
            get_schedule,
            update_schedule,
            pause_schedule,
            resume_schedule,
        ):
            monkeypatch.setattr(ScheduleServiceClient, method.__name__, method)

    @staticmethod
    def _copy(schedule: Any) -> Any:
        return type(schedule).deserialize(type(schedule).serialize(schedule))

    def create(self, parent: str, schedule: Any) -> Any:
        self.rpcs.append("create")
        stored = self._copy(schedule)
        stored.name = f"{parent}/schedules/{len(self.stored) + 1}"
        stored.state = "ACTIVE"
        self.stored[stored.name] = stored
        return self._copy(stored)

    def update(self, schedule: Any, paths: list[str]) -> Any:
        self.rpcs.append(f"update {','.join(paths)}")
        stored = self.stored[schedule.name]
        for path in paths:
            setattr(stored, path, getattr(schedule, path))
        return self._copy(stored)

    def set_state(self, name: str, state: str) -> None:
        self.rpcs.append(state.lower())
        self.stored[name].state = state

    def changes(self) -> list[str]:
        return [rpc for rpc in self.rpcs if rpc != "get" and not rpc.startswith("list")]

    def only(self) -> dict[str, Any]:
        from google.protobuf import json_format

        (schedule,) = self.stored.values()
        return json_format.MessageToDict(schedule._pb)


@pytest.fixture(scope="module")
def tiny_spec(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from test_vertex_submit import compile_tiny_pipeline

    template = compile_tiny_pipeline(tmp_path_factory.mktemp("tiny") / "tiny.yaml")
    spec: dict[str, Any] = yaml.safe_load(template.read_text(encoding="utf-8"))
    return spec


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch, tiny_spec: dict[str, Any]) -> FakeScheduleService:
    from google.cloud.aiplatform.utils import yaml_utils

    def load_yaml(path: str, project: Any = None, credentials: Any = None) -> dict[str, Any]:
        assert path in (URI_A, URI_B), path  # only pinned versions are ever fetched
        return copy.deepcopy(tiny_spec)

    monkeypatch.setattr(yaml_utils, "load_yaml", load_yaml)
    fake = FakeScheduleService()
    fake.install(monkeypatch)
    return fake


def _client() -> VertexScheduleClient:
    from google.auth.credentials import AnonymousCredentials

    return VertexScheduleClient(
        project=TARGET.project, location=TARGET.location, credentials=AnonymousCredentials()
    )


def _declare(**changes: Any) -> ScheduleDeclaration:
    fields: dict[str, Any] = {
        "display_name": "tiny-weekly",
        "pipeline_name": "tiny-params",
        "cron": "0 3 * * 1",
        "time_zone": "Asia/Taipei",
        "parameter_values": {"data_uri": "gs://d/o", "count": 4},
    }
    fields.update(changes)
    return ScheduleDeclaration(**fields)


def test_vertex_client_creates_updates_and_then_leaves_the_schedule_alone(
    service: FakeScheduleService,
) -> None:
    client = _client()
    reconcile([_declare()], TARGET, {"tiny-params": URI_A}, client)
    created = service.only()
    assert created["displayName"] == "tiny-weekly"
    assert created["cron"] == "TZ=Asia/Taipei 0 3 * * 1"
    assert created["maxConcurrentRunCount"] == "1"
    job = created["createPipelineJobRequest"]["pipelineJob"]
    assert job["templateUri"] == URI_A
    assert job["serviceAccount"] == TARGET.service_account
    assert job["runtimeConfig"]["gcsOutputDirectory"] == TARGET.pipeline_root
    assert job["runtimeConfig"]["parameterValues"] == {"data_uri": "gs://d/o", "count": 4.0}
    assert job["pipelineSpec"]["pipelineInfo"]["name"] == "tiny-params"
    assert created["createPipelineJobRequest"]["parent"] == (
        "projects/drink-shops/locations/asia-east1"
    )

    changed = _declare(cron="30 2 * * 1", parameter_values={"data_uri": "gs://d/o", "count": 5})
    plans = reconcile([changed], TARGET, {"tiny-params": URI_B}, client)
    assert plans[0].action == "update"
    updated = service.only()
    assert updated["cron"] == "TZ=Asia/Taipei 30 2 * * 1"
    job = updated["createPipelineJobRequest"]["pipelineJob"]
    assert job["templateUri"] == URI_B
    assert job["runtimeConfig"]["parameterValues"]["count"] == 5.0
    assert job["serviceAccount"] == TARGET.service_account
    assert "update cron" in service.rpcs
    assert "update create_pipeline_job_request" in service.rpcs

    rpcs = len(service.rpcs)
    third = reconcile([changed], TARGET, {"tiny-params": URI_B}, client)
    assert third[0].action == "noop"
    assert service.rpcs[rpcs:] == ['list display_name="tiny-weekly"']


def test_vertex_client_pauses_and_resumes(service: FakeScheduleService) -> None:
    client = _client()
    reconcile([_declare(paused=True)], TARGET, {"tiny-params": URI_A}, client)
    assert service.changes()[-2:] == ["create", "paused"]
    assert service.only()["state"] == "PAUSED"
    reconcile([_declare()], TARGET, {"tiny-params": URI_A}, client)
    assert service.changes()[-1] == "active"
    assert service.only()["state"] == "ACTIVE"


def test_vertex_client_dry_run_sends_only_the_list_request(service: FakeScheduleService) -> None:
    plans = reconcile([_declare()], TARGET, {"tiny-params": URI_A}, _client(), dry_run=True)
    assert plans[0].action == "create"
    assert service.rpcs == ['list display_name="tiny-weekly"']
    assert service.stored == {}


def test_observed_from_resource_reads_the_rest_form_of_a_schedule() -> None:
    observed = observed_from_resource(
        {
            "name": "projects/1/locations/asia-east1/schedules/7",
            "displayName": "tiny-weekly",
            "cron": "TZ=Asia/Taipei 0 3 * * 1",
            "maxConcurrentRunCount": "2",
            "state": "PAUSED",
            "createPipelineJobRequest": {
                "pipelineJob": {
                    "templateUri": URI_A,
                    "serviceAccount": "sa@p.iam.gserviceaccount.com",
                    "runtimeConfig": {
                        "gcsOutputDirectory": "gs://b/r",
                        "parameterValues": {"count": 4.0},
                    },
                }
            },
        }
    )
    assert observed.state == "PAUSED" and observed.spec.paused
    assert observed.spec.max_concurrent_run_count == 2
    assert observed.spec.parameter_values == {"count": 4.0}
    assert observed.spec.template_uri == URI_A
    assert observed.spec.pipeline_root == "gs://b/r"

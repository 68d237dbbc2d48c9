"""``make smoke-vertex`` offline: its plan, and its apply step against fakes (never Vertex)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, importable
from tests.fakes.vertex_build import FakeStorageClient
from tests.fakes.vertex_serving import (
    FakeEndpointServiceClient,
    FakeModelServiceClient,
    FakePredictionServiceClient,
)
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems
from vertex_retrain.specs import load_catalog

with importable(DRINK_SHOPS):
    from vertex_smoke.apply import apply_smoke
    from vertex_smoke.main import (
        SmokeClients,
        SmokePlan,
        format_plan,
        main,
        plan_smoke,
        smallest_cpu_machine,
    )
    from vertex_smoke.plan import smoke_pipeline, weekly_shape

ACCOUNT = "smoke-runner@drink-shops.iam.gserviceaccount.com"
EMAIL = ("ops@drink-shops.example",)
COMPONENT_IMAGE = "europe-west4-docker.pkg.dev/drink-shops/ml/vertex-retrain:1"


def _plan(**kw: Any) -> SmokePlan:
    return plan_smoke(
        "drink-shops", "europe-west4", "gs://drink-shops-ml", service_account=ACCOUNT,
        run_id="t1", **kw,
    )  # fmt: skip


def test_plan_trains_on_the_smallest_cpu_machine_on_demand_under_its_own_names() -> None:
    plan = _plan()
    machines = load_catalog().machines
    chosen = machines[plan.machine_type]
    assert plan.machine_type == smallest_cpu_machine("europe-west4")
    assert all(
        (m.vcpus or 0, m.memory_gb or 0) >= (chosen.vcpus, chosen.memory_gb)
        for m in machines.values()
        if m.family in ("n1", "n2", "e2", "c2") and m.vcpus
    )
    assert plan.parameters["accelerator_type"] == "" and plan.parameters["accelerator_count"] == 0
    assert plan.parameters["scheduling_strategy"] == "STANDARD"
    # The jobs run the trainer's own image, which the run builds: no prebuilt image.
    assert "executor_image_uri" not in plan.parameters
    assert (
        plan.parameters["image_destination"]
        == plan.training_image
        == ("europe-west4-docker.pkg.dev/drink-shops/vertex-retrain/vertex-retrain-smoke-trainer")
    )
    assert plan.prefix == "gs://drink-shops-ml/vertex-retrain-smoke/t1"
    assert plan.parameters["data_uri"].startswith(plan.prefix)
    assert plan.pipeline_root.startswith(plan.prefix)
    assert plan.model_display_name == plan.endpoint_display_name == "vertex-retrain-smoke-t1"
    assert plan.parameters["endpoint_display_name"] == plan.endpoint_display_name
    for name in ("source_uri", "package_destination", "output_root"):
        assert plan.parameters[name].startswith(plan.prefix), name
    # The fixed branch of dsl.OneOf, and no Spot: nothing waits for capacity or pays trials.
    assert plan.parameters["tune"] is False and plan.parameters["spot_fallback"] is False
    assert any(plan.prefix in d for d in plan.deletes)
    assert any(plan.endpoint_display_name in d for d in plan.deletes)


def test_plan_runs_the_weekly_shape_and_nests_it_under_the_notice_when_an_email_is_asked() -> None:
    asked = weekly_shape(compile_to_dict(smoke_pipeline(EMAIL), component_image=COMPONENT_IMAGE))
    assert asked == dict.fromkeys(asked, True), asked
    assert set(asked) == {
        "nested pipeline", "two exit handlers", "dsl.OneOf", "data gate", "register", "deploy",
        "e-mail",
    }  # fmt: skip
    plain = weekly_shape(compile_to_dict(smoke_pipeline(), component_image=COMPONENT_IMAGE))
    assert {k for k, v in plain.items() if not v} == {
        "nested pipeline", "two exit handlers", "e-mail"
    }  # fmt: skip


def test_plan_passes_the_offline_preflight_once_its_inputs_exist() -> None:
    plan = _plan(component_image=COMPONENT_IMAGE, notification_emails=EMAIL)
    pipeline = smoke_pipeline(plan.notification_emails)
    spec = compile_to_dict(pipeline, component_image=str(plan.component_image))
    parameters = {**default_arguments(spec), **plan.parameters, "as_of": "2023-03-01"}
    settings = Settings(
        project=plan.project, location=plan.location, pipeline_root=plan.pipeline_root,
        service_account=plan.service_account, submission=True,
    )  # fmt: skip
    errors = [p for p in pipeline_problems(spec, parameters, settings) if p.severity == "error"]
    assert errors == [], [p.describe() for p in errors]


def test_make_smoke_vertex_plan_prints_and_does_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    code = main(
        ["--project", "drink-shops", "--location", "europe-west4", "--bucket", "drink-shops-ml",
         "--run-id", "t1", "--plan"],
        out,
    )  # fmt: skip
    assert code == 0
    text = out.getvalue()
    account = "vertex-retrain@drink-shops.iam.gserviceaccount.com"
    expected = plan_smoke(
        "drink-shops", "europe-west4", "drink-shops-ml", run_id="t1", service_account=account
    )
    assert text == format_plan(expected)
    assert "predict once" in text and "then delete:" in text
    assert "no e-mail" in text and "dsl.OneOf" in text
    # The run reads its data from BigQuery: the extraction's path, through the official client.
    source = expected.parameters["dataset_declaration"]["source"]
    table = "drink-shops.vertex_retrain_smoke_t1.transactions"
    assert source == {"kind": "bigquery", "max_bytes": 2**30, "table": table}
    assert "BigQuery: the sample loaded into drink-shops.vertex_retrain_smoke_t1" in text
    assert "BigQuery dataset drink-shops.vertex_retrain_smoke_t1 (its tables)" in expected.deletes
    emailed = io.StringIO()
    main(
        ["--project", "drink-shops", "--location", "europe-west4", "--bucket", "drink-shops-ml",
         "--run-id", "t1", "--plan", "--email", EMAIL[0]],
        emailed,
    )  # fmt: skip
    assert f"e-mail to {EMAIL[0]}: the run nested under the failure notice" in emailed.getvalue()


class FakeBigQueryAdmin:
    """The smoke run's BigQuery calls: a dataset created, tables loaded, the dataset deleted."""

    def __init__(self) -> None:
        self.datasets: dict[str, str] = {}
        self.loads: list[tuple[str, str, list[tuple[str, str]]]] = []

    def create_dataset(self, dataset: Any, exists_ok: bool) -> None:
        self.datasets[f"{dataset.project}.{dataset.dataset_id}"] = dataset.location

    def load_table_from_uri(self, uri: str, table: str, job_config: Any) -> Any:
        schema = [(f.name, f.field_type) for f in job_config.schema]
        self.loads.append((uri, table, schema))
        return type("Job", (), {"result": lambda self, timeout: None})()

    def delete_dataset(self, name: str, delete_contents: bool, not_found_ok: bool) -> None:
        assert delete_contents
        self.datasets.pop(name, None)


def _clients(
    models: FakeModelServiceClient, state: str = "PIPELINE_STATE_SUCCEEDED"
) -> tuple[SmokeClients, FakeEndpointServiceClient, FakeStorageClient]:
    from google.cloud import aiplatform_v1

    endpoints, storage = FakeEndpointServiceClient(), FakeStorageClient()
    ticks = iter(range(0, 100000, 900))

    def prepare(plan: SmokePlan, storage_client: Any) -> dict[str, Any]:
        storage_client.objects[f"{plan.prefix}/transactions/week.parquet"] = b"rows"
        storage_client.objects[f"{plan.prefix}/source/trainer/task.py"] = b"code"
        return {"as_of": "2023-03-01"}

    def run_pipeline(spec: dict[str, Any], plan: SmokePlan, parameters: dict[str, Any]) -> str:
        from vertex_retrain.backends.vertex.endpoints import deploy_model_version

        if state == "PIPELINE_STATE_SUCCEEDED":  # the weekly run registers and deploys
            uploaded = models.upload_model(
                aiplatform_v1.UploadModelRequest(
                    parent=f"projects/{plan.project}/locations/{plan.location}",
                    model=aiplatform_v1.Model(display_name=parameters["model_display_name"]),
                )
            ).result()
            deploy_model_version(
                project=plan.project,
                location=plan.location,
                endpoint_display_name=parameters["endpoint_display_name"],
                model_resource_name=f"{uploaded.model}@{uploaded.model_version_id or 1}",
                traffic_percentage=100,
                dedicated_resources={
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "minReplicaCount": 1,
                    "maxReplicaCount": 1,
                },
                endpoint_client=endpoints,
            )
        return state

    clients = SmokeClients(
        storage=storage,
        build=None,
        models=models,
        endpoints=endpoints,
        predictions=FakePredictionServiceClient(endpoints),
        run_pipeline=run_pipeline,
        prepare_inputs=prepare,
        clock=lambda: float(next(ticks)),
        bigquery=FakeBigQueryAdmin(),
    )
    return clients, endpoints, storage


def test_apply_deploys_predicts_once_then_deletes_everything_and_prints_the_cost() -> None:
    models = FakeModelServiceClient()
    clients, endpoints, storage = _clients(models)
    out = io.StringIO()
    outcome = apply_smoke(_plan(), clients, {}, out)
    assert outcome.pipeline_state == "PIPELINE_STATE_SUCCEEDED"
    assert outcome.prediction == [{"echo": True}]
    assert len(clients.predictions.requests) == 1  # predicted once
    assert endpoints.endpoints == {} and models.versions == {} and storage.objects == {}
    assert clients.bigquery.datasets == {}  # created, loaded, then deleted
    tables = [table for _, table, _ in clients.bigquery.loads]
    dataset = "drink-shops.vertex_retrain_smoke_t1"
    assert tables == [f"{dataset}.{name}" for name in ("transactions", "drinks", "stores")]
    _, _, schema = clients.bigquery.loads[0]
    assert ("timestamp", "DATETIME") in schema and ("member_id", "INTEGER") in schema
    text = out.getvalue()
    assert "cost, training: at most" in text and "0.25 h" in text  # 900 s by the fake clock
    assert "cost, serving: 0.25 node-hour(s) of n1-standard-4" in text


def test_apply_cleans_up_and_prints_the_cost_when_the_pipeline_fails() -> None:
    models = FakeModelServiceClient()
    clients, endpoints, storage = _clients(models, state="PIPELINE_STATE_FAILED")
    out = io.StringIO()
    with pytest.raises(RuntimeError, match="ended PIPELINE_STATE_FAILED"):
        apply_smoke(_plan(), clients, {}, out)
    assert storage.objects == {} and endpoints.endpoints == {}
    assert clients.bigquery.datasets == {}
    assert "cost, training" in out.getvalue()

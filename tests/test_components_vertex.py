"""The components' Vertex backend, step by step, against fakes at the Google client boundary.

The steps (vertex_retrain/steps/*.py) are what each component body calls. Each test builds a
``VertexBackend`` whose constructor gets the in-memory fakes of tests/fakes/vertex_*.py and
passes it to the step, so every request is a real aiplatform_v1 / cloudbuild_v1 message and
GCPC's launcher code runs for real. Nothing here contacts Google, and none of it proves
behaviour on Vertex AI itself.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform_v1
from google.protobuf import json_format

from tests.fakes.vertex_build import FakeCloudBuildClient, FakeStorageClient
from tests.fakes.vertex_jobs import FakeJobServiceClient
from tests.fakes.vertex_serving import FakeEndpointServiceClient, FakeModelServiceClient
from vertex_retrain.backends.base import Backend
from vertex_retrain.backends.local.backend import LocalBackend
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.specs.problems import JobSpecError
from vertex_retrain.steps.build import build
from vertex_retrain.steps.champion import find_alias_holder
from vertex_retrain.steps.deploy import DeploymentRequest, deploy
from vertex_retrain.steps.job_request import TrainingRequest, scoped_output_directory
from vertex_retrain.steps.register import RegistrationRequest, register
from vertex_retrain.steps.train import TrainingJobFailedError, train
from vertex_retrain.steps.tune import TuningJobFailedError, TuningRequest, tune

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "components"
PROJECT, LOCATION = "shop", "europe-west4"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"
API = f"https://{LOCATION}-aiplatform.googleapis.com/v1"
PREBUILT = "europe-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
PACKAGE = "gs://shop/packages/trainer-1.0.0-py3-none-any.whl"
DATASET = "gs://shop/pipeline-root/run-7/prepare-dataset/dataset"


# The package jobs' requests on an image that is served: the shipped catalog's have all ended.
pytestmark = pytest.mark.usefixtures("fast_gcpc_polling", "catalog_still_serving")


@pytest.fixture
def jobs() -> FakeJobServiceClient:
    return FakeJobServiceClient()


def _training(**overrides: Any) -> TrainingRequest:
    request: dict[str, Any] = dict(
        backend="vertex",
        display_name="weekly-training",
        base_output_directory=scoped_output_directory("gs://shop/runs", "run-7", "train"),
        python_module="trainer.task",
        package_uris=[PACKAGE],
        executor_image_uri=PREBUILT,
        args=["--epochs", "3"],
        # Integers arrive from KFP dict parameters as floats; the flags must not say "32.0".
        hyperparameters={"learning_rate": 0.02, "embedding_dim": 32.0},
        dataset_uri=DATASET,
        machine_type="n1-standard-8",
        accelerator_type="NVIDIA_TESLA_T4",
        accelerator_count=1,
        worker_count=1,
        distribution="ddp",
        scheduling_strategy="SPOT",
        timeout_seconds=7200,
        service_account="trainer@shop.iam.gserviceaccount.com",
        network="projects/123/global/networks/shop-vpc",
        labels={"team": "drinks"},
        project=PROJECT,
        location=LOCATION,
    )
    request.update(overrides)
    return TrainingRequest(**request)


def _strict(message_cls: Any, sent: dict[str, Any]) -> Any:
    """Parses what GCPC handed the client (snake_case JSON) refusing unknown fields."""
    pb = message_cls.pb(message_cls())
    json_format.ParseDict(sent, pb, ignore_unknown_fields=False)
    return message_cls.wrap(pb)


def _only_resource(path: Path) -> dict[str, Any]:
    (resource,) = json.loads(path.read_text(encoding="utf-8"))["resources"]
    return dict(resource)


# --- train_custom_job -----------------------------------------------------------------------


def test_train_step_vertex_payload_parses_into_the_custom_job_proto(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    result = train(_training(), gcp_resources_path=str(tmp_path / "gcp_resources"), backend=vertex)

    (sent,) = jobs.created_payloads
    job = _strict(aiplatform_v1.CustomJob, sent)
    primary, workers = job.job_spec.worker_pool_specs
    assert (primary.replica_count, workers.replica_count) == (1, 1)
    assert primary.machine_spec.machine_type == "n1-standard-8"
    assert primary.machine_spec.accelerator_type.name == "NVIDIA_TESLA_T4"
    assert primary.machine_spec.accelerator_count == 1
    code = primary.python_package_spec
    assert (code.executor_image_uri, list(code.package_uris)) == (PREBUILT, [PACKAGE])
    assert list(code.args) == [
        "--epochs",
        "3",
        "--learning_rate=0.02",
        "--embedding_dim=32",
        f"--data={DATASET}",
    ]
    spec = job.job_spec
    assert spec.scheduling.strategy.name == "SPOT"
    assert spec.scheduling.timeout.total_seconds() == 7200
    assert spec.service_account == "trainer@shop.iam.gserviceaccount.com"
    assert spec.network == "projects/123/global/networks/shop-vpc"
    assert spec.base_output_directory.output_uri_prefix == "gs://shop/runs/run-7/train"
    assert job.labels["team"] == "drinks"

    assert jobs.calls[0] == ("create_customJobs", PARENT)  # the given region, no default
    assert result.state == "JOB_STATE_SUCCEEDED"
    assert result.model_uri == "gs://shop/runs/run-7/train/model"
    assert result.model_metadata == {"job": f"{PARENT}/customJobs/1000", "backend": "vertex"}


def test_train_step_vertex_writes_gcp_resources_for_the_console(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    path = tmp_path / "outputs" / "gcp_resources"
    train(_training(), gcp_resources_path=str(path), backend=vertex)
    assert _only_resource(path) == {
        "resourceType": "CustomJob",
        "resourceUri": f"{API}/{PARENT}/customJobs/1000",
    }


def test_train_step_vertex_restarted_launcher_resumes_the_same_job(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    path = str(tmp_path / "gcp_resources")
    jobs.states = ["JOB_STATE_RUNNING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]
    polling = jobs.get_custom_job

    def launcher_killed(name: str, retry: Any = None) -> Any:
        raise KeyboardInterrupt("launcher pod evicted")

    jobs.get_custom_job = launcher_killed  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        train(_training(), gcp_resources_path=path, request_key="run-7-train", backend=vertex)
    jobs.get_custom_job = polling  # type: ignore[method-assign]

    result = train(_training(), gcp_resources_path=path, request_key="run-7-train", backend=vertex)
    assert [method for method, _ in jobs.calls].count("create_customJobs") == 1
    assert len(jobs.jobs) == 1
    assert result.model_metadata["job"] == f"{PARENT}/customJobs/1000"


def test_train_step_vertex_rerun_with_lost_gcp_resources_adopts_the_live_job(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    jobs.states = ["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]
    train(
        _training(),
        gcp_resources_path=str(tmp_path / "a"),
        request_key="run-7-train",
        backend=vertex,
    )
    # A new pod of the same task, without the first pod's gcp_resources file.
    second = tmp_path / "b"
    train(_training(), gcp_resources_path=str(second), request_key="run-7-train", backend=vertex)
    assert len(jobs.jobs) == 1
    assert _only_resource(second)["resourceUri"].endswith("/customJobs/1000")


def test_train_step_vertex_failed_job_raises_training_job_failed(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    jobs.states = ["JOB_STATE_RUNNING", "JOB_STATE_FAILED"]
    with pytest.raises(TrainingJobFailedError, match="exited with status 1"):
        train(_training(), gcp_resources_path=str(tmp_path / "gcp_resources"), backend=vertex)


def test_train_step_vertex_impossible_job_is_refused_before_any_call(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    with pytest.raises(JobSpecError, match="e2-standard-8"):
        train(
            _training(machine_type="e2-standard-8"),
            gcp_resources_path=str(tmp_path / "gcp_resources"),
            backend=vertex,
        )
    assert jobs.calls == []
    assert not (tmp_path / "gcp_resources").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "collection"), [("train", "customJobs"), ("tune", "hyperparameterTuningJobs")]
)
def test_job_steps_vertex_sigterm_cancels_the_job(
    step: str, collection: str, tmp_path: Path
) -> None:
    record = tmp_path / "calls.jsonl"
    child = subprocess.Popen(
        [
            sys.executable,
            str(FIXTURES / "vertex_step_child.py"),
            step,
            str(record),
            str(tmp_path / "gcp_resources"),
            str(tmp_path / "report.html"),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        # The first poll happens inside GCPC's ExecutionContext: its SIGTERM handler is set.
        while '"get"' not in (record.read_text() if record.exists() else ""):
            assert child.poll() is None, child.communicate()[0].decode()
            assert time.monotonic() < deadline, "the step never started polling"
            time.sleep(0.05)
        child.send_signal(signal.SIGTERM)
        output = child.communicate(timeout=30)[0].decode()
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()  # reaps it and closes its stdout pipe
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert child.returncode == 0, output
    assert {"method": "cancel", "name": f"{PARENT}/{collection}/1000"} in calls
    assert _only_resource(tmp_path / "gcp_resources")["resourceUri"].endswith(f"/{collection}/1000")


# --- hp_tune --------------------------------------------------------------------------------

STUDY_PARAMETERS = [
    {
        "parameterId": "learning_rate",
        "doubleValueSpec": {"minValue": 1e-4, "maxValue": 3e-2},
        "scaleType": "UNIT_LOG_SCALE",
    },
    {"parameterId": "embedding_dim", "integerValueSpec": {"minValue": 8, "maxValue": 64}},
]


def _trial(trial_id: str, state: str, lr: float, dim: int, ndcg: float | None) -> dict[str, Any]:
    trial: dict[str, Any] = {
        "id": trial_id,
        "state": state,
        "parameters": [
            {"parameterId": "learning_rate", "value": lr},
            {"parameterId": "embedding_dim", "value": dim},
        ],
    }
    if ndcg is not None:
        trial["finalMeasurement"] = {"metrics": [{"metricId": "ndcg_at_10", "value": ndcg}]}
    return trial


TRIALS = [
    _trial("1", "SUCCEEDED", 0.01, 16, 0.31),
    {**_trial("2", "INFEASIBLE", 0.03, 64, 0.90), "infeasibleReason": "out of memory"},
    _trial("3", "SUCCEEDED", 0.02, 32, 0.35),
    _trial("4", "STOPPING", 0.001, 8, 0.99),  # Trial.State has no FAILED; not done either
]


def _study(**overrides: Any) -> TuningRequest:
    study: dict[str, Any] = dict(
        trial=_training(
            worker_count=0,
            base_output_directory=scoped_output_directory("gs://shop/runs", "run-7", "tune"),
            hyperparameters={"epochs": 2.0},
        ),
        parameter_specs=STUDY_PARAMETERS,
        metric_id="ndcg_at_10",
        max_trial_count=4,
        parallel_trial_count=2,
        max_failed_trial_count=2,
        labels={"study": "weekly"},
    )
    study.update(overrides)
    return TuningRequest(**study)


def test_tune_step_vertex_payload_parses_and_the_best_successful_trial_wins(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    jobs.trials = TRIALS
    report = tmp_path / "report" / "trials.html"
    outcome = tune(
        _study(),
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        report_path=str(report),
        backend=vertex,
    )

    (sent,) = jobs.created_payloads
    job = _strict(aiplatform_v1.HyperparameterTuningJob, sent)
    assert (job.max_trial_count, job.parallel_trial_count, job.max_failed_trial_count) == (4, 2, 2)
    assert job.study_spec.metrics[0].metric_id == "ndcg_at_10"
    assert job.study_spec.metrics[0].goal.name == "MAXIMIZE"
    assert [p.parameter_id for p in job.study_spec.parameters] == ["learning_rate", "embedding_dim"]
    assert job.trial_job_spec.scheduling.strategy.name == "SPOT"  # Spot-capable trials
    assert job.trial_job_spec.base_output_directory.output_uri_prefix == (
        "gs://shop/runs/run-7/tune"
    )
    assert job.labels["study"] == "weekly"
    assert jobs.calls[0] == ("create_hyperparameterTuningJobs", PARENT)

    # Trials 2 and 4 report better values but did not succeed.
    assert outcome.best_trial_id == "3"
    assert outcome.best_parameters == {"learning_rate": 0.02, "embedding_dim": 32}
    assert isinstance(outcome.best_parameters["embedding_dim"], int)
    assert outcome.best_metric == pytest.approx(0.35)
    assert outcome.best_model_uri == "gs://shop/runs/run-7/tune/3/model"
    html = report.read_text(encoding="utf-8")
    assert html.count("<tr class=") == 4 and "out of memory" in html and "<svg" in html
    assert _only_resource(tmp_path / "gcp_resources") == {
        "resourceType": "HyperparameterTuningJob",
        "resourceUri": f"{API}/{PARENT}/hyperparameterTuningJobs/1000",
    }


def test_tune_step_vertex_restarted_launcher_resumes_the_same_study(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    jobs.trials = TRIALS
    path = str(tmp_path / "gcp_resources")
    polling = jobs.get_hyperparameter_tuning_job

    def launcher_killed(name: str, retry: Any = None) -> Any:
        raise KeyboardInterrupt("launcher pod evicted")

    jobs.get_hyperparameter_tuning_job = launcher_killed  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        tune(
            _study(), gcp_resources_path=path, report_path=str(tmp_path / "r.html"), backend=vertex
        )
    jobs.get_hyperparameter_tuning_job = polling  # type: ignore[method-assign]
    outcome = tune(
        _study(), gcp_resources_path=path, report_path=str(tmp_path / "r.html"), backend=vertex
    )
    assert [m for m, _ in jobs.calls].count("create_hyperparameterTuningJobs") == 1
    assert outcome.best_trial_id == "3"


def test_tune_step_vertex_study_without_a_successful_trial_names_the_metric(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    jobs.trials = [TRIALS[1], TRIALS[3]]
    report = tmp_path / "trials.html"
    with pytest.raises(ValueError, match=r"no SUCCEEDED trial .* 'ndcg_at_10'"):
        tune(
            _study(),
            gcp_resources_path=str(tmp_path / "g"),
            report_path=str(report),
            backend=vertex,
        )
    assert not report.exists()


def test_tune_step_vertex_failed_study_raises_tuning_job_failed(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    jobs.states = ["JOB_STATE_FAILED"]
    with pytest.raises(TuningJobFailedError, match="JOB_STATE_FAILED"):
        tune(
            _study(),
            gcp_resources_path=str(tmp_path / "g"),
            report_path=str(tmp_path / "r"),
            backend=vertex,
        )


def test_tune_step_vertex_impossible_study_is_refused_before_any_call(
    vertex: VertexBackend, jobs: FakeJobServiceClient, tmp_path: Path
) -> None:
    with pytest.raises(JobSpecError, match="parallelTrialCount"):
        tune(
            _study(max_trial_count=2, parallel_trial_count=5),
            gcp_resources_path=str(tmp_path / "g"),
            report_path=str(tmp_path / "r"),
            backend=vertex,
        )
    assert jobs.calls == []


# --- register_model and evaluate_model's champion lookup ------------------------------------


class RecordingModelService(FakeModelServiceClient):
    """The fake ModelService, keeping every request it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Any] = []

    def upload_model(self, request: Any) -> Any:
        self.requests.append(request)
        return super().upload_model(request)

    def merge_version_aliases(self, request: Any) -> Any:
        self.requests.append(request)
        return super().merge_version_aliases(request)


@pytest.fixture
def models() -> RecordingModelService:
    return RecordingModelService()


def _registration(run: str, make_champion: bool, **overrides: Any) -> RegistrationRequest:
    request: dict[str, Any] = dict(
        backend="vertex",
        artifact_uri=f"gs://shop/runs/{run}/train/model",
        display_name="guess-your-order",
        serving_image_uri="europe-west4-docker.pkg.dev/shop/serving/recommender:1",
        serving_command=["python", "-m", "trainer.serve"],
        make_champion=make_champion,
        labels={"team": "drinks"},
        pipeline_run=run,
        project=PROJECT,
        location=LOCATION,
    )
    request.update(overrides)
    return RegistrationRequest(**request)


def _requests_of(fake: RecordingModelService, message_cls: Any) -> list[Any]:
    return [r for r in fake.requests if isinstance(r, message_cls)]


@pytest.mark.usefixtures("trained_runs")
def test_register_step_vertex_uploads_versions_under_one_model(
    vertex: VertexBackend,
    models: RecordingModelService,
) -> None:
    first = register(_registration("run-1", make_champion=True), backend=vertex)
    second = register(_registration("run-2", make_champion=False), backend=vertex)

    uploads = _requests_of(models, aiplatform_v1.UploadModelRequest)
    assert [u.parent for u in uploads] == [PARENT, PARENT]
    assert uploads[0].parent_model == ""
    model_name = first.resource_name.split("@")[0]
    assert uploads[1].parent_model == model_name  # a new version, not a new model
    container = uploads[1].model.container_spec
    assert container.image_uri == "europe-west4-docker.pkg.dev/shop/serving/recommender:1"
    assert list(container.command) == ["python", "-m", "trainer.serve"]
    assert (container.health_route, container.predict_route) == ("/health", "/predict")
    assert container.ports[0].container_port == 8080
    assert uploads[1].model.artifact_uri == "gs://shop/runs/run-2/train/model"
    assert uploads[1].model.labels["team"] == "drinks"

    assert second.resource_name == f"{model_name}@2"
    # The google.VertexModel artifact, as GCPC's ModelUploadOp writes it.
    assert second.artifact_uri == f"{API}/{second.resource_name}"


@pytest.mark.usefixtures("trained_runs")
def test_register_step_vertex_champion_and_default_move_together_only_when_told(
    vertex: VertexBackend,
    models: RecordingModelService,
) -> None:
    register(_registration("run-1", make_champion=True), backend=vertex)
    challenger = register(_registration("run-2", make_champion=False), backend=vertex)
    champion = register(_registration("run-3", make_champion=True), backend=vertex)

    model_name = champion.resource_name.split("@")[0]
    holders = {
        alias: models.get_model(name=f"{model_name}@{alias}").version_id
        for alias in ("champion", "default", "challenger")
    }
    assert holders == {"champion": "3", "default": "3", "challenger": "2"}
    assert "challenger" in challenger.aliases and "champion" not in challenger.aliases
    assert sorted(champion.aliases) == ["champion", "default"]
    merges = _requests_of(models, aiplatform_v1.MergeVersionAliasesRequest)
    (last,) = [m for m in merges if m.name == champion.resource_name]
    assert sorted(last.version_aliases) == ["champion", "default"]  # one atomic call


@pytest.mark.usefixtures("trained_runs")
def test_register_step_vertex_rerun_of_the_same_run_is_idempotent(
    vertex: VertexBackend,
    models: RecordingModelService,
) -> None:
    first = register(_registration("run-1", make_champion=True), backend=vertex)
    calls_before = list(models.calls)
    again = register(_registration("run-1", make_champion=True), backend=vertex)
    assert again == first
    new_calls = models.calls[len(calls_before) :]
    assert "upload_model" not in new_calls and "merge_version_aliases" not in new_calls
    assert len(_requests_of(models, aiplatform_v1.UploadModelRequest)) == 1


@pytest.mark.usefixtures("trained_runs")
def test_register_step_vertex_custom_champion_alias_is_what_evaluate_finds(
    vertex: VertexBackend,
    models: RecordingModelService,
) -> None:
    registered = register(
        _registration("run-1", make_champion=True, champion_alias="production"), backend=vertex
    )
    holder = find_alias_holder(
        backend=vertex,
        display_name="guess-your-order",
        alias="production",
        project=PROJECT,
        location=LOCATION,
    )
    assert holder is not None and holder.version_id == registered.version_id
    assert "production" in registered.aliases and "default" in registered.aliases


def test_register_step_vertex_bad_artifact_uri_registers_nothing(
    vertex: VertexBackend,
    models: RecordingModelService,
) -> None:
    with pytest.raises(ValueError, match="gs://"):
        register(
            _registration("run-1", make_champion=True, artifact_uri="/tmp/model"), backend=vertex
        )
    assert "upload_model" not in models.calls


@pytest.mark.usefixtures("trained_runs")
def test_champion_lookup_vertex_finds_the_alias_holder_or_none(
    vertex: VertexBackend,
    models: RecordingModelService,
) -> None:
    def lookup() -> Any:
        return find_alias_holder(
            backend=vertex,
            display_name="guess-your-order",
            alias="champion",
            project=PROJECT,
            location=LOCATION,
        )

    assert lookup() is None  # no model yet
    register(_registration("run-1", make_champion=False), backend=vertex)
    assert lookup() is None  # a model, but no champion: the candidate will win
    register(_registration("run-2", make_champion=True), backend=vertex)
    holder = lookup()
    assert holder is not None
    assert (holder.version_id, holder.artifact_uri) == ("2", "gs://shop/runs/run-2/train/model")


# --- deploy_model ---------------------------------------------------------------------------


class RecordingEndpointService(FakeEndpointServiceClient):
    """The fake EndpointService, keeping every DeployModelRequest."""

    def __init__(self) -> None:
        super().__init__()
        self.deploy_requests: list[Any] = []

    def deploy_model(self, request: Any) -> Any:
        self.deploy_requests.append(request)
        return super().deploy_model(request)


@pytest.fixture
def endpoint_service() -> RecordingEndpointService:
    return RecordingEndpointService()


def _deployment(version: int, traffic: int, **overrides: Any) -> DeploymentRequest:
    request: dict[str, Any] = dict(
        backend="vertex",
        model_resource_name=f"{PARENT}/models/500@{version}",
        model_version_id=str(version),
        endpoint_display_name="guess-your-order",
        traffic_percentage=traffic,
        keep_last_n=2,
        machine_type="n1-standard-4",
        min_replica_count=1,
        max_replica_count=3,
        service_account="serving@shop.iam.gserviceaccount.com",
        project=PROJECT,
        location=LOCATION,
    )
    request.update(overrides)
    return DeploymentRequest(**request)


def test_deploy_step_vertex_creates_the_endpoint_and_sends_a_valid_deploy_request(
    vertex: VertexBackend,
    endpoint_service: RecordingEndpointService,
) -> None:
    outcome = deploy(_deployment(1, 100), backend=vertex)

    (request,) = endpoint_service.deploy_requests
    assert isinstance(request, aiplatform_v1.DeployModelRequest)
    deployed = request.deployed_model
    assert deployed.model == f"{PARENT}/models/500@1"
    assert deployed.dedicated_resources.machine_spec.machine_type == "n1-standard-4"
    assert deployed.dedicated_resources.min_replica_count == 1
    assert deployed.dedicated_resources.max_replica_count == 3
    assert deployed.service_account == "serving@shop.iam.gserviceaccount.com"
    assert endpoint_service.calls.count("create_endpoint") == 1
    assert outcome.endpoint_resource_name == f"{PARENT}/endpoints/700"
    assert outcome.endpoint_uri == f"{API}/{PARENT}/endpoints/700"
    assert outcome.traffic == {outcome.deployed_model_id: 100}


def test_deploy_step_vertex_previous_version_keeps_the_rest_of_the_traffic(
    vertex: VertexBackend,
    endpoint_service: RecordingEndpointService,
) -> None:
    first = deploy(_deployment(1, 100), backend=vertex)
    second = deploy(_deployment(2, 30), backend=vertex)
    assert second.traffic == {first.deployed_model_id: 70, second.deployed_model_id: 30}


def test_deploy_step_vertex_rerun_is_idempotent(
    vertex: VertexBackend,
    endpoint_service: RecordingEndpointService,
) -> None:
    deploy(_deployment(1, 100), backend=vertex)
    second = deploy(_deployment(2, 30), backend=vertex)
    again = deploy(_deployment(2, 30), backend=vertex)
    assert again == second
    assert len(endpoint_service.deploy_requests) == 2
    assert endpoint_service.calls.count("create_endpoint") == 1


def test_deploy_step_vertex_prunes_zero_traffic_versions_beyond_keep_last_n(
    vertex: VertexBackend,
    endpoint_service: RecordingEndpointService,
) -> None:
    ids = [
        deploy(_deployment(v, t), backend=vertex).deployed_model_id
        for v, t in [(1, 100), (2, 30), (3, 100)]
    ]
    # v3 took all traffic; v1 and v2 held traffic before it, so both stay for rollback.
    endpoint = endpoint_service.get_endpoint(name=f"{PARENT}/endpoints/700")
    assert {d.id for d in endpoint.deployed_models} == set(ids)
    fourth = deploy(_deployment(4, 100), backend=vertex)
    endpoint = endpoint_service.get_endpoint(name=f"{PARENT}/endpoints/700")
    assert {d.id for d in endpoint.deployed_models} == {ids[2], fourth.deployed_model_id}
    assert fourth.traffic == {fourth.deployed_model_id: 100}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"traffic_percentage": 150}, "from 0 to 100"),
        ({"model_resource_name": "models/guess-your-order@1"}, "ID@VERSION"),
    ],
)
def test_deploy_step_vertex_bad_request_changes_nothing(
    vertex: VertexBackend,
    endpoint_service: RecordingEndpointService,
    overrides: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        deploy(_deployment(1, 100, **overrides), backend=vertex)
    assert endpoint_service.calls == []


# --- build_container ------------------------------------------------------------------------


@pytest.fixture
def cloud() -> tuple[FakeCloudBuildClient, FakeStorageClient]:
    return FakeCloudBuildClient(), FakeStorageClient()


@pytest.fixture
def trained_runs(cloud: tuple[FakeCloudBuildClient, FakeStorageClient]) -> None:
    """What the training jobs of runs 1-3 wrote: register refuses an empty model folder."""
    for run in ("run-1", "run-2", "run-3"):
        cloud[1].objects[f"gs://shop/runs/{run}/train/model/artifact.json"] = b"{}"


@pytest.fixture
def vertex(
    jobs: FakeJobServiceClient,
    models: RecordingModelService,
    endpoint_service: RecordingEndpointService,
    cloud: tuple[FakeCloudBuildClient, FakeStorageClient],
) -> VertexBackend:
    """The Vertex backend with every Google client replaced by its fake."""
    builds, storage = cloud
    return VertexBackend(
        PROJECT,
        LOCATION,
        job_client_factory=jobs.factory(),
        model_client=models,
        endpoint_client=endpoint_service,
        build_client=builds,
        storage_client=storage,
    )


IMAGE = "europe-west4-docker.pkg.dev/shop/training/tiny"


def _build_image(backend: Backend, **overrides: Any) -> Any:
    arguments: dict[str, Any] = dict(
        backend=backend,
        source_uri=str(FIXTURES),
        destination=IMAGE,
        kind="container",
        staging_uri="gs://shop/staging",
        project=PROJECT,
        location=LOCATION,
    )
    arguments.update(overrides)
    return build(**arguments)


def test_build_step_vertex_cloud_build_once_per_context_digest(
    vertex: VertexBackend,
    cloud: tuple[FakeCloudBuildClient, FakeStorageClient],
) -> None:
    from google.cloud.devtools import cloudbuild_v1

    builds, storage = cloud
    first = _build_image(vertex)
    again = _build_image(vertex)

    (sent,) = builds.builds
    assert isinstance(sent, cloudbuild_v1.Build)
    digest = first.digest.removeprefix("sha256:")
    assert list(sent.images) == [f"{IMAGE}:ctx-{digest}"]
    assert list(sent.steps[0].args)[:3] == ["build", "-t", f"{IMAGE}:ctx-{digest}"]
    tarball = storage.objects[f"gs://shop/staging/cloud-build/{digest}.tar.gz"]
    assert sent.source.storage_source.object_ == f"staging/cloud-build/{digest}.tar.gz"
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        assert {"Dockerfile", "tiny_trainer/task.py"} <= set(archive.getnames())
    assert first.reference.startswith(f"{IMAGE}@sha256:") and first.skipped is False
    assert (again.reference, again.digest, again.skipped) == (first.reference, first.digest, True)


def test_build_step_vertex_and_local_agree_on_the_context_digest(
    vertex: VertexBackend,
    cloud: tuple[FakeCloudBuildClient, FakeStorageClient],
    tmp_path: Path,
) -> None:
    on_vertex = _build_image(vertex)
    locally = _build_image(LocalBackend(tmp_path / "root"), gpu=False)
    assert locally.digest == on_vertex.digest
    assert locally.reference == f"{IMAGE}@{on_vertex.digest}"


def test_build_step_vertex_container_without_staging_uri_builds_nothing(
    vertex: VertexBackend,
    cloud: tuple[FakeCloudBuildClient, FakeStorageClient],
) -> None:
    with pytest.raises(ValueError, match="staging_uri"):
        _build_image(vertex, staging_uri="")
    assert cloud[0].builds == [] and cloud[1].objects == {}


@pytest.mark.slow
def test_build_step_vertex_python_package_uploaded_once_per_content(
    vertex: VertexBackend, cloud: tuple[FakeCloudBuildClient, FakeStorageClient], tmp_path: Path
) -> None:
    source = Path(shutil.copytree(FIXTURES / "tiny_trainer", tmp_path / "tiny_trainer"))
    arguments: dict[str, Any] = dict(
        backend=vertex,
        source_uri=str(source),
        destination="gs://shop/packages",
        package_name="tiny_trainer",
        package_version="0.1.0",
        project=PROJECT,
        location=LOCATION,
    )
    first = build(**arguments)
    again = build(**arguments)
    storage = cloud[1]
    assert list(storage.objects) == [first.reference]
    assert first.reference.startswith("gs://shop/packages/")
    assert first.reference.endswith("/tiny_trainer-0.1.0-py3-none-any.whl")
    assert first.skipped is False
    assert (again.reference, again.skipped) == (first.reference, True)


def test_build_step_vertex_refuses_a_dockerfile_that_copies_credentials(
    vertex: VertexBackend, cloud: tuple[FakeCloudBuildClient, FakeStorageClient], tmp_path: Path
) -> None:
    from vertex_retrain.build.context import BuildError

    context = tmp_path / "context"
    context.mkdir()
    (context / "sa.json").write_text('{"type": "service_account", "private_key": "-----"}')
    (context / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY . /app\n"
        'ENTRYPOINT ["python3", "-m", "trainer.task"]\n'
    )
    with pytest.raises(BuildError, match=r"sa\.json"):
        _build_image(vertex, source_uri=str(context))
    assert cloud[0].builds == [] and cloud[1].objects == {}  # nothing uploaded or built

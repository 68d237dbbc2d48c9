"""The local and the Vertex backend follow the same rules where they used to drift apart.

Each test runs the same step (or backend call) on a ``LocalBackend`` and on a ``VertexBackend``
built with the fakes of tests/fakes, and compares what each did: registration idempotency and
alias moves, the best-trial choice, flag rendering, keep_last_n with pruning and rollback, and
the build digest. The rules themselves are tested once in tests/test_rules.py.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from data.serving.support import register_echo, stop_all_servers

from tests.fakes.vertex_build import FakeCloudBuildClient, FakeStorageClient
from tests.fakes.vertex_jobs import FakeJobServiceClient
from tests.fakes.vertex_serving import FakeEndpointServiceClient, FakeModelServiceClient
from vertex_retrain.backends import backend_for
from vertex_retrain.backends.base import Backend
from vertex_retrain.backends.local.backend import LocalBackend
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.studies.tuning import TrialResult, TuningResult, trial_payload
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.steps.champion import find_alias_holder
from vertex_retrain.steps.deploy import DeploymentRequest, deploy
from vertex_retrain.steps.job_request import TrainingRequest, program_args
from vertex_retrain.steps.register import RegistrationRequest, register
from vertex_retrain.steps.tune import TuningRequest, tune

ROOT = Path(__file__).resolve().parent.parent
PROJECT, LOCATION = "shop", "europe-west4"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"
BACKENDS = ["local", "vertex"]


# The model folders the registrations below name, each holding what a training job wrote
# (register refuses a missing or empty one).
MODEL_URIS = [f"gs://shop/runs/{run}/model" for run in ("adhoc", "run-1", "run-2", "run-3")]
MODEL_URIS.append("gs://shop/other")


def _backend(name: str, root: Path) -> Backend:
    if name == "local":
        for uri in MODEL_URIS:
            folder = root / "gcs" / uri[len("gs://") :]
            folder.mkdir(parents=True)
            (folder / "artifact.json").write_text("{}")
        return LocalBackend(root)
    storage = FakeStorageClient()
    storage.objects.update({f"{uri}/artifact.json": b"{}" for uri in MODEL_URIS})
    return VertexBackend(
        PROJECT, LOCATION, model_client=FakeModelServiceClient(), storage_client=storage
    )


def test_backend_for_builds_each_backend_and_names_the_choices_otherwise() -> None:
    assert isinstance(backend_for("local"), LocalBackend)
    vertex = backend_for("vertex", project=PROJECT, location=LOCATION)
    assert isinstance(vertex, VertexBackend) and vertex.location == LOCATION
    with pytest.raises(ValueError, match="backend must be one of 'vertex', 'local'; got 'gcp'"):
        backend_for("gcp")


def test_step_refuses_a_backend_of_another_kind_than_its_request_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend='vertex' but a 'local' backend"):
        register(_registration("", make_champion=False), backend=LocalBackend(tmp_path))


# --- registration: idempotency key and alias moves ------------------------------------------


def _registration(run: str, make_champion: bool, **overrides: Any) -> RegistrationRequest:
    request: dict[str, Any] = dict(
        backend="vertex",
        artifact_uri=f"gs://shop/runs/{run or 'adhoc'}/model",
        display_name="guess-your-order",
        serving_image_uri="europe-west4-docker.pkg.dev/shop/serving/recommender:1",
        serving_command=["python", "-m", "trainer.serve"],
        make_champion=make_champion,
        pipeline_run=run,
        project=PROJECT,
        location=LOCATION,
    )
    request.update(overrides)
    return RegistrationRequest(**request)


@pytest.mark.parametrize("name", BACKENDS)
def test_parity_registration_without_a_pipeline_run_is_idempotent_on_both(
    name: str, tmp_path: Path
) -> None:
    backend = _backend(name, tmp_path / "root")
    request = _registration("", make_champion=False, backend=name)
    first = register(request, backend=backend)
    again = register(request, backend=backend)
    other = register(
        _registration("", make_champion=False, backend=name, artifact_uri="gs://shop/other"),
        backend=backend,
    )
    assert again == first
    assert other.version_id != first.version_id


@pytest.mark.parametrize("name", BACKENDS)
def test_parity_registering_the_champion_again_as_not_better_changes_nothing(
    name: str, tmp_path: Path
) -> None:
    # What the weekly template does after "nothing to decide" (a re-run whose candidate is the
    # champion's own folder): it registers that folder with make_champion=False.
    backend = _backend(name, tmp_path / "root")
    champion = register(_registration("run-1", True, backend=name), backend=backend)
    again = register(_registration("run-1", False, backend=name), backend=backend)
    assert again == champion and again.aliases == ["champion", "default"]
    holder = find_alias_holder(backend=backend, display_name="guess-your-order", alias="challenger")
    assert holder is None  # no challenger alias given, no version added


@pytest.mark.parametrize("name", BACKENDS)
def test_parity_champion_and_default_move_together_and_challengers_take_one_alias(
    name: str, tmp_path: Path
) -> None:
    backend = _backend(name, tmp_path / "root")
    first = register(_registration("run-1", True, backend=name), backend=backend)
    challenger = register(_registration("run-2", False, backend=name), backend=backend)
    custom = register(
        _registration("run-3", True, backend=name, champion_alias="production"), backend=backend
    )
    rerun = register(
        _registration("run-3", True, backend=name, champion_alias="production"), backend=backend
    )
    assert first.aliases == ["champion", "default"]
    assert challenger.aliases == ["challenger"]
    assert custom.aliases == ["default", "production"] and rerun == custom

    def holder(alias: str) -> str | None:
        found = find_alias_holder(backend=backend, display_name="guess-your-order", alias=alias)
        return None if found is None else found.version_id

    assert [holder(a) for a in ("champion", "challenger", "production", "default")] == [
        first.version_id,
        challenger.version_id,
        custom.version_id,
        custom.version_id,
    ]


# --- tuning: best-trial choice and trial flags ----------------------------------------------

# A tie between trials 12 and 9, a NaN and an infinite value that must not win, and a failed
# trial with the best value.
TRIALS = [("12", "SUCCEEDED", 0.5), ("9", "SUCCEEDED", 0.5), ("3", "SUCCEEDED", math.nan)]
TRIALS += [("4", "SUCCEEDED", math.inf), ("5", "INFEASIBLE", 0.9)]


def _vertex_trial(trial_id: str, state: str, value: float) -> dict[str, Any]:
    # Proto JSON writes a non-finite double as a string ("NaN", "Infinity").
    written: float | str = value
    if math.isnan(value):
        written = "NaN"
    elif math.isinf(value):
        written = "Infinity" if value > 0 else "-Infinity"
    return {
        "id": trial_id,
        "state": state,
        "parameters": [{"parameterId": "x", "value": float(trial_id)}],
        "finalMeasurement": {"metrics": [{"metricId": "score", "value": written}]},
    }


def test_parity_best_trial_ties_and_non_finite_values_the_same_on_both(tmp_path: Path) -> None:
    local = TuningResult(
        job_id="study",
        state="JOB_STATE_SUCCEEDED",
        error=None,
        metric_id="score",
        goal="MAXIMIZE",
        trials=[
            TrialResult(i, {"x": float(i)}, v, s, None, f"gs://b/{i}/model", f"j-{i}")
            for i, s, v in TRIALS
        ],
    )
    jobs = FakeJobServiceClient(
        ["JOB_STATE_SUCCEEDED"], trials=[_vertex_trial(*trial) for trial in TRIALS]
    )
    vertex = VertexBackend(PROJECT, LOCATION, job_client_factory=jobs.factory(), retry_wait_s=0)
    study = TuningRequest(
        trial=TrainingRequest(
            backend="vertex",
            display_name="study",
            base_output_directory="gs://b/study",
            image_uri="europe-west4-docker.pkg.dev/shop/training/tiny@sha256:" + "a" * 64,
            machine_type="n1-standard-4",
            accelerator_type="",
            accelerator_count=0,
            scheduling_strategy="STANDARD",
            project=PROJECT,
            location=LOCATION,
        ),
        parameter_specs=[{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 20}}],
        metric_id="score",
        max_trial_count=5,
        parallel_trial_count=1,
    )
    on_vertex = tune(
        study,
        gcp_resources_path=str(tmp_path / "gcp_resources"),
        report_path=str(tmp_path / "report.html"),
        backend=vertex,
    )
    assert local.best is not None
    assert on_vertex.best_trial_id == local.best.trial_id == "9"
    assert on_vertex.best_metric == local.best.metric == 0.5


def test_parity_trial_flags_are_rendered_like_every_other_flag() -> None:
    spec = {"workerPoolSpecs": [{"containerSpec": {"imageUri": "img", "args": ["--a"]}}]}
    local_trial = trial_payload(spec, {"embedding_dim": 16.0, "lr": 0.5}, "gs://b/t", "1")
    job_args = program_args(
        TrainingRequest(
            backend="vertex",
            display_name="d",
            base_output_directory="gs://b",
            image_uri="img",
            hyperparameters={"embedding_dim": 16.0, "lr": 0.5},
        )
    )
    trial_args = local_trial["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"]
    assert trial_args == ["--a", "--embedding_dim=16", "--lr=0.5"]
    assert job_args == ["--embedding_dim=16", "--lr=0.5"]


# --- deployment: keep_last_n, pruning, traffic split, rollback ------------------------------


@dataclass
class Serving:
    """A backend ready to deploy versions 1..4, and a view of its endpoint."""

    name: str
    backend: Backend
    resource_name: Callable[[int], str]
    deployed_ids: Callable[[], set[str]]


@pytest.fixture(params=BACKENDS)
def serving(request: pytest.FixtureRequest, root: Path) -> Iterator[Serving]:
    if request.param == "vertex":
        fake = FakeEndpointServiceClient()
        yield Serving(
            "vertex",
            VertexBackend(PROJECT, LOCATION, endpoint_client=fake),
            lambda version: f"{PARENT}/models/500@{version}",
            lambda: {d.id for e in fake.endpoints.values() for d in e.deployed_models},
        )
        return
    backend = LocalBackend()
    registry = ModelRegistry()
    for version in range(1, 5):
        register_echo(registry, f"v{version}", version)
    try:
        yield Serving(
            "local",
            backend,
            lambda version: f"models/recs@{version}",
            lambda: {
                m.deployed_model_id
                for e in backend.endpoints.list_endpoints()
                for m in e.deployed_models
            },
        )
    finally:
        stop_all_servers(backend.endpoints)


def _deploy(serving: Serving, version: int, traffic: int, keep_last_n: int = 2) -> Any:
    return deploy(
        DeploymentRequest(
            backend=serving.name,
            model_resource_name=serving.resource_name(version),
            model_version_id=str(version),
            endpoint_display_name="ep",
            traffic_percentage=traffic,
            keep_last_n=keep_last_n,
            project=PROJECT,
            location=LOCATION,
        ),
        backend=serving.backend,
    )


@pytest.mark.slow
def test_parity_deploy_prune_and_rollback_the_same_on_both(serving: Serving) -> None:
    with pytest.raises(ValueError, match="keep_last_n must be at least 2"):
        _deploy(serving, 1, 100, keep_last_n=1)
    assert serving.deployed_ids() == set()
    ids: dict[int, str] = {}
    ids[1] = _deploy(serving, 1, 100).deployed_model_id
    second = _deploy(serving, 2, 30)
    ids[2] = second.deployed_model_id
    assert second.traffic == {ids[1]: 70, ids[2]: 30}
    assert second.previous_traffic == {ids[1]: 100}
    rerun = _deploy(serving, 2, 50)  # a re-run of the same deployment, with another share
    assert (rerun.deployed_model_id, rerun.traffic) == (ids[2], {ids[1]: 50, ids[2]: 50})
    assert rerun.previous_traffic == {ids[1]: 100}  # still the split before its first attempt
    third = _deploy(serving, 3, 100)
    ids[3] = third.deployed_model_id
    # v1 is beyond keep_last_n=2 with no traffic, but the rollback split needs it.
    assert serving.deployed_ids() == set(ids.values())
    assert third.traffic == {ids[3]: 100}
    fourth = _deploy(serving, 4, 100)
    ids[4] = fourth.deployed_model_id
    assert serving.deployed_ids() == {ids[3], ids[4]}
    assert _deploy(serving, 4, 100).previous_traffic == {ids[3]: 100}  # a re-run
    back = serving.backend.rollback("ep")
    assert (back.traffic, back.deployed_model_id) == ({ids[3]: 100}, ids[3])
    assert serving.backend.rollback("ep").traffic == back.traffic  # the same split again


# --- build: one digest for the same source --------------------------------------------------


@pytest.mark.slow
def test_parity_python_package_digest_is_the_same_on_both(tmp_path: Path) -> None:
    source = Path(shutil.copytree(ROOT / "tests/data/components/tiny_trainer", tmp_path / "src"))
    storage = FakeStorageClient()
    vertex = VertexBackend(
        PROJECT, LOCATION, build_client=FakeCloudBuildClient(), storage_client=storage
    )
    arguments: dict[str, Any] = dict(destination="gs://shop/packages", name="tiny_trainer")
    on_vertex = vertex.build_python_package(source, version="0.1.0", **arguments)
    locally = LocalBackend(tmp_path / "root").build_python_package(
        source, version="0.1.0", **arguments
    )
    assert on_vertex.digest == locally.digest and on_vertex.digest.startswith("sha256:")
    uploaded = storage.objects[on_vertex.reference]
    built = (tmp_path / "root" / "gcs" / locally.reference.removeprefix("gs://")).read_bytes()
    assert uploaded == built  # reproducible wheels: the same bytes from both builders

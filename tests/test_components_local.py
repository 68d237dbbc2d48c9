"""Every component on the local backend, for real, through kfp.local's SubprocessRunner.

Each component runs once on its own and once inside a small pipeline defined here. kfp.local
refuses artifact arguments to a single-component call ("Input artifacts are not supported"),
so evaluate_model, register_model and deploy_model get their input artifacts from a
``dsl.importer`` in a one-step pipeline: the closest to a direct call kfp.local allows.
run_summary takes the final status of the tasks it guards, so it only exists in a pipeline.

The models are the reference trainer's, trained at a tiny scale (300 members, 8 weeks, one
epoch); the tuning and container tests use ``tests/data/components/tiny_trainer``.
"""

# No `from __future__ import annotations`: KFP reads the pipelines' annotations as types.
import datetime as dt
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from google_cloud_pipeline_components.types.artifact_types import VertexModel
from kfp import dsl
from kfp.dsl import Dataset, Metrics, Model

from tests.examples import (
    DRINK_SHOPS,
    dataset_declaration,
    evaluation_declaration,
    example_module,
)
from tests.kfp_local_session import init_kfp_local, task_temp_files_in
from trainer.data import generate
from trainer.split import week_of
from trainer.world import WorldConfig
from vertex_retrain.backends.local.kfp_adapter.placeholders import local_placeholders
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.cli.local_run import (
    LOCAL_LOCATION,
    LOCAL_PROJECT,
    run_pipeline_locally,
)
from vertex_retrain.components.build_container import build_container
from vertex_retrain.components.deploy_model import deploy_model
from vertex_retrain.components.evaluate_model import evaluate_model
from vertex_retrain.components.fixed_hyperparameters import fixed_hyperparameters
from vertex_retrain.components.hp_tune import hp_tune
from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.components.prepare_dataset import prepare_dataset
from vertex_retrain.components.register_model import register_model
from vertex_retrain.components.run_summary import run_summary
from vertex_retrain.components.train_custom_job import train_custom_job

pytestmark = [
    pytest.mark.slow,
    # kfp.local warns that our component image is not a Python image; expected here.
    pytest.mark.filterwarnings("ignore:You may be attemping:RuntimeWarning"),
    # ...and that an imported gs:// URI is not a local file; the local backend maps it.
    pytest.mark.filterwarnings("ignore:It looks like you're using the remote file:UserWarning"),
]

CHAIN = example_module(DRINK_SHOPS, "pipelines")
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "components"
TRANSACTIONS = "gs://shop/transactions"
PACKAGES = "gs://shop/packages"
PLACE = {"project": LOCAL_PROJECT, "location": LOCAL_LOCATION}
LOCAL = {"backend": "local", **PLACE}
TRAINER_IMAGE = "europe-west4-docker.pkg.dev/shop/training/trainer"
"""Where the reference trainer's Dockerfile is built: the jobs run it, as the templates do."""
TINY_IMAGE = "europe-west4-docker.pkg.dev/shop/training/tiny"
TINY_DOCKERFILE = (
    "FROM python:3.12-slim-trixie\nWORKDIR /app\nCOPY tiny_trainer/ /app/tiny_trainer/\n"
    'ENTRYPOINT ["python", "-m", "tiny_trainer.task"]\n'
)
CPU_JOB = {
    "machine_type": "n1-standard-4",
    "accelerator_type": "",
    "accelerator_count": 0,
    "scheduling_strategy": "STANDARD",
}
FAST_TRAINING = ["--epochs", "1", "--batch_size", "128", "--num_threads", "1"]
SERVING = {
    "serving_image_uri": "europe-west4-docker.pkg.dev/shop/serving/recommender:1",
    "serving_command": CHAIN.COMMON["serving_command"],
    "serving_extras": CHAIN.COMMON["serving_extras"],
    "sample_instances": CHAIN.SAMPLE_INSTANCES,
}

DECLARATION = dataset_declaration(DRINK_SHOPS)
RULE = evaluation_declaration(DRINK_SHOPS)


@dataclass(frozen=True)
class LocalWorld:
    """The module's local storage root, kfp.local pipeline root and generated data."""

    root: Path
    pipeline_root: Path
    transaction_rows: int


def _init_kfp_local(world: LocalWorld) -> None:
    init_kfp_local(world.pipeline_root)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalWorld]:
    base = tmp_path_factory.mktemp("components-local")
    with pytest.MonkeyPatch.context() as patch:
        # Module-wide: kfp.local's task processes inherit it, and training once is enough.
        patch.setenv("VERTEX_LOCAL_ROOT", str(base / "root"))
        task_temp_files_in(patch, base / "tmp")
        summary = generate(
            WorldConfig(members=300, stores=10, weeks=8, seed=1),
            str(to_local_path(TRANSACTIONS)),
        )
        created = LocalWorld(base / "root", base / "pipeline-root", int(summary["rows"]))
        _init_kfp_local(created)
        try:
            # The job components run as the pipeline's service account, a Vertex placeholder
            # that kfp.local cannot resolve; the local runner resolves it, as here.
            with local_placeholders(dt.datetime.now(dt.UTC)):
                yield created
        finally:
            endpoints = LocalEndpoints()
            for endpoint in endpoints.list_endpoints():
                endpoints.undeploy_all(endpoint.display_name)


@dataclass(frozen=True)
class Trained:
    """Outputs of the direct build, prepare and train calls (the reference trainer)."""

    package: Any
    image: str
    data: Any
    training: Any


@pytest.fixture(scope="module")
def trained(world: LocalWorld) -> Trained:
    _init_kfp_local(world)
    source = str(ROOT / "examples" / "drink_shops" / "trainer")
    package = build_container(
        source_uri=source, destination=PACKAGES, kind="python_package", **LOCAL
    )
    image = build_container(
        source_uri=source, destination=TRAINER_IMAGE, kind="container", gpu=False, **LOCAL
    ).outputs["reference"]
    data = prepare_dataset(
        backend="local",
        data_uri=TRANSACTIONS,
        dataset_declaration=DECLARATION,
        selection_periods=1,
        gate_periods=1,
    )
    training = train_custom_job(
        display_name="direct-training",
        base_output_directory="gs://shop/runs/direct",
        python_module="trainer.task",
        image_uri=image,
        # A single-component call cannot take the Dataset artifact, so its path goes in args.
        args=["--data", data.outputs["training_dataset"].path, *FAST_TRAINING],
        **CPU_JOB,
        **LOCAL,
    )
    return Trained(package, image, data, training)


def _copy_tiny_trainer(target: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "tiny_trainer", target / "tiny_trainer"))


@pytest.fixture(scope="module")
def tiny_image(world: LocalWorld, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny trainer as an image (its context on PYTHONPATH locally: it installs nothing)."""
    _init_kfp_local(world)
    context = _copy_tiny_trainer(tmp_path_factory.mktemp("tiny-image")).parent
    (context / "Dockerfile").write_text(TINY_DOCKERFILE)
    built = build_container(
        source_uri=str(context), destination=TINY_IMAGE, kind="container", gpu=False, **LOCAL
    )
    return str(built.outputs["reference"])


def _read_json(uri: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((to_local_path(uri) / name).read_text(encoding="utf-8"))
    return loaded


def _gcp_resource(task: Any) -> dict[str, Any]:
    (resource,) = json.loads(task.outputs["gcp_resources"])["resources"]
    return dict(resource)


# --- build_container ------------------------------------------------------------------------


def test_build_container_local_skips_unchanged_source_and_rebuilds_changed(
    world: LocalWorld, tmp_path: Path
) -> None:
    _init_kfp_local(world)
    source = _copy_tiny_trainer(tmp_path)
    arguments = dict(
        source_uri=str(source),
        destination="gs://shop/build-test",
        kind="python_package",
        package_name="tiny_trainer",
        package_version="0.1.0",
        **LOCAL,
    )
    first = build_container(**arguments).outputs
    again = build_container(**arguments).outputs
    (source / "task.py").write_text(
        (source / "task.py").read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8"
    )
    changed = build_container(**arguments).outputs

    assert first["reference"].startswith("gs://shop/build-test/")
    assert first["reference"].endswith(".whl")
    assert to_local_path(first["reference"]).is_file()
    assert first["digest"].startswith("sha256:") and first["skipped"] is False
    assert (again["reference"], again["digest"], again["skipped"]) == (
        first["reference"],
        first["digest"],
        True,
    )
    assert changed["skipped"] is False and changed["digest"] != first["digest"]


def test_build_container_local_container_image_runs_as_a_custom_training_job(
    world: LocalWorld,
) -> None:
    _init_kfp_local(world)
    image = build_container(
        source_uri=str(FIXTURES),
        destination="europe-west4-docker.pkg.dev/shop/training/tiny",
        kind="container",
        gpu=False,
        **LOCAL,
    ).outputs
    digest = image["digest"]
    assert image["reference"] == f"europe-west4-docker.pkg.dev/shop/training/tiny@{digest}"

    job = train_custom_job(
        display_name="container-training",
        base_output_directory="gs://shop/runs/container",
        image_uri=image["reference"],
        args=["--x", "2"],
        **CPU_JOB,
        **LOCAL,
    )
    assert job.outputs["state"] == "JOB_STATE_SUCCEEDED"
    assert _read_json(job.outputs["model"].uri, "model.json")["x"] == 2.0


# --- prepare_dataset ------------------------------------------------------------------------


def test_prepare_dataset_local_splits_off_a_selection_and_a_gate_week(
    world: LocalWorld, trained: Trained
) -> None:
    outputs = trained.data.outputs
    metadata = outputs["dataset"].metadata
    parts = outputs["train_rows"] + outputs["selection_rows"] + outputs["gate_rows"]
    assert parts == world.transaction_rows
    assert outputs["selection_rows"] > 0 and outputs["gate_rows"] > 0
    # weeks 0..7: the last one judges the candidate, the one before selects
    assert [week_of(p) for p in metadata["gate_periods"]] == [7]
    assert [week_of(p) for p in metadata["selection_periods"]] == [6]
    assert [week_of(p) for p in metadata["train_periods"]] == [0, 5]
    assert metadata["data_uri"] == TRANSACTIONS
    manifest = json.loads((Path(outputs["dataset"].path) / "manifest.json").read_text())
    assert manifest["gate"]["rows"] == outputs["gate_rows"]
    # The training jobs' dataset withholds the gate week.
    training = outputs["training_dataset"]
    withheld = json.loads((Path(training.path) / "manifest.json").read_text())
    assert "gate" not in withheld and withheld["withheld"] == {"gate": manifest["gate"]["periods"]}
    assert "gate_periods" not in training.metadata


def test_prepare_dataset_unknown_backend_fails_and_lists_the_choices(
    world: LocalWorld, capfd: pytest.CaptureFixture[str]
) -> None:
    _init_kfp_local(world)
    with pytest.raises(RuntimeError, match="prepare-dataset"):
        prepare_dataset(backend="gcp", data_uri=TRANSACTIONS, dataset_declaration=DECLARATION)
    assert "backend must be one of 'vertex', 'local'; got 'gcp'" in capfd.readouterr().out


# --- train_custom_job -----------------------------------------------------------------------


def test_train_custom_job_local_trains_into_the_model_artifact(trained: Trained) -> None:
    outputs = trained.training.outputs
    assert outputs["state"] == "JOB_STATE_SUCCEEDED"
    assert outputs["restarts"] == 0 and 0.0 < outputs["goodput"] <= 1.0
    model_uri = outputs["model"].uri
    # The folder is keyed on the task's inputs, not on a run: a retry finds the same one.
    key_folder = model_uri.rstrip("/").removesuffix("/train/model")
    assert key_folder.startswith("gs://shop/runs/direct/") and key_folder != model_uri
    assert {"artifact.json", "config.json", "weights.pt"} <= {
        p.name for p in to_local_path(model_uri).iterdir()
    }
    assert outputs["metrics"].metadata["goodput"] == outputs["goodput"]
    resource = _gcp_resource(trained.training)
    assert resource["resourceType"] == "CustomJob"
    assert Path(resource["resourceUri"].removeprefix("file://"), "state.json").is_file()


def test_train_custom_job_local_failure_fails_the_task_with_the_replica_log(
    world: LocalWorld, tiny_image: str, capfd: pytest.CaptureFixture[str]
) -> None:
    _init_kfp_local(world)
    with pytest.raises(RuntimeError, match="train-custom-job"):
        train_custom_job(
            display_name="failing-training",
            base_output_directory="gs://shop/runs/failing",
            python_module="tiny_trainer.task",
            image_uri=tiny_image,
            args=["--x", "9", "--fail_above", "1"],
            **CPU_JOB,
            **LOCAL,
        )
    printed = capfd.readouterr().out
    assert "exit code 3" in printed
    assert "x=9.0 is above 1.0; failing" in printed  # the replica's own log tail
    assert not to_local_path("gs://shop/runs/failing/model/model.json").exists()


def test_train_custom_job_impossible_machine_fails_before_any_job_starts(
    world: LocalWorld, capfd: pytest.CaptureFixture[str]
) -> None:
    _init_kfp_local(world)
    jobs_before = set((world.root / "jobs").glob("*"))
    with pytest.raises(RuntimeError, match="train-custom-job"):
        train_custom_job(
            display_name="impossible",
            base_output_directory="gs://shop/runs/impossible",
            image_uri="europe-west4-docker.pkg.dev/shop/training/tiny:1",
            machine_type="e2-standard-4",
            accelerator_type="NVIDIA_TESLA_T4",
            accelerator_count=1,
            **LOCAL,
        )
    assert "e2-standard-4" in capfd.readouterr().out
    assert set((world.root / "jobs").glob("*")) == jobs_before


# --- hp_tune and fixed_hyperparameters ------------------------------------------------------


def test_hp_tune_local_returns_the_best_successful_trial_and_a_report(
    world: LocalWorld, tiny_image: str
) -> None:
    _init_kfp_local(world)
    study = hp_tune(
        display_name="tiny-study",
        base_output_directory="gs://shop/runs/study",
        parameter_specs=[{"parameterId": "x", "discreteValueSpec": {"values": [1, 2, 3, 9]}}],
        metric_id="score",
        algorithm="GRID_SEARCH",
        max_trial_count=4,
        parallel_trial_count=1,
        max_failed_trial_count=2,
        python_module="tiny_trainer.task",
        image_uri=tiny_image,
        # x=9 would score best, but its trial fails: a failed trial must never win.
        args=["--fail_above", "5"],
        **CPU_JOB,
        **LOCAL,
    )
    outputs = study.outputs
    assert outputs["best_parameters"] == {"x": 3}
    assert outputs["best_metric"] == 3.0
    best_model = outputs["best_model"]
    assert best_model.uri.rstrip("/").endswith(f"/{outputs['best_trial_id']}/model")
    assert _read_json(best_model.uri, "model.json")["x"] == 3.0
    report = Path(outputs["trials_report"].path).read_text(encoding="utf-8")
    assert "<h3>Optimisation history</h3>" in report and report.count("<tr class=") == 4
    assert report.count("class='failed'") == 1
    assert _gcp_resource(study)["resourceType"] == "HyperparameterTuningJob"


def test_fixed_hyperparameters_local_passes_values_through(world: LocalWorld) -> None:
    _init_kfp_local(world)
    values = {"learning_rate": 0.01, "embedding_dim": 16, "optimizer": "adam"}
    assert fixed_hyperparameters(values=values).output == values


# --- evaluate_model, register_model, deploy_model: fed by dsl.importer ----------------------


class EvaluationOutputs(NamedTuple):
    """What the one-step evaluation pipeline hands back."""

    is_better: bool
    candidate_score: float
    champion_score: float
    reason: str
    metrics: Metrics


@dsl.pipeline(name="evaluate-imported")
def evaluate_imported(
    model_uri: str, dataset_uri: str, model_display_name: str, image_uri: str
) -> EvaluationOutputs:
    """evaluate_model on an imported candidate model and dataset."""
    model = dsl.importer(artifact_uri=model_uri, artifact_class=Model)
    data = dsl.importer(artifact_uri=dataset_uri, artifact_class=Dataset)
    evaluation = evaluate_model(
        candidate=model.output,
        dataset=data.output,
        model_display_name=model_display_name,
        base_output_directory="gs://shop/runs/evaluate-imported",
        evaluation_declaration=RULE,
        python_module="trainer.evaluate",
        image_uri=image_uri,
        args=["--num-threads", "1"],
        backend="local",
        project=LOCAL_PROJECT,
        location=LOCAL_LOCATION,
    )
    return EvaluationOutputs(
        evaluation.outputs["is_better"],
        evaluation.outputs["candidate_score"],
        evaluation.outputs["champion_score"],
        evaluation.outputs["reason"],
        evaluation.outputs["metrics"],
    )


class RegistrationOutputs(NamedTuple):
    """What the one-step registration pipeline hands back."""

    version_id: str
    aliases: list
    vertex_model: VertexModel


@dsl.pipeline(name="register-imported")
def register_imported(
    model_uri: str,
    model_display_name: str,
    make_champion: bool,
    pipeline_run: str,
    serving_package_uri: str,
) -> RegistrationOutputs:
    """register_model on an imported model directory."""
    model = dsl.importer(artifact_uri=model_uri, artifact_class=Model)
    registered = register_model(
        model=model.output,
        display_name=model_display_name,
        make_champion=make_champion,
        pipeline_run=pipeline_run,
        serving_package_uri=serving_package_uri,
        **SERVING,
        backend="local",
        project=LOCAL_PROJECT,
        location=LOCAL_LOCATION,
    )
    return RegistrationOutputs(
        registered.outputs["version_id"],
        registered.outputs["aliases"],
        registered.outputs["vertex_model"],
    )


class DeploymentOutputs(NamedTuple):
    """What the one-step deployment pipeline hands back."""

    deployed_model_id: str
    traffic: dict
    previous_traffic: dict


@dsl.pipeline(name="deploy-imported")
def deploy_imported(
    model_uri: str, resource_name: str, endpoint_display_name: str, traffic_percentage: int
) -> DeploymentOutputs:
    """deploy_model on an imported google.VertexModel (what register_model outputs)."""
    model = dsl.importer(
        artifact_uri=model_uri,
        artifact_class=VertexModel,
        metadata={"resourceName": resource_name},
    )
    deployed = deploy_model(
        vertex_model=model.output,
        endpoint_display_name=endpoint_display_name,
        traffic_percentage=traffic_percentage,
        backend="local",
        project=LOCAL_PROJECT,
        location=LOCAL_LOCATION,
    )
    return DeploymentOutputs(
        deployed.outputs["deployed_model_id"],
        deployed.outputs["traffic"],
        deployed.outputs["previous_traffic"],
    )


@dataclass(frozen=True)
class Lifecycle:
    """A model's life through the importer pipelines, in order."""

    model_uri: str
    champion: Any
    champion_again: Any
    tie_evaluation: Any
    challenger: Any
    first_deployment: Any
    second_deployment: Any
    second_deployment_again: Any


@pytest.fixture(scope="module")
def lifecycle(world: LocalWorld, trained: Trained) -> Lifecycle:
    _init_kfp_local(world)
    model_uri = trained.training.outputs["model"].uri
    dataset_uri = trained.data.outputs["dataset"].uri
    name = "direct-model"

    def evaluate() -> Any:
        return evaluate_imported(
            model_uri=model_uri,
            dataset_uri=dataset_uri,
            model_display_name=name,
            image_uri=trained.image,
        ).outputs

    def register(make_champion: bool, run: str, uri: str = model_uri) -> Any:
        return register_imported(
            model_uri=uri, model_display_name=name, make_champion=make_champion,
            pipeline_run=run, serving_package_uri=trained.package.outputs["reference"],
        ).outputs  # fmt: skip

    def deploy(registered: Any, traffic: int) -> Any:
        artifact = registered["vertex_model"]
        return deploy_imported(
            model_uri=artifact.uri,
            resource_name=artifact.metadata["resourceName"],
            endpoint_display_name="direct-endpoint",
            traffic_percentage=traffic,
        ).outputs

    champion = register(True, "run-1")
    # The same folder again, from a re-run: the version it already is, whatever the run.
    champion_again = register(True, "run-1-rerun")
    tie_evaluation = evaluate()  # the candidate is now the champion itself
    # A version is its model folder (rules.idempotency.registration_key): another week's
    # model, here a copy of the same weights, is another version.
    other_week = "gs://shop/runs/direct-week-2/model"
    shutil.copytree(to_local_path(model_uri), to_local_path(other_week))
    challenger = register(False, "run-2", other_week)
    first_deployment = deploy(champion, 100)
    second_deployment = deploy(challenger, 30)
    second_deployment_again = deploy(challenger, 30)
    return Lifecycle(
        model_uri,
        champion,
        champion_again,
        tie_evaluation,
        challenger,
        first_deployment,
        second_deployment,
        second_deployment_again,
    )


def test_evaluate_model_local_candidate_that_is_the_champion_decides_nothing(
    lifecycle: Lifecycle,
) -> None:
    tie = lifecycle.tie_evaluation
    assert tie["is_better"] is False
    assert tie["champion_score"] == pytest.approx(tie["candidate_score"])
    version = lifecycle.champion["version_id"]
    assert tie["reason"].startswith(
        f"the candidate is the current champion (version {version}): nothing to decide"
    )
    reported = tie["metrics"].metadata
    assert reported["champion_ndcg_at_10"] == pytest.approx(tie["champion_score"])
    assert reported["candidate_ndcg_at_10"] == pytest.approx(tie["candidate_score"])
    assert reported["is_better"] == 0.0 and "reference_popularity_ndcg_at_10" in reported


def test_register_model_local_champion_moves_only_when_told(
    world: LocalWorld, lifecycle: Lifecycle
) -> None:
    champion, challenger = lifecycle.champion, lifecycle.challenger
    assert sorted(champion["aliases"]) == ["champion", "default"]
    assert challenger["aliases"] == ["challenger"]
    registry = ModelRegistry()
    assert registry.get_version("direct-model", "champion").version_id == champion["version_id"]
    assert registry.get_version("direct-model", "challenger").version_id == challenger["version_id"]
    # kfp.local hands custom artifact types back as dsl.Artifact; the schema title is
    # checked on the compiled spec (test_components_gcpc.py).
    artifact = champion["vertex_model"]
    assert artifact.metadata["resourceName"] == f"models/direct-model@{champion['version_id']}"
    assert artifact.uri == lifecycle.model_uri


def test_register_model_local_rerun_of_the_same_task_adds_no_version(
    lifecycle: Lifecycle,
) -> None:
    assert lifecycle.champion_again["version_id"] == lifecycle.champion["version_id"]
    versions = ModelRegistry().list_versions("direct-model")
    assert len(versions) == 2  # the champion (registered twice) and the challenger


def test_deploy_model_local_keeps_the_previous_version_for_rollback(
    lifecycle: Lifecycle,
) -> None:
    first_id = lifecycle.first_deployment["deployed_model_id"]
    second_id = lifecycle.second_deployment["deployed_model_id"]
    assert lifecycle.first_deployment["traffic"] == {first_id: 100}
    assert lifecycle.second_deployment["traffic"] == {first_id: 70, second_id: 30}
    # What a rollback restores, as the run summary names it: nothing before the first.
    assert lifecycle.first_deployment["previous_traffic"] == {}
    assert lifecycle.second_deployment["previous_traffic"] == {first_id: 100}
    endpoint = LocalEndpoints().get("direct-endpoint")
    assert all(deployed.running for deployed in endpoint.deployed_models)


def test_deploy_model_local_rerun_does_not_deploy_twice(lifecycle: Lifecycle) -> None:
    again = lifecycle.second_deployment_again
    assert again["deployed_model_id"] == lifecycle.second_deployment["deployed_model_id"]
    assert again["traffic"] == lifecycle.second_deployment["traffic"]
    assert len(LocalEndpoints().get("direct-endpoint").deployed_models) == 2


# --- a re-run of a week that failed after training -----------------------------------------


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def evaluate_unless_broken(broken_marker: str, model: dsl.Input[Model]) -> str:
    """Stands for an evaluation that fails while ``broken_marker`` exists."""
    import os

    if os.path.exists(broken_marker):
        raise RuntimeError("the evaluation failed")
    return model.uri


@dsl.pipeline(name="train-then-evaluate")
def train_then_evaluate(image_uri: str, broken_marker: str) -> None:
    """The weekly shape in small: a cached training, then an evaluation that may fail."""
    training = train_custom_job(
        display_name="rerun-training",
        base_output_directory="gs://shop/runs/rerun",
        python_module="tiny_trainer.task",
        image_uri=image_uri,
        args=["--x", "2"],
        **CPU_JOB,
        **LOCAL,
    )
    evaluate_unless_broken(
        broken_marker=broken_marker, model=training.outputs["model"]
    ).set_caching_options(False)


def test_train_custom_job_local_rerun_after_a_failed_evaluation_reuses_the_training(
    world: LocalWorld, tiny_image: str, tmp_path: Path
) -> None:
    import io

    from vertex_retrain.cli.local_run import cached_tasks

    marker = tmp_path / "broken"
    marker.touch()
    arguments = {"image_uri": tiny_image, "broken_marker": str(marker)}
    failed = run_pipeline_locally(train_then_evaluate, arguments, console=io.StringIO())
    assert not failed.succeeded
    marker.unlink()  # the evaluation is fixed; the week is run again
    console = io.StringIO()
    rerun = run_pipeline_locally(train_then_evaluate, arguments, console=console)
    assert rerun.succeeded, console.getvalue()[-3000:]
    assert failed.run_dir is not None and rerun.run_dir is not None
    assert failed.run_dir != rerun.run_dir
    assert cached_tasks(rerun.run_dir) == {"train-custom-job": failed.run_dir.name}


# --- every component inside one small pipeline ----------------------------------------------


@dsl.pipeline(name="components-small")
def small_pipeline(
    trainer_source: str,
    model_display_name: str,
    endpoint_display_name: str,
    backend: str = "local",
    project: str = LOCAL_PROJECT,
    location: str = LOCAL_LOCATION,
) -> None:
    """Build, prepare, tune, train with the best parameters, evaluate, register, deploy."""
    place = {"backend": backend, "project": project, "location": location}
    job = {
        "python_module": "trainer.task",
        "args": FAST_TRAINING,
        **CPU_JOB,
        **place,
    }
    summary = run_summary(
        pipeline_root=dsl.PIPELINE_ROOT_PLACEHOLDER,
        run_name=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
        worker_count=0,
        **CPU_JOB,
        **place,
    )
    with dsl.ExitHandler(summary):
        package = build_container(
            source_uri=trainer_source,
            destination=PACKAGES,
            kind="python_package",
            **place,
        )
        image = build_container(
            source_uri=trainer_source,
            destination=TRAINER_IMAGE,
            kind="container",
            gpu=False,
            **place,
        )
        data = prepare_dataset(
            data_uri=TRANSACTIONS, dataset_declaration=DECLARATION, backend=backend
        )
        study = hp_tune(
            display_name="small-study",
            base_output_directory="gs://shop/runs/small",
            # integerValueSpec, not discreteValueSpec: discrete values are doubles, and the
            # trainer's --embedding_dim takes an int ("16.0" is refused).
            parameter_specs=[
                {"parameterId": "embedding_dim", "integerValueSpec": {"minValue": 8, "maxValue": 9}}
            ],
            metric_id="ndcg_at_10",
            algorithm="GRID_SEARCH",
            max_trial_count=2,
            parallel_trial_count=2,
            image_uri=image.outputs["reference"],
            dataset=data.outputs["training_dataset"],
            **job,
        )
        chosen = fixed_hyperparameters(values=study.outputs["best_parameters"])
        training = train_custom_job(
            display_name="small-training",
            base_output_directory="gs://shop/runs/small",
            image_uri=image.outputs["reference"],
            dataset=data.outputs["training_dataset"],
            hyperparameters=chosen.output,
            **job,
        )
        evaluation = evaluate_model(
            candidate=training.outputs["model"],
            dataset=data.outputs["dataset"],
            model_display_name=model_display_name,
            base_output_directory="gs://shop/runs/small",
            # Trained for seconds on a small world, the candidate beats popularity, not the
            # members' own usual: the example's four references would keep it out.
            evaluation_declaration={**RULE, "reference": "popularity"},
            python_module="trainer.evaluate",
            image_uri=image.outputs["reference"],
            args=["--num-threads", "1"],
            **place,
        )
        registered = register_model(
            model=training.outputs["model"],
            display_name=model_display_name,
            make_champion=evaluation.outputs["is_better"],
            evaluation=evaluation.outputs["metrics"],
            pipeline_run=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
            serving_package_uri=package.outputs["reference"],
            **SERVING,
            **place,
        )
        deploy_model(
            vertex_model=registered.outputs["vertex_model"],
            endpoint_display_name=endpoint_display_name,
            **place,
        )


def test_components_local_small_pipeline_runs_every_component_in_order(
    world: LocalWorld,
) -> None:
    import io

    console = io.StringIO()
    outcome = run_pipeline_locally(
        small_pipeline,
        {
            "trainer_source": str(ROOT / "examples" / "drink_shops" / "trainer"),
            "model_display_name": "pipeline-model",
            "endpoint_display_name": "pipeline-endpoint",
        },
        console=console,
    )
    assert outcome.succeeded, console.getvalue()[-4000:]
    summary = outcome.summary
    assert summary is not None and summary["state"] == "SUCCEEDED"
    decision = summary["decision"]
    assert decision["is_better"] is True and decision["champion_score"] == -1.0
    assert "no champion yet" in decision["reason"]
    assert "champion_ndcg_at_10" not in summary["metrics"]
    assert summary["metrics"]["candidate_ndcg_at_10"] == pytest.approx(decision["candidate_score"])

    version = ModelRegistry().get_version("pipeline-model", "champion")
    assert summary["registered"]["version_id"] == version.version_id
    assert version.metrics["candidate_ndcg_at_10"] == pytest.approx(
        summary["decision"]["candidate_score"]
    )
    endpoint = LocalEndpoints().get("pipeline-endpoint")
    (deployed,) = endpoint.deployed_models
    assert deployed.model_version_id == version.version_id and deployed.running
    assert summary["deployment"]["traffic"] == {deployed.deployed_model_id: 100}
    assert summary["deployment"]["endpoint"] == "endpoints/pipeline-endpoint"

    # The study's best embedding size is what the training task trained with.
    run_dir = outcome.run_dir
    assert run_dir is not None
    study = json.loads((run_dir / "hp-tune" / "executor_output.json").read_text())
    best = study["parameterValues"]["best_parameters"]["embedding_dim"]
    model_uri = summary["training"]["model_uri"]
    # base/<key of the task's inputs>/train/model: no run name in the folder.
    assert re.fullmatch(r"gs://shop/runs/small/[0-9a-f]{20}/train/model/?", model_uri)
    assert _read_json(model_uri, "config.json")["model"]["embedding_dim"] == best

"""Compiled component YAML: what another repository gets from dist/components/.

Every component compiles to its own YAML; the YAML loads with
``kfp.components.load_component_from_file`` into a pipeline that is not ours, and that pipeline
compiles and runs on this machine (kfp.local, local backend).
"""

# No `from __future__ import annotations`: KFP reads the pipeline's annotations as types.
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kfp import components, dsl
from kfp.dsl import Model

from tests.golden_files import GOLDEN_DIR, check_golden, normalise, updating
from tests.kfp_local_session import init_kfp_local, task_temp_files_in
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.cli.compiling import compile_all, compile_to_dict
from vertex_retrain.cli.local_run import LOCAL_LOCATION, LOCAL_PROJECT
from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.pipelines import catalog

ROOT = Path(__file__).resolve().parent.parent
TINY_TRAINER = ROOT / "tests" / "data" / "components" / "tiny_trainer"
IMAGE = "europe-west4-docker.pkg.dev/shop/components/vertex-retrain:0.1.0"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    compile_all(out, component_image=IMAGE)
    return out / "components"


def _spec(dist: Path, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((dist / f"{name}.yaml").read_text(encoding="utf-8"))
    return loaded


def test_component_yaml_every_component_compiles_to_its_own_file(dist: Path) -> None:
    assert sorted(p.stem for p in dist.glob("*.yaml")) == sorted(catalog.COMPONENTS)
    for name in catalog.COMPONENTS:
        loaded = components.load_component_from_file(str(dist / f"{name}.yaml"))
        assert loaded.name == name.replace("_", "-")
        executors = _spec(dist, name)["deploymentSpec"]["executors"]
        assert {e["container"]["image"] for e in executors.values()} == {IMAGE}


@pytest.mark.parametrize("name", sorted(catalog.COMPONENTS))
def test_component_yaml_compiles_to_golden_file(name: str) -> None:
    # As KFP keeps for its own components: any change to a component's compiled interface or
    # embedded code shows up as a reviewed diff of tests/golden/components/<name>.yaml.
    actual = normalise(compile_to_dict(catalog.load(catalog.COMPONENTS[name])))
    check_golden(GOLDEN_DIR / "components" / f"{name}.yaml", actual, __file__)


def test_component_yaml_golden_files_match_the_catalog() -> None:
    # A component dropped from the catalog leaves no stale golden file behind; UPDATE_GOLDEN=1
    # removes it (the parametrized test above writes the missing ones).
    folder = GOLDEN_DIR / "components"
    stale = sorted(p for p in folder.glob("*.yaml") if p.stem not in catalog.COMPONENTS)
    if updating():
        for path in stale:
            path.unlink()
        return
    missing = sorted(set(catalog.COMPONENTS) - {p.stem for p in folder.glob("*.yaml")})
    assert (stale, missing) == ([], []), "run UPDATE_GOLDEN=1 pytest " + __file__


def test_component_yaml_project_and_location_default_to_the_pipeline_placeholders(
    dist: Path,
) -> None:
    placed = []
    for name in catalog.COMPONENTS:
        text = (dist / f"{name}.yaml").read_text(encoding="utf-8")
        assert "us-central1" not in text, name  # kubeflow/pipelines#11283
        inputs = _spec(dist, name)["root"].get("inputDefinitions", {}).get("parameters", {})
        if "project" not in inputs:
            continue
        placed.append(name)
        assert inputs["project"]["defaultValue"] == "{{$.pipeline_google_cloud_project_id}}"
        assert inputs["location"]["defaultValue"] == "{{$.pipeline_google_cloud_location}}"
    # Only the pure helpers, which call no Google API, take no project.
    assert set(catalog.COMPONENTS) - set(placed) == {
        "prepare_dataset",
        "fixed_hyperparameters",
        "no_image",
        "data_window",
        "source_digest",
        "check_data",
        "stop_run",
    }


def test_component_yaml_without_component_image_keeps_the_declared_default() -> None:
    spec = compile_to_dict(catalog.load(catalog.COMPONENTS["prepare_dataset"]))
    (executor,) = spec["deploymentSpec"]["executors"].values()
    assert executor["container"]["image"] == DEFAULT_COMPONENT_IMAGE


@pytest.fixture
def local_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    task_temp_files_in(monkeypatch, tmp_path / "tmp")
    init_kfp_local(tmp_path / "pipeline-root")
    yield tmp_path


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:You may be attemping:RuntimeWarning")
def test_component_yaml_loaded_into_another_pipeline_compiles_and_runs_locally(
    dist: Path, local_run: Path
) -> None:
    build_op = components.load_component_from_file(str(dist / "build_container.yaml"))
    values_op = components.load_component_from_file(str(dist / "fixed_hyperparameters.yaml"))
    train_op = components.load_component_from_file(str(dist / "train_custom_job.yaml"))

    @dsl.pipeline(name="someone-elses-pipeline")
    def reuse(source: str, backend: str = "local") -> Model:
        place = {"backend": backend, "project": LOCAL_PROJECT, "location": LOCAL_LOCATION}
        image = build_op(
            source_uri=source,
            destination="us-docker.pkg.dev/elsewhere/training/tiny",
            kind="container",
            gpu=False,
            **place,
        )
        chosen = values_op(values={"x": 4})
        training = train_op(
            display_name="reused-training",
            base_output_directory="gs://elsewhere/runs",
            python_module="tiny_trainer.task",
            image_uri=image.outputs["reference"],
            hyperparameters=chosen.output,
            machine_type="n1-standard-4",
            accelerator_type="",
            accelerator_count=0,
            scheduling_strategy="STANDARD",
            service_account="",  # bare kfp.local resolves no Vertex placeholder
            **place,
        )
        return training.outputs["model"]

    spec = compile_to_dict(reuse)
    assert set(spec["root"]["dag"]["tasks"]) == {
        "build-container",
        "fixed-hyperparameters",
        "train-custom-job",
    }
    context = local_run / "context"  # the image: the package under its WORKDIR
    shutil.copytree(TINY_TRAINER, context / "tiny_trainer")
    (context / "Dockerfile").write_text(
        "FROM python:3.12-slim-trixie\nWORKDIR /app\nCOPY tiny_trainer/ /app/tiny_trainer/\n"
        'ENTRYPOINT ["python", "-m", "tiny_trainer.task"]\n'
    )
    model = reuse(source=str(context)).output
    trained = json.loads((to_local_path(model.uri) / "model.json").read_text(encoding="utf-8"))
    assert trained["x"] == 4.0  # the loaded fixed_hyperparameters fed the loaded training

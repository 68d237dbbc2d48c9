"""The templates' jobs run the team's own image by default; the package path stays explicit.

Compiled IR and the jobs preflight builds from it (no run), the build step's refusal, the
examples' Dockerfiles, and the local executor running a container in its project's own
environment (one short subprocess).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.examples import DAILY_DEMAND, DRINK_SHOPS, example_module
from vertex_retrain.backends.local.environments.build_index import lookup_image
from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.pool_launch import resolve_pool
from vertex_retrain.build.dockerfile_lint import parse_dockerfile
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.job_tasks import STAND_IN_IMAGE, job_tasks
from vertex_retrain.cli.spec_tasks import leaf_tasks
from vertex_retrain.pipelines import train_only, weekly_retraining
from vertex_retrain.specs.defaults import CONTAINER, PYTHON_PACKAGE, TRAINING
from vertex_retrain.steps.build import build

TEMPLATES = {"weekly-retraining": weekly_retraining, "train-only": train_only}
TEAM = {
    "data_uri": "gs://b/data",
    "dataset_declaration": {},
    "evaluation_declaration": {},
    "source_uri": "gs://b/source/mytrainer",
    "package_destination": "gs://b/packages",
    "package_uri": "gs://b/packages/mytrainer-1.0-py3-none-any.whl",
    "training_module": "mytrainer.task",
    "evaluation_module": "mytrainer.evaluate",
    "output_root": "gs://b/runs",
    "model_display_name": "m",
    "serving_image_uri": "europe-west4-docker.pkg.dev/p/serving/m:1",
    "image_destination": "europe-west4-docker.pkg.dev/p/training/mytrainer",
}


def _all_tasks(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every task of the spec's DAGs, by display name."""
    found = {}
    dags = [spec["root"]["dag"], *(c["dag"] for c in spec["components"].values() if "dag" in c)]
    for dag in dags:
        for name, task in dag.get("tasks", {}).items():
            found[task.get("taskInfo", {}).get("name", name)] = task
    return found


LEARNING_RATE = {
    "parameterId": "lr",
    "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1},
    "scaleType": "UNIT_LOG_SCALE",
}


def _arguments(spec: dict[str, Any], **changes: Any) -> dict[str, Any]:
    declared = spec["root"]["inputDefinitions"]["parameters"]
    given = {k: v for k, v in TEAM.items() if k in declared}
    return {**default_arguments(spec), **given, **changes}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_builds_the_dockerfile_and_feeds_its_image_to_every_job(name: str) -> None:
    spec = compile_to_dict(TEMPLATES[name])
    declared = spec["root"]["inputDefinitions"]["parameters"]
    assert declared["training_code"]["defaultValue"] == CONTAINER
    tasks = _all_tasks(spec)
    build_image = tasks["build-image"]["inputs"]["parameters"]
    assert build_image["kind"]["runtimeValue"]["constant"] == "container"
    assert "source_digest" in build_image  # keyed on the Dockerfile's and the code's digest
    unknown = {
        task.path.rsplit("/", 1)[-1]: task.unknown.get("image_uri", "")
        for task in leaf_tasks(spec, _arguments(spec))
        if task.function in ("train_custom_job", "hp_tune", "evaluate_model")
    }
    assert {"train", "evaluate"} <= set(unknown)
    # The image is the build's (or, on the package path, no_image's), through dsl.OneOf: the
    # group is named with the steps in it, the names compile lists (the group is no step).
    assert all(
        "an output of 'container-or-package', the group of steps build-image, image-digest, "
        "prebuilt-executor-image" in why
        for why in unknown.values()
    )


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_jobs_run_the_module_in_the_built_image_by_default(name: str) -> None:
    spec = compile_to_dict(TEMPLATES[name])
    study = {"tuning_parameters": [LEARNING_RATE], "tuning_metric": "rmse", "tune": True}
    jobs = {job.name: job for job in job_tasks(spec, _arguments(spec, **study))}
    for job_name, module in (("train", "mytrainer.task"), ("evaluate", "mytrainer.evaluate")):
        job = jobs[job_name]
        (pool,) = job.payload["jobSpec"]["workerPoolSpecs"]  # type: ignore[index]
        assert pool["containerSpec"]["imageUri"] == STAND_IN_IMAGE
        assert pool["containerSpec"]["command"] == ["python", "-m", module]
        assert job.executor_image_uri == ""  # no prebuilt image: none is checked
        assert not [p for p in job.problems if p.severity == "error"], job.problems
    if "tune" in jobs:
        trial = jobs["tune"].payload["trialJobSpec"]["workerPoolSpecs"][0]  # type: ignore[index]
        assert trial["containerSpec"]["command"] == ["python", "-m", "mytrainer.task"]


def test_template_package_path_runs_the_package_on_its_executor_image() -> None:
    spec = compile_to_dict(train_only)
    arguments = _arguments(spec, training_code=PYTHON_PACKAGE)
    (train,) = [job for job in job_tasks(spec, arguments) if job.name == "train"]
    (pool,) = train.payload["jobSpec"]["workerPoolSpecs"]  # type: ignore[index]
    assert pool["pythonPackageSpec"]["pythonModule"] == "mytrainer.task"
    assert train.executor_image_uri == TRAINING.executor_image_uri  # checked by preflight


def test_build_of_a_container_without_destination_names_the_parameter(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text('FROM python:3.12-slim-trixie\nENTRYPOINT ["python"]\n')
    with pytest.raises(ValueError, match="image_destination") as refused:
        build(backend="local", source_uri=str(tmp_path), destination="", kind="container")
    assert "training_code='python_package'" in str(refused.value)


@pytest.mark.parametrize(
    ("folder", "package", "dockerfile", "base"),
    [
        (DRINK_SHOPS, "trainer", "trainer/Dockerfile",
         "nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04"),
        (DAILY_DEMAND, "demand_forecast", "demand_forecast/Dockerfile",
         "python:3.12-slim-trixie"),
    ],
)  # fmt: skip
def test_example_trains_in_its_own_image_from_a_maintained_base(
    folder: Path, package: str, dockerfile: str, base: str
) -> None:
    info = parse_dockerfile((folder / dockerfile).read_text(encoding="utf-8"))
    assert info.base_image == base
    assert info.installed_context() == ("framework",)  # the package, with what it declared
    assert info.entrypoint == ["python", "-m", f"{package}.task"]
    team = example_module(folder, "pipelines")
    for pipeline in (team.weekly, team.experiment):
        defaults = default_arguments(compile_to_dict(pipeline))
        assert defaults["training_code"] == CONTAINER
        assert defaults["image_destination"] == team.TRAINING_IMAGE
        assert defaults["source_uri"] == team.SOURCE_URI
    assert "executor_image_uri" not in team.COMMON


def test_dockerfile_installing_its_context_is_read_with_its_extras() -> None:
    installs = parse_dockerfile(
        "FROM python:3.12-slim-trixie\nWORKDIR /app\nCOPY . .\n"
        'RUN pip install --no-cache-dir -r req.txt && pip install ".[serve,x]"\n'
    )
    assert installs.installed_context() == ("serve", "x")
    elsewhere = parse_dockerfile(
        "FROM python:3.12-slim-trixie\nCOPY . /app\nRUN pip install /other -r /app/req.txt\n"
    )
    assert elsewhere.installed_context() is None


TASK = """\
import importlib.util, sys
print("kfp importable:", importlib.util.find_spec("kfp") is not None)
print("tinyjob from:", __import__("tinyjob").__file__)
print("args:", sys.argv[1:])
"""


def _context(folder: Path, *, installs: bool) -> Path:
    (folder / "tinyjob").mkdir(parents=True)
    (folder / "tinyjob" / "__init__.py").write_text("")
    (folder / "tinyjob" / "task.py").write_text(TASK)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tinyjob"\nversion = "1.0"\ndependencies = []\n'
        '[tool.setuptools]\npackages = ["tinyjob"]\n'
    )
    install = "RUN pip install /src/tinyjob\n" if installs else ""
    (folder / "Dockerfile").write_text(
        f"FROM python:3.12-slim-trixie\nWORKDIR /app\nCOPY . /src/tinyjob\n{install}"
        'ENTRYPOINT ["python", "-m", "tinyjob.task"]\n'
    )
    return folder


def test_local_container_job_runs_in_an_environment_holding_only_its_project(
    root: Path, tmp_path: Path
) -> None:
    built = build_container_image(
        _context(tmp_path / "ctx", installs=True), image_uri="us-docker.pkg.dev/p/r/tinyjob"
    )
    assert lookup_image(built.uri, root)["package"].endswith(".whl")
    spec = {"imageUri": built.uri, "command": ["python", "-m", "tinyjob.task"], "args": ["--a=1"]}
    launch = resolve_pool({"containerSpec": spec}, root)
    assert launch.isolated and launch.argv[0] != sys.executable
    assert "PYTHONPATH" not in launch.env
    environ = {**launch.inherited(os.environ), **launch.env}
    done = subprocess.run(
        launch.argv, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # The library (and kfp) of this process are not in the job's environment, as in the image.
    assert "kfp importable: False" in done.stdout
    assert str(tmp_path / "ctx") not in done.stdout.split("tinyjob from:")[1].splitlines()[0]
    assert "args: ['--a=1']" in done.stdout


def test_local_container_job_of_an_earlier_build_runs_that_build_s_project(
    root: Path, tmp_path: Path
) -> None:
    # Build A, edit, build B of the same name: a cached step's reference to A still runs A's
    # project (its wheel is kept per digest), as Vertex runs the image A kept in its registry.
    context = _context(tmp_path / "ctx", installs=True)
    first = build_container_image(context, image_uri="us-docker.pkg.dev/p/r/tinyjob")
    (context / "tinyjob" / "task.py").write_text(TASK + 'print("edited")\n')
    second = build_container_image(context, image_uri="us-docker.pkg.dev/p/r/tinyjob")
    assert second.digest != first.digest
    package = lookup_image(first.uri, root)["package"]
    assert Path(package).parent == root / "builds" / "images" / first.digest
    launch = resolve_pool({"containerSpec": {"imageUri": first.uri}}, root)
    environ = {**launch.inherited(os.environ), **launch.env}
    done = subprocess.run(
        launch.argv, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "args: []" in done.stdout and "edited" not in done.stdout


def test_local_container_job_without_an_install_runs_from_its_context(
    root: Path, tmp_path: Path
) -> None:
    context = _context(tmp_path / "ctx", installs=False)
    built = build_container_image(context, image_uri="us-docker.pkg.dev/p/r/tinyjob")
    assert lookup_image(built.uri, root)["package"] is None
    launch = resolve_pool({"containerSpec": {"imageUri": built.uri}}, root)
    assert not launch.isolated and launch.env["PYTHONPATH"] == str(context.resolve())

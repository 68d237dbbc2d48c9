"""The local backend refuses a package that could not install on its Vertex executor image,
with the message ``compile.py preflight`` gives, although installing it here would work."""

from __future__ import annotations

from pathlib import Path

import pytest

from vertex_retrain.backends.local.environments.builder import build_python_package
from vertex_retrain.backends.local.environments.python_env import PackageEnvError
from vertex_retrain.backends.local.jobs.executor import run_custom_job
from vertex_retrain.build.package_metadata import read_package_metadata
from vertex_retrain.specs.package_compat import package_problems
from vertex_retrain.specs.problems import errors_of

IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
# What the package path does on an image that is served: the shipped catalog's have all ended.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")


def _project(folder: Path, *, requires_python: str, dependencies: list[str]) -> Path:
    (folder / "tinytask").mkdir(parents=True)
    (folder / "tinytask" / "__init__.py").write_text("")
    (folder / "tinytask" / "task.py").write_text("print('ran')\n")
    deps = ", ".join(f'"{d}"' for d in dependencies)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "tinytask"\nversion = "1.0"\nrequires-python = "{requires_python}"\n'
        f'dependencies = [{deps}]\n[tool.setuptools]\npackages = ["tinytask"]\n'
    )
    return folder


def _job(package_uri: str) -> dict:
    return {
        "displayName": "package check",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "pythonPackageSpec": {
                        "executorImageUri": IMAGE,
                        "packageUris": [package_uri],
                        "pythonModule": "tinytask.task",
                    },
                }
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/check-run"},
        },
    }


@pytest.mark.parametrize(
    ("requires_python", "dependencies", "code"),
    [(">=3.11", [], "package-python"), (">=3.10", ["torch==2.13.0"], "package-framework")],
)
def test_local_run_refuses_a_package_vertex_could_not_install_with_preflights_message(
    root: Path, tmp_path: Path, requires_python: str, dependencies: list[str], code: str
) -> None:
    source = _project(tmp_path / "src", requires_python=requires_python, dependencies=dependencies)
    wheel = build_python_package(source, destination_uri="gs://bkt/packages")
    with pytest.raises(PackageEnvError) as refused:
        run_custom_job(_job(wheel.uri), on_log=lambda _: None)
    (expected,) = [
        p
        for p in errors_of(
            package_problems(
                read_package_metadata(wheel.path),
                IMAGE,
                "pythonPackageSpec.packageUris[0]",
            )
        )
        if p.code == code
    ]
    assert expected.describe() in str(refused.value)
    assert not (root / "envs").exists() or not any((root / "envs").iterdir())  # nothing installed


def test_local_run_installs_a_package_that_fits_the_image(root: Path, tmp_path: Path) -> None:
    source = _project(tmp_path / "src", requires_python=">=3.10", dependencies=["torch>=2.4"])
    wheel = build_python_package(source, destination_uri="gs://bkt/packages")
    result = run_custom_job(_job(wheel.uri), on_log=lambda _: None)
    assert result.state == "JOB_STATE_SUCCEEDED", (result.error, result.failure)

"""Python-package worker pools: a wheel from the storage root, run in a cached environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vertex_retrain.backends.local.environments.builder import build_python_package
from vertex_retrain.backends.local.environments.python_env import (
    PackageEnvError,
    framework_warnings,
    parse_executor_image,
)
from vertex_retrain.backends.local.jobs.executor import SUCCEEDED, run_custom_job

JOBS = Path(__file__).parent / "data" / "local_jobs"
PYTORCH_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
# The package path on an image that is served: the shipped catalog's have all ended.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")


def package_job(package_uri: str, image: str = PYTORCH_IMAGE) -> dict:
    return {
        "displayName": "package job",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "pythonPackageSpec": {
                        "executorImageUri": image,
                        "packageUris": [package_uri],
                        "pythonModule": "tinypkg.task",
                        "args": ["--epochs=1"],
                    },
                }
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/pkg-run"},
        },
    }


@pytest.mark.slow
def test_run_custom_job_python_package_pool_runs_wheel_in_cached_env(root: Path) -> None:
    wheel = build_python_package(JOBS / "tinypkg", destination_uri="gs://bkt/packages")
    first = run_custom_job(package_job(wheel.uri), on_log=lambda _: None)
    assert first.state == SUCCEEDED, (first.error, first.failure)
    run = json.loads((root / "gcs" / "bkt" / "pkg-run" / "model" / "run.json").read_text())
    assert run["argv"] == ["--epochs=1"]
    envs = [p for p in (root / "envs").iterdir() if p.is_dir() and p.name != "views"]
    assert len(envs) == 1
    assert run["prefix"] == str(envs[0])  # the job ran in the package's own environment
    assert Path(run["module_file"]).is_relative_to(envs[0])
    assert run["has_torch"] is True  # the image's framework, linked, not reinstalled
    assert any("pytorch-gpu.2-4" in w and "torch 2.4" in w for w in first.warnings)
    assert not any("package index" in w for w in first.warnings)  # numpy is installed here
    second = run_custom_job(package_job(wheel.uri), on_log=lambda _: None)
    assert second.state == SUCCEEDED
    assert [p for p in (root / "envs").iterdir() if p.is_dir() and p.name != "views"] == envs


def test_run_custom_job_missing_package_refused_with_fix(root: Path) -> None:
    with pytest.raises(PackageEnvError, match="pip wheel --no-deps -w"):
        run_custom_job(package_job("gs://bkt/packages/absent-0.1-py3-none-any.whl"))


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (PYTORCH_IMAGE, ("torch", "gpu", "2.4", "3.10")),
        (
            "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest",
            ("tensorflow", "cpu", "2.15", "3.10"),
        ),
        (
            "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-3:latest",
            ("scikit-learn", "cpu", "1.3", None),
        ),
        (
            "gcr.io/cloud-aiplatform/training/xgboost-cpu.1-7:latest",
            ("xgboost", "cpu", "1.7", None),
        ),
    ],
)
def test_parse_executor_image_reads_framework_and_versions(uri: str, expected: tuple) -> None:
    image = parse_executor_image(uri)
    assert image is not None
    assert (image.distribution, image.accelerator, image.version, image.python) == expected


def test_framework_warnings_flag_missing_framework_and_unknown_images() -> None:
    missing = framework_warnings("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-15.py310:latest")
    assert any("tensorflow 2.15" in w and "not installed locally" in w for w in missing)
    assert "not a recognised" in framework_warnings("gcr.io/me/custom:1")[0]

"""The rules on the code a pool runs, in words and at their limits: which image and environment
a pool has, the Reduction Server image, CUDA images on GPU pools, TPU framework minimums."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.specs.image_rules import (
    BASE_IMAGE_ENV,
    REDUCTION_SERVER_IMAGE,
    check_gpu_image,
    check_tpu_image,
    is_reduction_server,
    pool_args,
    pool_env,
    pool_image,
)
from vertex_retrain.specs.machine_catalog import load_catalog
from vertex_retrain.specs.problems import Problem

P0 = "jobSpec.workerPoolSpecs[0]"
TRAINING = "us-docker.pkg.dev/vertex-ai/training"


def _container(image: Any = None, **code: Any) -> dict[str, Any]:
    return {"containerSpec": {"imageUri": image, **code}}


def _package(image: Any = None, **code: Any) -> dict[str, Any]:
    return {"pythonPackageSpec": {"executorImageUri": image, **code}}


@pytest.mark.parametrize(
    ("pool", "found"),
    [
        (_container("c"), ("c", "containerSpec.imageUri")),
        (_package("e"), ("e", "pythonPackageSpec.executorImageUri")),
        ({**_package("e"), **_container("c")}, ("c", "containerSpec.imageUri")),
        ({"containerSpec": None}, (None, "containerSpec.imageUri")),
        ({}, (None, "containerSpec.imageUri")),
        (None, (None, "containerSpec.imageUri")),
    ],
)
def test_pool_image_reads_the_container_or_the_executor(pool: Any, found: tuple[Any, str]) -> None:
    assert pool_image(pool) == found


def test_pool_env_reads_named_variables_as_strings() -> None:
    env = [
        {"name": "A", "value": "1"},
        {"name": "B"},  # no value: empty
        {"name": "C", "value": 5},
        {"name": 3, "value": "x"},  # not a name
        {"value": "y"},
        "D=4",
    ]
    assert pool_env(_container("i", env=env)) == {"A": "1", "B": "", "C": "5"}
    assert pool_env(_package("i", env=env[:1])) == {"A": "1"}


@pytest.mark.parametrize("env", [None, {"A": "1"}, "A=1", 5])
def test_pool_env_other_than_a_list_is_empty(env: Any) -> None:
    assert pool_env(_container("i", env=env)) == {}


def test_pool_args_joins_command_and_args_as_strings() -> None:
    pool = _container("i", command=["python", "-m"], args=["trainer.task", 3])
    assert pool_args(pool) == ["python", "-m", "trainer.task", "3"]
    assert pool_args(_package("i", args=["--epochs", 2])) == ["--epochs", "2"]
    assert pool_args(_container("i")) == []
    assert pool_args(None) == []


@pytest.mark.parametrize(
    ("image", "official"),
    [
        (REDUCTION_SERVER_IMAGE, True),
        ("us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver@sha256:ab", True),
        ("us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver", True),
        ("us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver2:latest", False),
        ("gcr.io/p/reductionserver:latest", False),
        (None, False),
    ],
)
def test_is_reduction_server_knows_the_official_image_only(image: Any, official: bool) -> None:
    assert is_reduction_server(_container(image)) is official


CUSTOM_ADVICE = (
    "build the image FROM nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04 (a CUDA 13.0 image: NVIDIA "
    "supports it while its driver branch R580 is, until August 2028)",
    f"declare the base image: env {BASE_IMAGE_ENV}=nvidia/cuda:<tag> (WorkerPool(base_image=...))",
)


@pytest.mark.parametrize(
    ("pool", "field"),
    [
        (_container("gcr.io/p/trainer:1"), "containerSpec.imageUri"),
        (_package("gcr.io/p/trainer:1"), "pythonPackageSpec.executorImageUri"),
        # A declared base that is not CUDA does not help.
        (
            _container("gcr.io/p/trainer:1", env=[{"name": BASE_IMAGE_ENV, "value": "ubuntu"}]),
            "containerSpec.imageUri",
        ),
    ],
)
def test_check_gpu_image_custom_image_not_known_to_be_cuda_in_words(
    pool: dict[str, Any], field: str
) -> None:
    assert check_gpu_image(pool, P0) == [
        Problem(
            "warning",
            f"{P0}.{field}",
            "gcr.io/p/trainer:1",
            "A GPU worker pool whose custom image is not known to be built on CUDA.",
            CUSTOM_ADVICE,
            "gpu-image-not-cuda",
        )
    ]


@pytest.mark.parametrize(
    "pool",
    [
        _container(None),
        _container(""),
        _container(7),
        _container("gcr.io/p/trainer-cuda12:1"),
        _container("gcr.io/p/trainer-CUDA12:1"),
        _container("nvcr.io/nvidia/pytorch:24.01"),
        _container("gcr.io/p/t:1", env=[{"name": BASE_IMAGE_ENV, "value": "NVIDIA/CUDA:12.4"}]),
        _container("gcr.io/p/t:1", env=[{"name": BASE_IMAGE_ENV, "value": "cuda-base"}]),
        _container("gcr.io/p/t:1", env=[{"name": BASE_IMAGE_ENV, "value": "nvidia-base"}]),
        _container(f"{TRAINING}/pytorch-gpu.2-4.py310:latest"),
        _container("gcr.io/deeplearning-platform-release/pytorch-gpu.2-4:latest"),
        # A prebuilt image that is neither a CPU nor a GPU build (TPU) is not judged here.
        _container(f"{TRAINING}/tf-tpu.2-15.py310:latest"),
    ],
)
def test_check_gpu_image_cuda_or_prebuilt_gpu_images_pass(pool: dict[str, Any]) -> None:
    assert check_gpu_image(pool, P0) == []


@pytest.mark.parametrize(
    "image",
    [
        f"{TRAINING}/pytorch-cpu.2-4.py310:latest",
        "europe-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-3:latest",
        "gcr.io/deeplearning-platform-release/tf-cpu.2-15:latest",
    ],
)
def test_check_gpu_image_prebuilt_cpu_image_in_words(image: str) -> None:
    assert check_gpu_image(_container(image), P0) == [
        Problem(
            "warning",
            f"{P0}.containerSpec.imageUri",
            image,
            "A prebuilt CPU image on a GPU machine: the framework will not see the GPUs.",
            (image.replace("-cpu.", "-gpu."),),
            "gpu-image-not-cuda",
        )
    ]


V5E = dict(load_catalog().tpu_requirements["v5e"])  # jax 0.4.6, tensorflow 2.15, pytorch 2.1
V6E = dict(load_catalog().tpu_requirements["v6e"])  # python 3.10
V5E_WANTED = "jax 0.4.6+, tensorflow 2.15+, pytorch 2.1+"


def _runtime_error(generation: str, image: str, message: str, alternative: str) -> Problem:
    return Problem(
        "error",
        f"{P0}.containerSpec.imageUri",
        image,
        f"TPU {generation} needs {message}",
        (alternative,),
        "tpu-runtime",
    )


@pytest.mark.parametrize(
    ("image", "found"),
    [
        ("gcr.io/p/trainer.py39:1", "3.9"),
        ("gcr.io/p/trainer-py38:1", "3.8"),
        ("gcr.io/p/trainer_py37:1", "3.7"),
    ],
)
def test_check_tpu_image_python_below_the_minimum_in_words(image: str, found: str) -> None:
    assert check_tpu_image(_container(image), P0, "v6e", V6E) == [
        _runtime_error(
            "v6e",
            image,
            f"Python 3.10+; this image has Python {found}.",
            "an image with Python 3.10 or newer",
        )
    ]


@pytest.mark.parametrize(
    "image",
    [
        "gcr.io/p/trainer.py310:1",
        "gcr.io/p/trainer.py311:1",
        "gcr.io/p/trainer:1",  # no Python in the name: not judged
        "gcr.io/p/trainer.py3:1",
        "gcr.io/p/happy39:1",
    ],
)
def test_check_tpu_image_python_at_or_above_the_minimum_passes(image: str) -> None:
    assert check_tpu_image(_container(image), P0, "v6e", V6E) == []


def test_check_tpu_image_python_is_not_judged_where_no_minimum_is_set() -> None:
    assert check_tpu_image(_container("gcr.io/p/jax.0-4.py37:1"), P0, "v5e", V5E) == []


@pytest.mark.parametrize(
    ("image", "name", "found"),
    [
        (f"{TRAINING}/tf-tpu.2-14.py310:latest", "tensorflow", "2.14"),
        ("gcr.io/p/tf2-tpu.2-9:1", "tensorflow", "2.9"),
        ("gcr.io/p/tensorflow.1-15:1", "tensorflow", "1.15"),
        ("gcr.io/p/pytorch-xla.2-0.py310:1", "pytorch", "2.0"),
        ("gcr.io/p/jax.0-3:1", "jax", "0.3"),
    ],
)
def test_check_tpu_image_framework_below_the_minimum_in_words(
    image: str, name: str, found: str
) -> None:
    minimum = V5E[name]
    assert check_tpu_image(_container(image), P0, "v5e", V5E) == [
        _runtime_error(
            "v5e",
            image,
            f"{V5E_WANTED}; this image has {name} {found}.",
            f"{name} {minimum} or newer",
        )
    ]


@pytest.mark.parametrize(
    "image",
    [
        f"{TRAINING}/tf-tpu.2-15.py310:latest",
        "gcr.io/p/pytorch-xla.2-1:1",
        "gcr.io/p/jax.0-4:1",  # 0.4 is read as 0.4.x: the patch release is not in the name
        "gcr.io/p/jax.1-0:1",
        "gcr.io/p/sklearn.1-0:1",  # no TPU framework in the name
    ],
)
def test_check_tpu_image_framework_at_or_above_the_minimum_passes(image: str) -> None:
    assert check_tpu_image(_container(image), P0, "v5e", V5E) == []


def test_check_tpu_image_framework_without_a_minimum_passes() -> None:
    assert check_tpu_image(_container("gcr.io/p/tf-tpu.1-0.py310:1"), P0, "v6e", V6E) == []


def test_check_tpu_image_reports_python_and_framework_together() -> None:
    image = "gcr.io/p/tf-tpu.2-14.py39:1"
    wanted = {"python": "3.10", "tensorflow": "2.15"}
    assert check_tpu_image(_container(image), P0, "v9", wanted) == [
        _runtime_error(
            "v9",
            image,
            "Python 3.10+; this image has Python 3.9.",
            "an image with Python 3.10 or newer",
        ),
        _runtime_error(
            "v9",
            image,
            "python 3.10+, tensorflow 2.15+; this image has tensorflow 2.14.",
            "tensorflow 2.15 or newer",
        ),
    ]


@pytest.mark.parametrize(
    ("pool", "requirements"),
    [(_container(None), V6E), (_container(7), V6E), (_container("gcr.io/p/t.py37:1"), {})],
)
def test_check_tpu_image_without_an_image_or_minimums_judges_nothing(
    pool: dict[str, Any], requirements: dict[str, str]
) -> None:
    assert check_tpu_image(pool, P0, "v6e", requirements) == []

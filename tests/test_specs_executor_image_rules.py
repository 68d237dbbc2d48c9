"""A package pool's ``executorImageUri``: what a prebuilt image's tag says when the catalog
does not know it, and each problem exactly, with the served images it recommends."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from vertex_retrain.specs.containers import PrebuiltImage, load_containers
from vertex_retrain.specs.executor_images import (
    TAG_SOURCE,
    executor_image_problems,
    training_image,
)

TRAINING = "us-docker.pkg.dev/vertex-ai/training"
CUSTOM_LINE = "containerSpec {imageUri: YOUR_IMAGE} for a custom container"
OWN = "a custom container (containerSpec) built from your own Dockerfile (build_container)"
PACKAGE_ONLY = (
    "A Python-package pool runs on one of Vertex's prebuilt training images only "
    "(aiplatform_v1 PythonPackageSpec: 'You must use an image from this list'); a custom image "
    "goes in containerSpec.imageUri."
)
TORCH = (f"{TRAINING}/pytorch-gpu.2-4.py310:latest", f"{TRAINING}/pytorch-xla.2-4.py310:latest")
TF = (f"{TRAINING}/tf-gpu.2-17.py310:latest", f"{TRAINING}/tf-cpu.2-17.py310:latest")
TODAY = dt.date(2026, 12, 2)


def _tagged(
    name: str, framework: str, version: str, python: str, accelerator: str
) -> PrebuiltImage:
    return PrebuiltImage(
        name=name, kind="training", framework=framework, version=version, python=python,
        accelerator=accelerator, cuda=None, end_of_patch=None, end_of_availability=None,
        includes={}, sources=(TAG_SOURCE,),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("uri", "image"),
    [
        (f"{TRAINING}/tf-gpu.2-99.py312:latest",
         _tagged("tf-gpu.2-99.py312", "tensorflow", "2.99", "3.12", "gpu")),
        (f"{TRAINING}/tf-cpu.2-99.py312:latest",
         _tagged("tf-cpu.2-99.py312", "tensorflow", "2.99", "3.12", "cpu")),
        (f"{TRAINING}/tf-gpu.2-99:latest", None),  # no Python in the tag
        (f"{TRAINING}/an-odd-name:latest", None),  # not Google's tag convention
        ("europe-docker.pkg.dev/p/r/tf-gpu.2-17.py310:latest", None),  # not a prebuilt image
        ("us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest", None),  # a serving one
    ],
)  # fmt: skip
def test_training_image_reads_the_tag_of_a_prebuilt_image_the_catalog_lacks(
    uri: str, image: PrebuiltImage | None
) -> None:
    assert training_image(uri, load_containers()) == image


def test_training_image_of_a_catalog_image_is_its_entry() -> None:
    catalog = load_containers()
    image = training_image(f"{TRAINING}/pytorch-gpu.2-4.py310:latest", catalog)
    assert image is catalog.lookup(f"{TRAINING}/pytorch-gpu.2-4.py310:latest", "training")
    assert image is not None and image.sources != (TAG_SOURCE,)


@pytest.mark.usefixtures("catalog_still_serving")
@pytest.mark.parametrize(
    ("uri", "newest"),
    [
        ("europe-docker.pkg.dev/p/r/trainer:1", TORCH),  # no framework in the name: torch's
        ("europe-docker.pkg.dev/p/r/tf-gpu.2-17.py310:latest", TF),  # the name's framework
        ("us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest", TF),
    ],
)
def test_executor_image_problems_refuse_an_image_that_is_not_a_training_one(
    uri: str, newest: tuple[str, str]
) -> None:
    (problem,) = executor_image_problems(uri, "jobSpec.x", catalog=load_containers(), today=TODAY)
    assert (problem.severity, problem.field, problem.value) == ("error", "jobSpec.x", uri)
    assert (problem.message, problem.code) == (PACKAGE_ONLY, "executor-image")
    assert problem.alternatives == (*newest, CUSTOM_LINE)


@pytest.mark.usefixtures("catalog_still_serving")
@pytest.mark.parametrize(
    ("uri", "said"),
    [
        (f"{TRAINING}/tf-gpu.2-99.py312:latest",
         "its tag says tensorflow 2.99 on Python 3.12 (the package is checked against that), "
         "but its availability is unknown"),
        (f"{TRAINING}/tf-gpu.2-99:latest",
         "its tag names no Python, so the package's compatibility is unknown"),
    ],
)  # fmt: skip
def test_executor_image_problems_warn_of_a_prebuilt_image_the_catalog_lacks(
    uri: str, said: str, catalog_still_serving: Path
) -> None:
    catalog = load_containers()
    (problem,) = executor_image_problems(uri, "f", catalog=catalog, today=TODAY)
    assert (problem.severity, problem.field, problem.value) == ("warning", "f", uri)
    assert problem.message == (
        f"This prebuilt image is not in the container catalog (retrieved {catalog.retrieved}): "
        f"{said}."
    )
    assert problem.alternatives == (
        f"add it to {catalog_still_serving.name} with its sources",
        *TF,
        OWN,
    )
    assert problem.code == "executor-image-unknown"

"""The image a Python-package pool without ``executorImageUri`` is told to use.

The suggestion is the newest prebuilt training image the container catalog serves today, from
the first framework (torch, then TensorFlow, then scikit-learn) that has one, in the first
training registry; with none served it says so and names the catalog, never a retired image.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vertex_retrain.specs import containers
from vertex_retrain.specs.pool_rules import check_pool_structure

REGISTRY = "us-docker.pkg.dev/vertex-ai/training"


def _serve_only(
    frameworks: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catalog copy in which only the training images of ``frameworks`` are still served."""
    text = containers.DEFAULT_CONTAINERS_PATH.read_text(encoding="utf-8")
    for framework in frameworks:
        text = re.sub(
            rf'(\{{framework: {framework},[^}}]*end_of_availability: )"\d{{4}}-\d{{2}}-\d{{2}}"',
            r'\1"2099-12-31"',
            text,
        )
    copy = tmp_path / "containers.yaml"
    copy.write_text(text, encoding="utf-8")
    monkeypatch.setattr(containers, "DEFAULT_CONTAINERS_PATH", copy)


def _suggested_image() -> tuple[str, ...]:
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "pythonPackageSpec": {"packageUris": ["gs://b/t-0.1.tar.gz"], "pythonModule": "t.task"},
    }
    (problem,) = [
        p for p in check_pool_structure([pool], "jobSpec") if p.field.endswith("executorImageUri")
    ]
    return problem.alternatives


@pytest.mark.parametrize(
    ("served", "image"),
    [
        (("torch", "tensorflow", "scikit-learn"), "pytorch-gpu.2-4.py310"),
        (("tensorflow", "scikit-learn"), "tf-gpu.2-17.py310"),
        (("scikit-learn",), "sklearn-cpu.1-6"),
    ],
)
def test_pool_rules_missing_executor_image_suggests_the_first_served_framework_s_newest(
    served: tuple[str, ...], image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _serve_only(served, tmp_path, monkeypatch)
    assert _suggested_image() == (f"{REGISTRY}/{image}:latest",)


def test_pool_rules_missing_executor_image_with_none_served_names_the_catalog() -> None:
    catalog = containers.load_containers()
    assert _suggested_image() == (
        "a prebuilt training image available today (none in containers.yaml, retrieved "
        f"{catalog.retrieved}: use containerSpec with your own image)",
    )

"""The container catalog read from a small file written here, image names read from their
tags, and the lookups the rules make (registry, kind, newest first)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from vertex_retrain.specs.containers import (
    ImageName,
    PrebuiltImage,
    image_name,
    load_containers,
    parse_image_name,
)

CATALOG = """
version: 2
retrieved: "2026-11-30"
sources:
  T1: {what: "a   page"}
  T2: {what: another}
registries:
  training: [us-docker.pkg.dev/vertex-ai/training, europe-docker.pkg.dev/vertex-ai/training]
  prediction: [us-docker.pkg.dev/vertex-ai/prediction]
  legacy: [gcr.io/cloud-aiplatform/training]
package_sets:
  base: {pandas: "2.2.3", hypertune: null}
training:
  pytorch-cpu.2-4.py310: {framework: torch, version: "2.4", accelerator: cpu,
    includes: {numpy: 2, extra: null}, sources: [T1]}
  pytorch-gpu.2-4.py310: {framework: torch, version: "2.4", python: "3.10", accelerator: gpu,
    cuda: "12.x", end_of_patch: "2025-07-24", end_of_availability: "2026-07-24",
    includes: base, sources: [T1, T2]}
  pytorch-gpu.2-10.py312: {framework: torch, version: "2.10", python: "3.12", accelerator: gpu,
    sources: [T2]}
  tf-cpu.2-17.py310: {framework: tensorflow, version: "2.17", accelerator: cpu, sources: [T1]}
prediction:
  pytorch-gpu.2-4: {framework: torch, version: "2.4", accelerator: gpu, includes: base,
    sources: [T1]}
"""


@pytest.fixture
def catalog_path(tmp_path: Path) -> Path:
    path = tmp_path / "containers.yaml"
    path.write_text(CATALOG, encoding="utf-8")
    return path


def test_load_containers_reads_every_field(catalog_path: Path) -> None:
    catalog = load_containers(catalog_path)
    assert (catalog.version, catalog.retrieved, catalog.path) == (2, "2026-11-30", catalog_path)
    assert dict(catalog.sources) == {"T1": "a page", "T2": "another"}
    assert catalog.registries["legacy"] == ("gcr.io/cloud-aiplatform/training",)
    assert catalog.training["pytorch-gpu.2-4.py310"] == PrebuiltImage(
        name="pytorch-gpu.2-4.py310", kind="training", framework="torch", version="2.4",
        python="3.10", accelerator="gpu", cuda="12.x", end_of_patch=dt.date(2025, 7, 24),
        end_of_availability=dt.date(2026, 7, 24), includes={"pandas": "2.2.3", "hypertune": None},
        sources=("T1", "T2"),
    )  # fmt: skip
    cpu = catalog.training["pytorch-cpu.2-4.py310"]
    assert (cpu.python, cpu.cuda, cpu.end_of_patch, cpu.end_of_availability) == (
        None, None, None, None,
    )  # fmt: skip
    assert dict(cpu.includes) == {"numpy": "2", "extra": None}
    assert dict(catalog.training["tf-cpu.2-17.py310"].includes) == {}
    assert catalog.prediction["pytorch-gpu.2-4"].kind == "prediction"
    assert dict(catalog.prediction["pytorch-gpu.2-4"].includes) == {
        "pandas": "2.2.3", "hypertune": None,
    }  # fmt: skip
    assert load_containers(catalog_path) is catalog  # cached per path


def test_load_containers_refuses_an_image_citing_an_unknown_source(tmp_path: Path) -> None:
    path = tmp_path / "containers.yaml"
    path.write_text(CATALOG.replace("sources: [T2]}", "sources: [T2, T9, T8]}"), "utf-8")
    with pytest.raises(
        ValueError, match=r"pytorch-gpu\.2-10\.py312: unknown source id\(s\) T8, T9"
    ):
        load_containers(path)


def test_catalog_lookup_by_registry_and_kind(catalog_path: Path) -> None:
    catalog = load_containers(catalog_path)
    gpu = catalog.training["pytorch-gpu.2-4.py310"]
    for registry in ("us-docker.pkg.dev/vertex-ai/training",
                     "europe-docker.pkg.dev/vertex-ai/training",
                     "gcr.io/cloud-aiplatform/training"):  # fmt: skip
        assert catalog.lookup(f"{registry}/pytorch-gpu.2-4.py310:latest") is gpu
        assert catalog.is_prebuilt(f"{registry}/anything:1")
    assert (
        catalog.lookup("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310@sha256:ab")
        is gpu
    )
    assert catalog.lookup("asia-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310") is None
    assert catalog.lookup("us-docker.pkg.dev/vertex-ai/training/unknown:1") is None
    served = "us-docker.pkg.dev/vertex-ai/prediction/pytorch-gpu.2-4:latest"
    assert catalog.lookup(served) is None and not catalog.is_prebuilt(served)
    assert catalog.lookup(served, "prediction") is catalog.prediction["pytorch-gpu.2-4"]
    assert catalog.is_prebuilt(served, "prediction")
    assert not catalog.is_prebuilt("us-docker.pkg.dev/vertex-ai/training/x:1", "prediction")


def test_catalog_training_images_newest_version_first_gpu_before_cpu(catalog_path: Path) -> None:
    catalog = load_containers(catalog_path)
    names = [image.name for image in catalog.training_images(framework="torch")]
    # 2.10 is newer than 2.4 (versions compare as numbers, not text).
    assert names == ["pytorch-gpu.2-10.py312", "pytorch-gpu.2-4.py310", "pytorch-cpu.2-4.py310"]
    assert [i.name for i in catalog.training_images(framework="tensorflow")] == [
        "tf-cpu.2-17.py310"
    ]
    assert catalog.training_images(framework="jax") == []


def test_prebuilt_image_cited_names_the_catalog_file_sources_and_date(catalog_path: Path) -> None:
    catalog = load_containers(catalog_path)
    assert catalog.training["pytorch-gpu.2-4.py310"].cited(catalog) == (
        "pytorch-gpu.2-4.py310 (containers.yaml sources T1, T2, retrieved 2026-11-30)"
    )


@pytest.mark.parametrize(
    ("uri", "name"),
    [
        ("us-docker.pkg.dev/p/r/img:tag", "img"),
        ("us-docker.pkg.dev/p/r/img@sha256:abc", "img"),
        ("img", "img"),
        ("localhost:5000/img:1", "img"),
    ],
)
def test_image_name_is_the_last_part_without_tag_or_digest(uri: str, name: str) -> None:
    assert image_name(uri) == name


@pytest.mark.parametrize(
    ("uri", "parsed"),
    [
        ("r/pytorch-gpu.2-4.py310:latest", ImageName("pytorch-gpu.2-4.py310", "torch", "gpu",
                                                      "2.4", "3.10")),
        ("r/tf2-cpu.2-15:latest", ImageName("tf2-cpu.2-15", "tensorflow", "cpu", "2.15", None)),
        ("r/tf-tpu.2-17.cp311", ImageName("tf-tpu.2-17.cp311", "tensorflow", "tpu", "2.17",
                                          "3.11")),
        ("r/sklearn-cpu.1-6", ImageName("sklearn-cpu.1-6", "scikit-learn", "cpu", "1.6", None)),
        ("r/xgboost-cpu.2-1.py39", ImageName("xgboost-cpu.2-1.py39", "xgboost", "cpu", "2.1",
                                             "3.9")),
        ("r/pytorch-xla.2-4.py310-extra", ImageName("pytorch-xla.2-4.py310-extra", "torch",
                                                    "xla", "2.4", "3.10")),
        ("r/trainer:1", None),
        ("r/jax-gpu.0-4", None),
        ("r/pytorch-gpu.2", None),
    ],
)  # fmt: skip
def test_parse_image_name_reads_framework_version_and_python(
    uri: str, parsed: ImageName | None
) -> None:
    assert parse_image_name(uri) == parsed


def test_catalog_without_legacy_registries_knows_only_its_own(tmp_path: Path) -> None:
    path = tmp_path / "containers.yaml"
    path.write_text(CATALOG.replace("  legacy: [gcr.io/cloud-aiplatform/training]\n", ""), "utf-8")
    catalog = load_containers(path)
    assert not catalog.is_prebuilt("gcr.io/cloud-aiplatform/training/pytorch-gpu.2-4.py310")
    assert catalog.is_prebuilt("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310")

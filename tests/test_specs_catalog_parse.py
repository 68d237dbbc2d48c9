"""machine_catalog: each field of a catalog file read as the file states it.

Every test loads a file of its own (a new path is a new entry of the loader's cache), so the
parse runs inside the test, never only once at import.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from vertex_retrain.specs.machine_catalog import (
    DEFAULT_CATALOG_PATH,
    Catalog,
    MachineType,
    Retirement,
    TpuMachine,
    load_catalog,
)

FULL = """
version: 7
retrieved: "2031-01-02"
sources: [https://a.example, https://b.example]
accelerator_enum: [NVIDIA_TESLA_T4, TPU_V2]
machine_types:
  n1-standard-8: [8, 30]
  n1-highmem-2: ["2", "7.5"]
  a2-highgpu-1g: [12, 85]
  odd-machine: [null, null]
  cloud-tpu: [96, 335]
bundled_gpus:
  a2-highgpu-1g: [NVIDIA_TESLA_A100, "1"]
n1_gpus:
  NVIDIA_TESLA_T4:
    1: [48, 312]
    "2": ["48", "312.5"]
retired_accelerators:
  NVIDIA_TESLA_K80: {date: "2024-05-01", note: "gone"}
  NVIDIA_TESLA_P4: {date: 2030-03-04}
gpu_feeding: {min_vcpus: "4", min_vcpus_per_gpu: "1.5"}
tpu:
  cloud-tpu:
    generation: v2/v3
    accelerator_types: [TPU_V2]
    single_device_count: 8
    pod_multiple: 32
  ct6e-standard-4t:
    generation: v6e
    chips_per_host: 4
    topologies: {"2x2": 1, "2x4": 2}
tpu_requirements:
  v6e: {python: "3.10"}
  7: {python: "3.12"}
"""

MINIMAL = """
version: 1
retrieved: 2030-01-01
accelerator_enum: []
machine_types: {}
bundled_gpus: {}
n1_gpus: {}
gpu_feeding: {min_vcpus: 2, min_vcpus_per_gpu: 1}
tpu:
  ct5lp-hightpu-1t: {generation: v5e}
"""


def _load(tmp_path: Path, text: str) -> Catalog:
    path = tmp_path / "catalog.yaml"
    path.write_text(text, encoding="utf-8")
    return load_catalog(path)


def test_load_catalog_reads_the_header_and_feeding_rule(tmp_path: Path) -> None:
    catalog = _load(tmp_path, FULL)
    assert catalog.version == 7
    assert catalog.retrieved == "2031-01-02"
    assert catalog.sources == ("https://a.example", "https://b.example")
    assert catalog.accelerator_enum == ("NVIDIA_TESLA_T4", "TPU_V2")
    assert (catalog.min_vcpus_per_gpu_machine, catalog.min_vcpus_per_gpu) == (4, 1.5)
    assert type(catalog.min_vcpus_per_gpu_machine) is int
    assert type(catalog.min_vcpus_per_gpu) is float


def test_load_catalog_reads_each_machine_s_family_series_and_size(tmp_path: Path) -> None:
    machines = _load(tmp_path, FULL).machines
    assert machines["n1-standard-8"] == MachineType("n1-standard-8", "n1", "n1-standard", 8, 30.0)
    highmem = machines["n1-highmem-2"]
    assert (highmem.vcpus, highmem.memory_gb) == (2, 7.5)  # numbers written as text
    assert type(highmem.vcpus) is int and type(highmem.memory_gb) is float
    assert machines["odd-machine"] == MachineType("odd-machine", "odd", "odd", None, None)
    # cloud-tpu has no size suffix: its series is its whole name.
    assert machines["cloud-tpu"] == MachineType("cloud-tpu", "cloud", "cloud-tpu", 96, 335.0)


def test_load_catalog_reads_bundled_and_n1_gpus(tmp_path: Path) -> None:
    catalog = _load(tmp_path, FULL)
    assert dict(catalog.bundled_gpus) == {"a2-highgpu-1g": ("NVIDIA_TESLA_A100", 1)}
    assert {acc: dict(caps) for acc, caps in catalog.n1_gpus.items()} == {
        "NVIDIA_TESLA_T4": {1: (48, 312.0), 2: (48, 312.5)}
    }
    cap = catalog.n1_gpus["NVIDIA_TESLA_T4"][2]
    assert type(cap[0]) is int and type(cap[1]) is float
    assert catalog.gpu_machines_for("NVIDIA_TESLA_A100") == ["a2-highgpu-1g"]
    assert catalog.known_accelerators() == {"NVIDIA_TESLA_A100", "NVIDIA_TESLA_T4", "TPU_V2"}


def test_load_catalog_reads_retirements_with_or_without_a_note(tmp_path: Path) -> None:
    retired = _load(tmp_path, FULL).retired
    assert retired["NVIDIA_TESLA_K80"] == Retirement(dt.date(2024, 5, 1), "gone")
    assert retired["NVIDIA_TESLA_P4"] == Retirement(dt.date(2030, 3, 4), "")


def test_load_catalog_reads_tpu_machines_and_requirements(tmp_path: Path) -> None:
    catalog = _load(tmp_path, FULL)
    assert catalog.tpu_machines["cloud-tpu"] == TpuMachine(
        "cloud-tpu", "v2/v3", ("TPU_V2",), None, {}, single_device_count=8, pod_multiple=32
    )
    assert catalog.tpu_machines["ct6e-standard-4t"] == TpuMachine(
        "ct6e-standard-4t", "v6e", (), 4, {"2x2": 1, "2x4": 2}
    )
    assert {g: dict(v) for g, v in catalog.tpu_requirements.items()} == {
        "v6e": {"python": "3.10"},
        "7": {"python": "3.12"},  # a generation YAML reads as a number is still a name
    }


def test_load_catalog_leaves_optional_sections_empty(tmp_path: Path) -> None:
    catalog = _load(tmp_path, MINIMAL)
    assert catalog.sources == ()
    assert dict(catalog.retired) == {}
    assert dict(catalog.tpu_requirements) == {}
    assert catalog.retrieved == "2030-01-01"  # a date YAML reads as a date, kept as text
    tpu = catalog.tpu_machines["ct5lp-hightpu-1t"]
    assert tpu == TpuMachine("ct5lp-hightpu-1t", "v5e", (), None, {}, None, None)


def test_load_catalog_refuses_a_file_without_a_required_section(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"machine catalog .* is malformed \(KeyError: 'tpu'\)"):
        _load(tmp_path, MINIMAL.replace("tpu:\n  ct5lp-hightpu-1t: {generation: v5e}\n", ""))


def test_load_catalog_reads_the_shipped_catalog_afresh(tmp_path: Path) -> None:
    copy = tmp_path / "shipped.yaml"
    shutil.copyfile(DEFAULT_CATALOG_PATH, copy)
    catalog = load_catalog(copy)
    assert catalog.machine("n1-standard-8") == MachineType(
        "n1-standard-8", "n1", "n1-standard", 8, 30.0
    )
    assert catalog.bundled_gpus["g2-standard-24"] == ("NVIDIA_L4", 2)
    assert catalog.retired["NVIDIA_TESLA_K80"].date == dt.date(2024, 5, 1)
    assert dict(catalog.tpu_machines["ct5lp-hightpu-8t"].topologies) == {"2x4": 1}
    assert catalog.tpu_requirements["7x"]["python"] == "3.12"
    assert catalog == load_catalog()  # the packaged catalog, as every rule reads it

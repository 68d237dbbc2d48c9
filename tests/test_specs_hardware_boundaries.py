"""The concrete machines and GPU counts the hardware rules suggest, at the edges of the catalog.

The suggestions come from the machine catalog's n1 GPU caps (most vCPUs and GB a machine may
have for a GPU count) and its feeding rule (vCPUs a GPU needs). Catalogs changed in one fact
(``dataclasses.replace``) put a machine exactly on a cap, the way a catalog update could.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from vertex_retrain.specs.hardware_rules import check_machine_spec
from vertex_retrain.specs.machine_catalog import Catalog, MachineType, Retirement, load_catalog

TODAY = dt.date(2026, 11, 29)
V100 = "NVIDIA_TESLA_V100"
T4 = "NVIDIA_TESLA_T4"
P4 = "NVIDIA_TESLA_P4"


def _alternatives(
    machine: str,
    accelerator: str | None,
    count: int,
    catalog: Catalog | None = None,
    *,
    code: str,
) -> tuple[str, ...]:
    """The alternatives of the one problem ``code`` found in the machine spec."""
    spec: dict[str, Any] = {"machineType": machine, "acceleratorCount": count}
    if accelerator is not None:
        spec["acceleratorType"] = accelerator
    problems = check_machine_spec(spec, "m", catalog or load_catalog(), today=TODAY)
    assert [p.code for p in problems] == [code]
    return problems[0].alternatives


def _with_v100_caps(caps: dict[int, tuple[int, float]]) -> Catalog:
    catalog = load_catalog()
    return dataclasses.replace(catalog, n1_gpus={**catalog.n1_gpus, V100: caps})


@pytest.mark.parametrize(
    ("cap", "suggested"),
    [
        ((8, 30.0), "n1-standard-8 or smaller"),  # n1-standard-8 has exactly 8 vCPUs and 30 GB
        ((7, 30.0), "n1-standard-4 or smaller"),
        ((8, 29.0), "n1-standard-4 or smaller"),
    ],
)
def test_check_machine_spec_too_big_machine_suggests_the_largest_one_on_the_cap(
    cap: tuple[int, float], suggested: str
) -> None:
    catalog = _with_v100_caps({1: cap})
    alternatives = _alternatives("n1-standard-16", V100, 1, catalog, code="gpu-machine-too-big")
    assert alternatives == (suggested,)


def test_check_machine_spec_too_big_machine_with_no_smaller_one_in_its_series() -> None:
    # One V100 carries at most 12 vCPUs; n1-highcpu starts at 16: only more GPUs help.
    alternatives = _alternatives("n1-highcpu-16", V100, 1, code="gpu-machine-too-big")
    assert alternatives == ("acceleratorCount 2", "acceleratorCount 4")


@pytest.mark.parametrize(
    ("count", "host"),
    [(1, "n1-standard-4"), (2, "n1-standard-4"), (4, "n1-standard-8"), (8, "n1-standard-8")],
)
def test_check_machine_spec_n1_gpu_on_another_family_suggests_a_host_that_feeds_it(
    count: int, host: str
) -> None:
    # Two vCPUs a GPU, four at least; eight T4s are more than n1 takes: the host of the most (4).
    alternatives = _alternatives("e2-standard-8", T4, count, code="gpu-family")
    assert alternatives == (f"machineType {host}",)


@pytest.mark.parametrize(
    ("count", "alternatives"),
    # Twelve vCPUs a GPU: one V100 needs n1-standard-16, over its 12-vCPU cap; eight need 96,
    # exactly their cap.
    [(1, ()), (8, ("machineType n1-standard-96",))],
)
def test_check_machine_spec_n1_host_is_suggested_only_within_the_gpu_count_cap(
    count: int, alternatives: tuple[str, ...]
) -> None:
    catalog = dataclasses.replace(load_catalog(), min_vcpus_per_gpu=12)
    assert _alternatives("e2-standard-8", V100, count, catalog, code="gpu-family") == alternatives


def test_check_machine_spec_no_n1_host_big_enough_suggests_none() -> None:
    catalog = dataclasses.replace(load_catalog(), min_vcpus_per_gpu=100)
    assert _alternatives("e2-standard-8", V100, 1, catalog, code="gpu-family") == ()


def test_check_machine_spec_starved_gpus_with_no_machine_big_enough_suggest_none() -> None:
    catalog = dataclasses.replace(load_catalog(), min_vcpus_per_gpu=100)
    assert _alternatives("n1-standard-8", T4, 1, catalog, code="gpu-machine-too-small") == ()


@pytest.mark.parametrize(
    ("machine", "counts"),
    [
        ("n1-standard-4", (1, 1, 1)),
        # 96 vCPUs: only the counts whose cap is 96 vCPUs (and 360 GB within it).
        ("n1-standard-96", (4, 8, 4)),
        # 624 GB: exactly the memory cap of those counts.
        ("n1-highmem-96", (4, 8, 4)),
        # 96 vCPUs but 86.4 GB: the vCPUs alone decide.
        ("n1-highcpu-96", (4, 8, 4)),
        # 64 vCPUs, 240 GB.
        ("n1-standard-64", (4, 8, 4)),
        ("n1-highcpu-32", (1, 4, 2)),
    ],
)
def test_check_machine_spec_count_without_type_suggests_the_fewest_gpus_the_machine_fits(
    machine: str, counts: tuple[int, int, int]
) -> None:
    alternatives = _alternatives(machine, None, 1, code="gpu-missing")
    assert alternatives == tuple(
        f"acceleratorType {acc} with acceleratorCount {n}"
        for acc, n in zip((T4, V100, P4), counts, strict=True)
    )


def test_check_machine_spec_count_without_type_skips_every_retired_gpu() -> None:
    # Retired GPUs are left out wherever they stand in the catalog, not only at its end.
    catalog = load_catalog()
    retired = {T4: Retirement(dt.date(2026, 1, 1), "gone"), **catalog.retired}
    catalog = dataclasses.replace(catalog, retired=retired)
    alternatives = _alternatives("n1-standard-4", None, 1, catalog, code="gpu-missing")
    assert alternatives == (
        f"acceleratorType {V100} with acceleratorCount 1",
        f"acceleratorType {P4} with acceleratorCount 1",
    )


def test_check_machine_spec_count_without_type_weighs_the_memory_cap_too() -> None:
    # One V100 here takes any vCPU count but at most 10 GB: n1-standard-4 (15 GB) needs two.
    catalog = _with_v100_caps({1: (96, 10.0), 2: (96, 624.0)})
    alternatives = _alternatives("n1-standard-4", None, 1, catalog, code="gpu-missing")
    assert f"acceleratorType {V100} with acceleratorCount 2" in alternatives


def test_check_machine_spec_n1_host_of_equal_vcpus_is_the_one_with_less_memory() -> None:
    catalog = load_catalog()
    big = dataclasses.replace(catalog.machines["n1-standard-16"], name="n1-standard-16big")
    big = dataclasses.replace(big, memory_gb=100.0)
    # Listed first, so only the memory can put n1-standard-16 (60 GB) ahead of it.
    machines = {big.name: big, **catalog.machines}
    catalog = dataclasses.replace(catalog, machines=machines, min_vcpus_per_gpu=8)
    alternatives = _alternatives("e2-standard-8", T4, 2, catalog, code="gpu-family")
    assert alternatives == ("machineType n1-standard-16",)


def test_check_machine_spec_n1_host_comes_before_the_machines_that_carry_the_gpu() -> None:
    catalog = load_catalog()
    # A catalog in which one machine type also comes with a T4.
    bundled = {**catalog.bundled_gpus, "g2-standard-8": (T4, 1)}
    catalog = dataclasses.replace(catalog, bundled_gpus=bundled)
    alternatives = _alternatives("e2-standard-8", T4, 1, catalog, code="gpu-family")
    assert alternatives == ("machineType n1-standard-4", "machineType g2-standard-8")


def test_check_machine_spec_starved_gpus_in_a_series_of_small_machines_get_an_n1_standard() -> None:
    catalog = load_catalog()
    tiny = MachineType("n1-tiny-2", "n1", "n1-tiny", 2, 7.5)  # a series with nothing bigger
    catalog = dataclasses.replace(catalog, machines={**catalog.machines, tiny.name: tiny})
    assert _alternatives(tiny.name, T4, 1, catalog, code="gpu-machine-too-small") == (
        "n1-standard-4",
    )


@pytest.mark.parametrize(("vcpus", "memory"), [(None, None), (2, None), (None, 500.0)])
def test_check_machine_spec_n1_machine_of_unknown_size_is_not_judged(
    vcpus: int | None, memory: float | None
) -> None:
    # Two vCPUs would starve a T4 and 500 GB exceed its cap: unknown the other half, no verdict.
    catalog = load_catalog()
    odd = MachineType("n1-odd-2", "n1", "n1-odd", vcpus, memory)
    catalog = dataclasses.replace(catalog, machines={**catalog.machines, odd.name: odd})
    spec = {"machineType": odd.name, "acceleratorType": T4, "acceleratorCount": 1}
    assert check_machine_spec(spec, "m", catalog, today=TODAY) == []

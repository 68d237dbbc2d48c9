"""The TPU rules in words and at their limits: accelerator, core count and topology per TPU
machine type, hosts a shape spans, one pool with one replica, no Spot on a Pod slice."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from vertex_retrain.specs.hardware_rules import check_machine_spec
from vertex_retrain.specs.machine_catalog import load_catalog
from vertex_retrain.specs.problems import Problem
from vertex_retrain.specs.tpu_rules import check_tpu_machine, check_tpu_pools, tpu_hosts

V5E, V6E = "ct5lp-hightpu-4t", "ct6e-standard-4t"
POOLS = "jobSpec.workerPoolSpecs"


def _machine_problems(**spec: Any) -> list[Problem]:
    return check_machine_spec(spec, "m", load_catalog(), today=dt.date(2026, 11, 29))


def _count_error(count: int, next_pod: int, accelerator: str = "TPU_V3") -> Problem:
    return Problem(
        "error",
        "m.acceleratorCount",
        count,
        f"{accelerator} on cloud-tpu takes 8 cores (one device) or a multiple of 32 (a Pod slice).",
        ("acceleratorCount 8", f"acceleratorCount {next_pod}"),
        "tpu-count",
    )


@pytest.mark.parametrize("accelerator", [None, "TPU_V5_LITEPOD"])
def test_cloud_tpu_needs_a_v2_or_v3_accelerator_in_words(accelerator: str | None) -> None:
    spec = {"acceleratorType": accelerator} if accelerator else {}
    assert _machine_problems(machineType="cloud-tpu", acceleratorCount=8, **spec) == [
        Problem(
            "error",
            "m.acceleratorType",
            accelerator,
            "cloud-tpu needs acceleratorType TPU_V2 or TPU_V3.",
            ("acceleratorType TPU_V2", "acceleratorType TPU_V3"),
            "tpu-accelerator",
        )
    ]


@pytest.mark.parametrize("count", [8, 32, 64, 96])
def test_cloud_tpu_takes_one_device_or_whole_pod_slices(count: int) -> None:
    assert (
        _machine_problems(machineType="cloud-tpu", acceleratorType="TPU_V3", acceleratorCount=count)
        == []
    )


@pytest.mark.parametrize(
    ("count", "next_pod"), [(0, 32), (1, 32), (16, 32), (31, 32), (33, 64), (40, 64), (65, 96)]
)
def test_cloud_tpu_other_core_counts_are_refused_with_the_next_pod_slice(
    count: int, next_pod: int
) -> None:
    problems = _machine_problems(
        machineType="cloud-tpu", acceleratorType="TPU_V2", acceleratorCount=count
    )
    assert problems == [_count_error(count, next_pod, "TPU_V2")]


def test_cloud_tpu_pod_slices_are_multiples_of_32_when_the_catalog_names_none() -> None:
    tpu = dataclasses.replace(load_catalog().tpu_machines["cloud-tpu"], pod_multiple=None)
    assert check_tpu_machine({}, "m", tpu, "TPU_V3", 16) == [_count_error(16, 32)]
    assert check_tpu_machine({}, "m", tpu, "TPU_V3", 64) == []


@pytest.mark.parametrize(("count", "refused"), [(0, True), (1, False), (3, False)])
def test_cloud_tpu_pod_slice_is_a_positive_multiple(count: int, refused: bool) -> None:
    # A catalog whose Pod slices come in multiples of 1: any positive count, never 0.
    tpu = dataclasses.replace(load_catalog().tpu_machines["cloud-tpu"], pod_multiple=1)
    problems = check_tpu_machine({}, "m", tpu, "TPU_V3", count)
    assert [p.alternatives for p in problems] == (
        [("acceleratorCount 8", "acceleratorCount 1")] if refused else []
    )


def _topology_error(machine: str, value: Any, supported: str, *shown: str) -> Problem:
    return Problem(
        "error",
        "m.tpuTopology",
        value,
        f"{machine} supports tpuTopology {supported}.",
        tuple(f"tpuTopology {t}" for t in shown),
        "tpu-topology",
    )


V5E_TOPOLOGIES = "2x2, 2x4, 4x4, 4x8, 8x8, 8x16 or 16x16"


@pytest.mark.parametrize(
    ("machine", "accelerator", "alternative"),
    [
        (V5E, "TPU_V2", "acceleratorType TPU_V5_LITEPOD"),
        (V6E, "TPU_V5_LITEPOD", "omit acceleratorType (the machine type selects the TPU)"),
    ],
)
def test_tpu_machine_with_another_accelerator_and_no_topology_in_words(
    machine: str, accelerator: str, alternative: str
) -> None:
    generation = "v5e" if machine == V5E else "v6e"
    assert _machine_problems(machineType=machine, acceleratorType=accelerator) == [
        Problem(
            "error",
            "m.acceleratorType",
            accelerator,
            f"{machine} is a TPU {generation} machine; acceleratorType {accelerator} does not "
            "match it.",
            (alternative,),
            "tpu-accelerator",
        ),
        _topology_error(machine, None, V5E_TOPOLOGIES, "2x2", "2x4", "4x4"),
    ]


@pytest.mark.parametrize(
    ("machine", "topology", "supported", "shown"),
    [
        ("ct5lp-hightpu-1t", "2x2", "1x1", ("1x1",)),
        (V6E, "3x3", V5E_TOPOLOGIES, ("2x2", "2x4", "4x4")),
    ],
)
def test_tpu_machine_with_another_topology_in_words(
    machine: str, topology: str, supported: str, shown: tuple[str, ...]
) -> None:
    assert _machine_problems(machineType=machine, tpuTopology=topology) == [
        _topology_error(machine, topology, supported, *shown)
    ]


@pytest.mark.parametrize("accelerator", [None, "TPU_V5_LITEPOD"])
def test_v5e_machine_with_its_topology_passes(accelerator: str | None) -> None:
    spec = {"acceleratorType": accelerator} if accelerator else {}
    assert _machine_problems(machineType=V5E, tpuTopology="4x8", **spec) == []


@pytest.mark.parametrize(
    ("spec", "hosts"),
    [
        ({"machineType": "n1-standard-8"}, None),
        ({"machineType": "zzz"}, None),
        (None, None),
        ({"machineType": "cloud-tpu"}, 1),  # no count: one device
        ({"machineType": "cloud-tpu", "acceleratorCount": 8}, 1),
        ({"machineType": "cloud-tpu", "acceleratorCount": "32"}, 4),  # 8 cores a host
        ({"machineType": "cloud-tpu", "acceleratorCount": 128}, 16),
        ({"machineType": V5E}, 1),  # no topology: one host
        ({"machineType": V5E, "tpuTopology": "2x2"}, 1),
        ({"machineType": V5E, "tpuTopology": "4x4"}, 4),
        ({"machineType": "tpu7x-standard-4t", "tpuTopology": "4x4x8"}, 32),
    ],
)
def test_tpu_hosts_counts_the_vms_a_shape_spans(spec: Any, hosts: int | None) -> None:
    assert tpu_hosts(spec, load_catalog()) == hosts


def _pool(machine: str, replicas: Any = None, **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"machineSpec": {"machineType": machine, **spec}}
    if replicas is not None:
        out["replicaCount"] = replicas
    return out


def _pools_problems(*pools: dict[str, Any], strategy: Any = None) -> list[Problem]:
    return check_tpu_pools(list(pools), "jobSpec", load_catalog(), strategy)


TPU = _pool(V5E, tpuTopology="2x2")
POD = _pool(V5E, tpuTopology="2x4")  # two hosts


def _extra_pool_error(index: int, machine: str) -> Problem:
    return Problem(
        "error",
        f"{POOLS}[{index}]",
        machine,
        "A TPU job takes exactly one worker pool with one replica; scale with a larger TPU "
        "shape instead of more pools.",
        (f"remove {POOLS}[{index}]", "a larger tpuTopology or acceleratorCount in pool 0"),
        "tpu-pools",
    )


def test_check_tpu_pools_without_a_tpu_finds_nothing() -> None:
    assert (
        _pools_problems(_pool("n1-standard-4", 2), _pool("n1-standard-4", 3), strategy="SPOT") == []
    )


def test_check_tpu_pools_names_every_extra_pool_and_skips_empty_ones() -> None:
    problems = _pools_problems(TPU, {}, _pool("n1-standard-4"), _pool("e2-standard-8"))
    assert problems == [
        _extra_pool_error(2, "n1-standard-4"),
        _extra_pool_error(3, "e2-standard-8"),
    ]


def test_check_tpu_pools_with_an_empty_second_pool_passes() -> None:
    assert _pools_problems(TPU, {}) == []


def test_check_tpu_pools_tpu_after_another_pool_is_the_extra_pool() -> None:
    # Pool [0] is no TPU: its replicas and the Spot strategy are not the TPU rules' business.
    problems = _pools_problems(_pool("n1-standard-4", 2), POD, strategy="SPOT")
    assert problems == [_extra_pool_error(1, V5E)]


@pytest.mark.parametrize(
    ("replicas", "refused"),
    [(None, False), (1, False), ("1", False), ("two", False), (2, True), ("3", True), (0, True)],
)
def test_check_tpu_pools_primary_runs_one_replica(replicas: Any, refused: bool) -> None:
    problems = _pools_problems(_pool(V5E, replicas, tpuTopology="2x2"))
    assert (
        problems
        == [
            Problem(
                "error",
                f"{POOLS}[0].replicaCount",
                replicas,
                "A TPU worker pool takes exactly one replica.",
                ("replicaCount 1", "a larger tpuTopology (more chips) instead of replicas"),
                "tpu-replicas",
            )
        ][: int(refused)]
    )


def _spot_pod_error(hosts: int) -> Problem:
    return Problem(
        "error",
        "jobSpec.scheduling.strategy",
        "SPOT",
        f"Spot VMs are not available for TPU Pods; this shape spans {hosts} TPU hosts.",
        ("strategy STANDARD", "a single-host TPU shape (e.g. tpuTopology 2x2) on Spot"),
        "tpu-spot-pod",
    )


@pytest.mark.parametrize(
    ("pool", "problems"),
    [
        (TPU, []),
        (POD, [_spot_pod_error(2)]),
        (_pool("cloud-tpu", acceleratorType="TPU_V3", acceleratorCount=8), []),
        (_pool("cloud-tpu", acceleratorType="TPU_V3", acceleratorCount=32), [_spot_pod_error(4)]),
    ],
)
def test_check_tpu_pools_refuses_spot_on_a_pod_slice_only(
    pool: dict[str, Any], problems: list[Problem]
) -> None:
    assert _pools_problems(pool, strategy="SPOT") == problems
    assert _pools_problems(pool, strategy="STANDARD") == []

"""TPU rules: accelerator and shape per TPU machine type, one pool, one replica, no Spot Pods."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from vertex_retrain.specs.machine_catalog import Catalog, TpuMachine
from vertex_retrain.specs.payload_io import as_int, mapping
from vertex_retrain.specs.problems import Problem, error, join_choices


def check_tpu_machine(
    spec: Mapping[str, Any], path: str, tpu: TpuMachine, accelerator: Any, count: int
) -> list[Problem]:
    """Checks a TPU ``machineSpec``: accelerator type, core count or topology."""
    acc_path = f"{path}.acceleratorType"
    if tpu.single_device_count is not None:  # cloud-tpu: v2 / v3 by core count
        if accelerator not in tpu.accelerator_types:
            return [
                error(
                    acc_path,
                    accelerator,
                    f"{tpu.name} needs acceleratorType {' or '.join(tpu.accelerator_types)}.",
                    [f"acceleratorType {a}" for a in tpu.accelerator_types],
                    code="tpu-accelerator",
                )
            ]
        pod = tpu.pod_multiple or 32
        if count != tpu.single_device_count and (count <= 0 or count % pod):
            next_pod = pod * max(1, math.ceil(count / pod))
            return [
                error(
                    f"{path}.acceleratorCount",
                    count,
                    f"{accelerator} on {tpu.name} takes {tpu.single_device_count} cores (one "
                    f"device) or a multiple of {pod} (a Pod slice).",
                    [f"acceleratorCount {tpu.single_device_count}", f"acceleratorCount {next_pod}"],
                    code="tpu-count",
                )
            ]
        return []
    problems: list[Problem] = []
    if accelerator is not None and accelerator not in tpu.accelerator_types:
        problems.append(
            error(
                acc_path,
                accelerator,
                f"{tpu.name} is a TPU {tpu.generation} machine; acceleratorType {accelerator} "
                "does not match it.",
                [f"acceleratorType {a}" for a in tpu.accelerator_types]
                or ["omit acceleratorType (the machine type selects the TPU)"],
                code="tpu-accelerator",
            )
        )
    topology = spec.get("tpuTopology")
    supported = list(tpu.topologies)
    if topology not in tpu.topologies:
        problems.append(
            error(
                f"{path}.tpuTopology",
                topology,
                f"{tpu.name} supports tpuTopology {join_choices(supported)}.",
                [f"tpuTopology {t}" for t in supported[:3]],
                code="tpu-topology",
            )
        )
    return problems


def tpu_hosts(spec: Any, catalog: Catalog) -> int | None:
    """Returns how many TPU VMs a TPU ``machineSpec`` asks for, or None if it is not a TPU."""
    spec = mapping(spec)
    tpu = catalog.tpu_machines.get(str(spec.get("machineType")))
    if tpu is None:
        return None
    if tpu.single_device_count is not None:
        count = as_int(spec.get("acceleratorCount")) or 0
        # Each v2 / v3 host has one 8-core device; a Pod slice spans count / 8 hosts.
        return max(1, count // tpu.single_device_count)
    return tpu.topologies.get(str(spec.get("tpuTopology")), 1)


def check_tpu_pools(
    pools: Sequence[Any], spec_path: str, catalog: Catalog, strategy: Any
) -> list[Problem]:
    """Applies the TPU job rules: one pool, one replica, no Spot on a Pod slice.

    Args:
        pools: ``workerPoolSpecs`` (REST JSON).
        spec_path: Field path of the CustomJobSpec (``jobSpec`` or ``trialJobSpec``).
        catalog: The machine catalog.
        strategy: ``scheduling.strategy`` of the job (or None).

    Returns:
        The problems found.
    """
    path = f"{spec_path}.workerPoolSpecs"
    problems: list[Problem] = []
    tpu_indexes = [
        i for i, p in enumerate(pools) if tpu_hosts(mapping(p).get("machineSpec"), catalog)
    ]
    if not tpu_indexes:
        return problems
    non_empty = [i for i, p in enumerate(pools) if mapping(p)]
    for i in non_empty:
        if i != 0:
            problems.append(
                error(
                    f"{path}[{i}]",
                    mapping(mapping(pools[i]).get("machineSpec")).get("machineType"),
                    "A TPU job takes exactly one worker pool with one replica; scale with a "
                    "larger TPU shape instead of more pools.",
                    [f"remove {path}[{i}]", "a larger tpuTopology or acceleratorCount in pool 0"],
                    code="tpu-pools",
                )
            )
    first = mapping(pools[0])  # a TPU was found: there is a pool [0]
    replicas = as_int(first.get("replicaCount"))  # None when missing: one replica
    if tpu_indexes[0] == 0 and replicas not in (None, 1):
        problems.append(
            error(
                f"{path}[0].replicaCount",
                first.get("replicaCount"),
                "A TPU worker pool takes exactly one replica.",
                ["replicaCount 1", "a larger tpuTopology (more chips) instead of replicas"],
                code="tpu-replicas",
            )
        )
    hosts = tpu_hosts(first.get("machineSpec"), catalog) or 1  # not a TPU: one machine
    if strategy == "SPOT" and hosts > 1:
        problems.append(
            error(
                f"{spec_path}.scheduling.strategy",
                strategy,
                f"Spot VMs are not available for TPU Pods; this shape spans {hosts} TPU hosts.",
                ["strategy STANDARD", "a single-host TPU shape (e.g. tpuTopology 2x2) on Spot"],
                code="tpu-spot-pod",
            )
        )
    return problems

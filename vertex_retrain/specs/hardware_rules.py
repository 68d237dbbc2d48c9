"""Hardware rules: machine types, GPU pairings and counts, retirements.

Each check reads one ``machineSpec`` in REST JSON form and returns :class:`Problem` objects
whose alternatives are concrete values that the catalog says would work. TPU machine specs are
handed to :mod:`vertex_retrain.specs.tpu_rules`.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import math
from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.machine_catalog import Catalog, MachineType
from vertex_retrain.specs.payload_io import as_int
from vertex_retrain.specs.problems import Problem, error, join_choices, warning
from vertex_retrain.specs.tpu_rules import check_tpu_machine

_UNSET = (None, "", "ACCELERATOR_TYPE_UNSPECIFIED")


def _largest_fitting(
    catalog: Catalog, series: str, max_vcpus: float, max_memory: float
) -> MachineType | None:
    fitting = [
        m
        for m in catalog.machines.values()
        if m.series == series
        and m.vcpus is not None
        and m.memory_gb is not None
        and m.vcpus <= max_vcpus
        and m.memory_gb <= max_memory
    ]
    return max(fitting, key=lambda m: (m.vcpus, m.memory_gb), default=None)


def _smallest_with(catalog: Catalog, series: str, min_vcpus: float) -> MachineType | None:
    bigger = [
        m
        for m in catalog.machines.values()
        if m.series == series
        and m.vcpus is not None
        and m.memory_gb is not None
        and m.vcpus >= min_vcpus
    ]
    return min(bigger, key=lambda m: (m.vcpus, m.memory_gb), default=None)


def _n1_host_for(catalog: Catalog, acc: str, count: int) -> MachineType | None:
    """Smallest n1-standard machine that feeds ``count`` × ``acc`` and stays within its caps."""
    caps = catalog.n1_gpus[acc]
    valid = min((c for c in caps if c >= count), default=max(caps))
    needed = max(catalog.min_vcpus_per_gpu_machine, math.ceil(valid * catalog.min_vcpus_per_gpu))
    host = _smallest_with(catalog, "n1-standard", needed)
    return host if host is not None and _fits(host, caps[valid]) else None


def _fits(machine: MachineType, cap: tuple[int, float]) -> bool:
    """Whether ``machine`` stays within an n1 GPU count's (vCPUs, GB) cap; an unknown size fits."""
    max_vcpus, max_memory = cap
    return (machine.vcpus is None or machine.vcpus <= max_vcpus) and (
        machine.memory_gb is None or machine.memory_gb <= max_memory
    )


def _carriers(catalog: Catalog, accelerator: str, count: int | None) -> list[str]:
    """Machine types that carry ``accelerator``, those with exactly ``count`` first."""
    machines = catalog.gpu_machines_for(accelerator)
    exact = [m for m in machines if catalog.bundled_gpus[m][1] == count]
    return [f"machineType {m}" for m in exact or machines]


def _n1_alternatives(catalog: Catalog, machine: MachineType) -> list[str]:
    out = []
    for acc, caps in catalog.n1_gpus.items():
        if acc in catalog.retired:
            continue
        counts = [c for c, cap in sorted(caps.items()) if _fits(machine, cap)]
        if counts:
            out.append(f"acceleratorType {acc} with acceleratorCount {counts[0]}")
    return out


def check_machine_spec(spec: Any, path: str, catalog: Catalog, *, today: _dt.date) -> list[Problem]:
    """Checks one ``machineSpec``.

    Args:
        spec: The ``machineSpec`` mapping (REST JSON, camelCase).
        path: Its field path, e.g. ``jobSpec.workerPoolSpecs[0].machineSpec``.
        catalog: The machine catalog.
        today: Date used to decide whether an accelerator is already retired.

    Returns:
        The problems found (empty when the spec is valid).
    """
    if not isinstance(spec, Mapping):
        return [error(path, spec, "machineSpec must be an object.", code="type")]
    name = spec.get("machineType")
    if not isinstance(name, str) or not name:
        return [
            error(
                f"{path}.machineType",
                name,
                "Every worker pool needs a machine type.",
                ["n1-standard-4", "n1-standard-8"],
                code="machine-missing",
            )
        ]
    machine = catalog.machine(name)
    if machine is None:
        close = difflib.get_close_matches(name, list(catalog.machines))  # 3 at most, 0.6 alike
        return [
            error(
                f"{path}.machineType",
                name,
                f"Unknown machine type for Vertex AI training (catalog v{catalog.version}).",
                close or ["n1-standard-4", "n1-standard-8", "a2-highgpu-1g", "g2-standard-8"],
                code="unknown-machine",
            )
        ]
    accelerator = spec.get("acceleratorType")
    accelerator = None if accelerator in _UNSET else accelerator
    raw_count = spec.get("acceleratorCount")
    count = as_int(raw_count) if raw_count is not None else 0
    if count is None or count < 0:
        return [
            error(
                f"{path}.acceleratorCount",
                raw_count,
                "acceleratorCount must be a non-negative integer.",
                ["acceleratorCount 1"],
                code="type",
            )
        ]
    topology = spec.get("tpuTopology")
    if name in catalog.tpu_machines:
        return check_tpu_machine(spec, path, catalog.tpu_machines[name], accelerator, count)
    problems: list[Problem] = []
    if topology:
        problems.append(
            error(
                f"{path}.tpuTopology",
                topology,
                f"tpuTopology applies only to TPU machine types, not {name}.",
                ["remove tpuTopology", "machineType ct5lp-hightpu-4t with tpuTopology 2x2"],
                code="tpu-topology",
            )
        )
    bundled = catalog.bundled_gpus.get(name)
    if accelerator is None:
        if bundled:
            acc, n = bundled
            problems.append(
                error(
                    f"{path}.acceleratorType",
                    None,
                    f"{name} carries {n} × {acc}; name them in the machine spec.",
                    [f"acceleratorType {acc} with acceleratorCount {n}"],
                    code="gpu-missing",
                )
            )
        elif count > 0:
            problems.append(
                error(
                    f"{path}.acceleratorType",
                    None,
                    f"acceleratorCount {count} without an acceleratorType.",
                    _n1_alternatives(catalog, machine) if machine.family == "n1" else [],
                    code="gpu-missing",
                )
            )
        return problems
    problems += _check_accelerator(path, catalog, machine, str(accelerator), count, today)
    return problems


def _check_accelerator(
    path: str,
    catalog: Catalog,
    machine: MachineType,
    acc: str,
    count: int,
    today: _dt.date,
) -> list[Problem]:
    acc_path, count_path = f"{path}.acceleratorType", f"{path}.acceleratorCount"
    live_n1 = [a for a in catalog.n1_gpus if a not in catalog.retired]
    if acc not in catalog.accelerator_enum:
        close = difflib.get_close_matches(acc, catalog.accelerator_enum, cutoff=0.5)  # 3 at most
        return [error(acc_path, acc, "Not a Vertex AI AcceleratorType.", close, code="unknown-gpu")]
    retirement = catalog.retired.get(acc)
    if retirement is not None:
        if retirement.date <= today:
            return [
                error(
                    acc_path,
                    acc,
                    f"{acc} is retired since {retirement.date.isoformat()}: {retirement.note}",
                    [f"acceleratorType {a}" for a in live_n1] + ["machineType g2-standard-8"],
                    code="gpu-retired",
                )
            ]
        return [
            warning(
                acc_path,
                acc,
                f"{acc} retires on {retirement.date.isoformat()}: {retirement.note}",
                [f"acceleratorType {a}" for a in live_n1],
                code="gpu-retiring",
            )
        ]
    if acc not in catalog.known_accelerators():
        return [
            warning(
                acc_path,
                acc,
                f"The catalog (v{catalog.version}) has no rules for {acc}; it was not checked.",
                code="gpu-unchecked",
            )
        ]
    if acc.startswith("TPU_"):
        tpu_machines = [t.name for t in catalog.tpu_machines.values() if acc in t.accelerator_types]
        return [
            error(
                acc_path,
                acc,
                f"{acc} is a TPU; it runs only on TPU machine types, not {machine.name}.",
                [f"machineType {m}" for m in tpu_machines],
                code="gpu-family",
            )
        ]
    bundled = catalog.bundled_gpus.get(machine.name)
    if bundled is not None:
        want_acc, want_count = bundled
        if acc != want_acc:
            alternatives = [f"acceleratorType {want_acc}", *_carriers(catalog, acc, count)]
            if acc in catalog.n1_gpus:
                alternatives.append(f"an n1 machine for {acc}, e.g. machineType n1-standard-8")
            return [
                error(
                    acc_path,
                    acc,
                    f"{machine.name} comes with {want_count} × {want_acc}; {acc} cannot be "
                    "attached to it.",
                    alternatives,
                    code="gpu-family",
                )
            ]
        if count != want_count:
            return [
                error(
                    count_path,
                    count,
                    f"{machine.name} has exactly {want_count} × {acc}; the count is fixed by "
                    "the machine type.",
                    [f"acceleratorCount {want_count}", *_carriers(catalog, acc, count)],
                    code="gpu-count",
                )
            ]
        return []
    if machine.family != "n1" or acc not in catalog.n1_gpus:
        alternatives = _carriers(catalog, acc, count)
        if acc in catalog.n1_gpus:
            host = _n1_host_for(catalog, acc, count)
            if host is not None:
                alternatives.insert(0, f"machineType {host.name}")
        elif machine.family == "n1":
            alternatives += [f"acceleratorType {a}" for a in live_n1]
        where = (
            "attaches only to n1 machines"
            if acc in catalog.n1_gpus
            else "comes only with " + ", ".join(catalog.gpu_machines_for(acc))
        )
        return [
            error(
                acc_path,
                acc,
                f"{acc} cannot run on {machine.name} ({machine.family} family): it {where}.",
                alternatives,
                code="gpu-family",
            )
        ]
    return _check_n1_gpu(path, catalog, machine, acc, count)


def _check_n1_gpu(
    path: str, catalog: Catalog, machine: MachineType, acc: str, count: int
) -> list[Problem]:
    caps = catalog.n1_gpus[acc]
    counts = sorted(caps)
    if count not in caps:
        nearest = sorted(counts, key=lambda c: (abs(c - count), c))[:2]
        return [
            error(
                f"{path}.acceleratorCount",
                count,
                f"{acc} takes {join_choices(counts)} GPUs per machine, never {count}.",
                [f"acceleratorCount {c}" for c in sorted(nearest)],
                code="gpu-count",
            )
        ]
    vcpus, memory = machine.vcpus, machine.memory_gb
    if vcpus is None or memory is None:
        return []  # a size the catalog does not know cannot be held against the caps
    max_vcpus, max_memory = caps[count]
    if not _fits(machine, caps[count]):
        # The counts whose cap fits the machine, fewest GPUs first.
        alternatives = [f"acceleratorCount {c}" for c in counts if _fits(machine, caps[c])][:2]
        smaller = _largest_fitting(catalog, machine.series, max_vcpus, max_memory)
        if smaller is not None:
            alternatives.append(f"{smaller.name} or smaller")
        return [
            error(
                f"{path}.machineType",
                machine.name,
                f"{machine.name} has {vcpus} vCPUs and {memory:g} GB, but {count} × {acc} "
                f"can carry at most {max_vcpus} vCPUs and {max_memory:g} GB.",
                alternatives,
                code="gpu-machine-too-big",
            )
        ]
    needed = max(catalog.min_vcpus_per_gpu_machine, math.ceil(count * catalog.min_vcpus_per_gpu))
    if vcpus < needed:
        bigger = _smallest_with(catalog, machine.series, needed)
        bigger = bigger or _smallest_with(catalog, "n1-standard", needed)
        return [
            warning(
                f"{path}.machineType",
                machine.name,
                f"{machine.name} has only {vcpus} vCPUs for {count} × {acc}: too small to feed "
                "the GPUs (input pipeline starves; the job may not even write logs).",
                [f"{bigger.name}"] if bigger else [],
                code="gpu-machine-too-small",
            )
        ]
    return []

"""The machine catalog: machine types, GPU pairings, TPU shapes and retirements.

The facts live in ``machine_catalog.yaml`` next to this module (versioned, with its sources and the
date they were read). This module only loads them into immutable lookups; it has no rules of
its own. Loading is cached per path. Prices are kept apart, per region, in ``prices.yaml``
(:mod:`vertex_retrain.specs.prices`).
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vertex_retrain.specs.yaml_file import load_yaml_table

DEFAULT_CATALOG_PATH = Path(__file__).with_name("machine_catalog.yaml")


@dataclass(frozen=True)
class MachineType:
    """A Compute Engine machine type usable for training.

    Attributes:
        name: e.g. ``n1-standard-8``.
        family: Prefix before the first dash, e.g. ``n1``.
        series: Name without the size suffix, e.g. ``n1-standard``.
        vcpus: Virtual CPUs, or None where the docs are silent.
        memory_gb: Memory in GB, or None where the docs are silent.
    """

    name: str
    family: str
    series: str
    vcpus: int | None
    memory_gb: float | None


@dataclass(frozen=True)
class TpuMachine:
    """A TPU machine type and the shapes it accepts.

    Attributes:
        name: Machine type, e.g. ``ct5lp-hightpu-4t``.
        generation: ``v2/v3``, ``v5e``, ``v6e`` or ``7x``.
        accelerator_types: Enum names allowed in ``acceleratorType`` (empty: leave it unset).
        chips_per_host: Chips per VM (None for ``cloud-tpu``).
        topologies: ``tpuTopology`` -> number of hosts; empty for ``cloud-tpu``.
        single_device_count: ``cloud-tpu`` only: the count of one device (8 cores).
        pod_multiple: ``cloud-tpu`` only: Pod slices use multiples of this count.
    """

    name: str
    generation: str
    accelerator_types: tuple[str, ...]
    chips_per_host: int | None
    topologies: Mapping[str, int]
    single_device_count: int | None = None
    pod_multiple: int | None = None


@dataclass(frozen=True)
class Retirement:
    """When an accelerator stopped (or stops) being supported, and where that is stated."""

    date: _dt.date
    note: str


@dataclass(frozen=True)
class Catalog:
    """Immutable view of ``machine_catalog.yaml``. Build it with :func:`load_catalog`."""

    version: int
    retrieved: str
    sources: tuple[str, ...]
    accelerator_enum: tuple[str, ...]
    machines: Mapping[str, MachineType]
    bundled_gpus: Mapping[str, tuple[str, int]]
    n1_gpus: Mapping[str, Mapping[int, tuple[int, float]]]
    retired: Mapping[str, Retirement]
    tpu_machines: Mapping[str, TpuMachine]
    tpu_requirements: Mapping[str, Mapping[str, str]]
    min_vcpus_per_gpu_machine: int
    min_vcpus_per_gpu: float

    def machine(self, name: str) -> MachineType | None:
        """Returns the machine type, or None when the catalog does not know it."""
        return self.machines.get(name)

    def gpu_machines_for(self, accelerator: str) -> list[str]:
        """Returns the accelerator-optimized machine types that carry ``accelerator``."""
        return [m for m, (acc, _n) in self.bundled_gpus.items() if acc == accelerator]

    def known_accelerators(self) -> set[str]:
        """Returns every accelerator enum the catalog has rules for."""
        names = {acc for acc, _n in self.bundled_gpus.values()} | set(self.n1_gpus)
        for tpu in self.tpu_machines.values():
            names |= set(tpu.accelerator_types)
        return names


def _machine(name: str, vcpus: Any, memory: Any) -> MachineType:
    series = name.rsplit("-", 1)[0] if name != "cloud-tpu" else name
    return MachineType(
        name=name,
        family=name.split("-", 1)[0],
        series=series,
        vcpus=None if vcpus is None else int(vcpus),
        memory_gb=None if memory is None else float(memory),
    )


def _parse(raw: Mapping[str, Any]) -> Catalog:
    tpu = {
        name: TpuMachine(
            name=name,
            generation=str(t["generation"]),
            accelerator_types=tuple(t.get("accelerator_types", ())),
            chips_per_host=t.get("chips_per_host"),
            topologies=MappingProxyType(dict(t.get("topologies", {}))),
            single_device_count=t.get("single_device_count"),
            pod_multiple=t.get("pod_multiple"),
        )
        for name, t in raw["tpu"].items()
    }
    feeding = raw["gpu_feeding"]
    return Catalog(
        version=int(raw["version"]),
        retrieved=str(raw["retrieved"]),
        sources=tuple(raw.get("sources", ())),
        accelerator_enum=tuple(str(a) for a in raw["accelerator_enum"]),
        machines=MappingProxyType(
            {n: _machine(n, v[0], v[1]) for n, v in raw["machine_types"].items()}
        ),
        bundled_gpus=MappingProxyType(
            {m: (str(v[0]), int(v[1])) for m, v in raw["bundled_gpus"].items()}
        ),
        n1_gpus=MappingProxyType(
            {
                acc: MappingProxyType({int(c): (int(v[0]), float(v[1])) for c, v in caps.items()})
                for acc, caps in raw["n1_gpus"].items()
            }
        ),
        retired=MappingProxyType(
            {
                acc: Retirement(_dt.date.fromisoformat(str(r["date"])), str(r.get("note", "")))
                for acc, r in raw.get("retired_accelerators", {}).items()
            }
        ),
        tpu_machines=MappingProxyType(tpu),
        tpu_requirements=MappingProxyType(
            {str(g): MappingProxyType(dict(v)) for g, v in raw.get("tpu_requirements", {}).items()}
        ),
        min_vcpus_per_gpu_machine=int(feeding["min_vcpus"]),
        min_vcpus_per_gpu=float(feeding["min_vcpus_per_gpu"]),
    )


@functools.lru_cache(maxsize=8)
def _load_cached(path: Path) -> Catalog:
    return load_yaml_table(path, what="machine catalog", default=DEFAULT_CATALOG_PATH, parse=_parse)


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Loads the machine catalog (cached per path).

    Args:
        path: A catalog YAML file; defaults to the ``machine_catalog.yaml`` shipped with
            the package.

    Returns:
        The immutable catalog.

    Raises:
        ValueError: When the file cannot be read or does not have the expected structure.
    """
    return _load_cached(Path(path or DEFAULT_CATALOG_PATH).resolve())

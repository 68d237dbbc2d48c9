"""Typed builders for worker pools: machine, disk, reservation, and the code a pool runs.

Each ``to_payload`` returns the REST JSON (camelCase) exactly as
``json_format.MessageToDict`` would render the ``aiplatform_v1`` message: int64 fields as
strings, defaults omitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vertex_retrain.specs.image_rules import BASE_IMAGE_ENV, REDUCTION_SERVER_IMAGE

ReservationType = Literal["ANY_RESERVATION", "SPECIFIC_RESERVATION", "NO_RESERVATION"]


@dataclass(frozen=True)
class ReservationAffinity:
    """How a pool consumes Compute Engine reservations.

    Attributes:
        type: ``ANY_RESERVATION``, ``SPECIFIC_RESERVATION`` or ``NO_RESERVATION``.
        reservation: For ``SPECIFIC_RESERVATION``: the reservation name(s), e.g.
            ``projects/P/zones/Z/reservations/R``.
    """

    type: ReservationType = "ANY_RESERVATION"
    reservation: tuple[str, ...] = ()

    def to_payload(self) -> dict[str, Any]:
        """Returns the ``reservationAffinity`` JSON."""
        out: dict[str, Any] = {"reservationAffinityType": self.type}
        if self.reservation:
            out["key"] = "compute.googleapis.com/reservation-name"
            out["values"] = list(self.reservation)
        return out


@dataclass(frozen=True)
class Machine:
    """One replica's hardware.

    Attributes:
        machine_type: e.g. ``n1-standard-8``, ``a2-highgpu-1g``, ``ct5lp-hightpu-4t``.
        accelerator_type: AcceleratorType enum name, e.g. ``NVIDIA_TESLA_T4``.
        accelerator_count: Accelerators per replica.
        tpu_topology: TPU slice shape, e.g. ``2x2`` (TPU v5e / v6e / 7x machines only).
        reservation: Optional reservation affinity.
    """

    machine_type: str
    accelerator_type: str | None = None
    accelerator_count: int = 0
    tpu_topology: str | None = None
    reservation: ReservationAffinity | None = None

    def to_payload(self) -> dict[str, Any]:
        """Returns the ``machineSpec`` JSON."""
        out: dict[str, Any] = {"machineType": self.machine_type}
        if self.accelerator_type:
            out["acceleratorType"] = self.accelerator_type
        if self.accelerator_count:
            out["acceleratorCount"] = int(self.accelerator_count)
        if self.tpu_topology:
            out["tpuTopology"] = self.tpu_topology
        if self.reservation is not None:
            out["reservationAffinity"] = self.reservation.to_payload()
        return out


@dataclass(frozen=True)
class Disk:
    """Boot disk of each replica (``pd-ssd`` or ``pd-standard``, size in GB)."""

    boot_disk_type: str = "pd-ssd"
    boot_disk_size_gb: int = 100

    def to_payload(self) -> dict[str, Any]:
        """Returns the ``diskSpec`` JSON."""
        return {"bootDiskType": self.boot_disk_type, "bootDiskSizeGb": int(self.boot_disk_size_gb)}


def _env(env: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": str(v)} for k, v in env.items()]


@dataclass(frozen=True)
class ContainerCode:
    """A custom (or prebuilt) container: image, command, args and environment."""

    image_uri: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def to_payload(self, extra_env: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
        """Returns ``("containerSpec", json)``."""
        out: dict[str, Any] = {"imageUri": self.image_uri}
        if self.command:
            out["command"] = list(self.command)
        if self.args:
            out["args"] = list(self.args)
        env = {**self.env, **extra_env}
        if env:
            out["env"] = _env(env)
        return "containerSpec", out


@dataclass(frozen=True)
class PythonPackageCode:
    """A Python package run by a prebuilt executor image (``python -m module args``)."""

    executor_image_uri: str
    package_uris: tuple[str, ...]
    python_module: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def to_payload(self, extra_env: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
        """Returns ``("pythonPackageSpec", json)``."""
        out: dict[str, Any] = {
            "executorImageUri": self.executor_image_uri,
            "packageUris": list(self.package_uris),
            "pythonModule": self.python_module,
        }
        if self.args:
            out["args"] = list(self.args)
        env = {**self.env, **extra_env}
        if env:
            out["env"] = _env(env)
        return "pythonPackageSpec", out


@dataclass(frozen=True)
class WorkerPool:
    """One worker pool: hardware, replicas, code and disk.

    Attributes:
        machine: Hardware of each replica.
        code: What each replica runs.
        replica_count: Replicas in the pool (the primary pool must have 1).
        disk: Optional boot disk spec.
        base_image: For custom GPU images: the image it was built FROM (e.g.
            ``nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04``). Recorded in the pool env as
            ``VERTEX_RETRAIN_BASE_IMAGE`` so payload validation can see it.
    """

    machine: Machine
    code: ContainerCode | PythonPackageCode
    replica_count: int = 1
    disk: Disk | None = None
    base_image: str | None = None

    def to_payload(self) -> dict[str, Any]:
        """Returns the ``workerPoolSpecs[i]`` JSON."""
        extra = {BASE_IMAGE_ENV: self.base_image} if self.base_image else {}
        key, code = self.code.to_payload(extra)
        out: dict[str, Any] = {
            key: code,
            "machineSpec": self.machine.to_payload(),
            "replicaCount": str(int(self.replica_count)),
        }
        if self.disk is not None:
            out["diskSpec"] = self.disk.to_payload()
        return out


def reduction_server_pool(
    replica_count: int,
    machine_type: str = "n1-highcpu-16",
    image_uri: str = REDUCTION_SERVER_IMAGE,
) -> WorkerPool:
    """Returns the Reduction Server pool (role [2]): official image, CPU-only.

    Args:
        replica_count: Reducer replicas; size them so their total egress bandwidth matches
            the workers'.
        machine_type: A high-bandwidth CPU machine (default ``n1-highcpu-16``).
        image_uri: The official image; regional mirrors (``asia-docker.pkg.dev/...``) work too.

    Returns:
        A :class:`WorkerPool` for ``CustomJobSpec(reduction_server=...)``.
    """
    return WorkerPool(
        machine=Machine(machine_type), code=ContainerCode(image_uri), replica_count=replica_count
    )


def pool_list(pools: Sequence[WorkerPool | None]) -> list[dict[str, Any]]:
    """Renders pools by position; unused middle roles become ``{}``, trailing ones vanish."""
    rendered = [p.to_payload() if p is not None else {} for p in pools]
    while rendered and not rendered[-1]:
        rendered.pop()
    return rendered

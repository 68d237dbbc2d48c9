"""Worker-pool structure rules: roles by position, replica counts, code specs, Reduction Server.

Vertex gives pools their roles by position: [0] primary (exactly one replica), [1] workers,
[2] parameter servers or Reduction Server, [3] evaluators. An unused role in the middle is an
empty ``{}`` pool, which the Vertex launcher keeps in place (GCPC's launcher would drop it:
``vertex_retrain.backends.vertex._launcher``), so any subset of roles with a primary can be
expressed. What Vertex cannot express is refused here with the reason: no primary, more than
four pools, a primary of several replicas, parameter servers or a Reduction Server without
workers in [1], a Reduction Server outside [2].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vertex_retrain.specs.image_rules import REDUCTION_SERVER_IMAGE, is_reduction_server
from vertex_retrain.specs.payload_io import as_int, mapping
from vertex_retrain.specs.problems import Problem, error

ROLES = ("primary", "workers", "parameter servers or Reduction Server", "evaluators")
_LAYOUT = "[0] primary, [1] workers, [2] parameter servers or Reduction Server, [3] evaluators"


def replica_count(pool: Any) -> int:
    """Replicas a pool asks for (an empty pool has none; a missing count means 1)."""
    pool = mapping(pool)
    if not pool:
        return 0
    return as_int(pool.get("replicaCount", 1)) or 0


def gpu_count(pool: Any) -> int:
    """GPUs per replica of a pool (0 for CPU and TPU pools)."""
    spec = mapping(mapping(pool).get("machineSpec"))
    acc = spec.get("acceleratorType")
    if not isinstance(acc, str) or not acc.startswith("NVIDIA_"):
        return 0
    return as_int(spec.get("acceleratorCount")) or 0  # none given: no GPUs


def _available_executor_image() -> str:
    """A prebuilt training image the container catalog says is available today, or where to
    find one: never an image past its end of availability."""
    import datetime as dt

    from vertex_retrain.specs.containers import load_containers
    from vertex_retrain.specs.executor_images import available_training_images

    catalog = load_containers()
    for framework in ("torch", "tensorflow", "scikit-learn"):
        found = available_training_images(catalog, framework=framework, today=dt.date.today())
        if found:
            return f"{catalog.registries['training'][0]}/{found[0].name}:latest"
    return (
        f"a prebuilt training image available today (none in {catalog.path.name}, retrieved "
        f"{catalog.retrieved}: use containerSpec with your own image)"
    )


def _check_code(pool: dict[str, Any], path: str) -> list[Problem]:
    has_container = "containerSpec" in pool
    has_package = "pythonPackageSpec" in pool
    if has_container == has_package:
        return [
            error(
                path,
                sorted(pool),
                "A worker pool runs exactly one of containerSpec or pythonPackageSpec.",
                [
                    "containerSpec {imageUri, command, args, env}",
                    "pythonPackageSpec {executorImageUri, packageUris, pythonModule, args}",
                ],
                code="pool-code",
            )
        ]
    if has_container:
        spec = mapping(pool["containerSpec"])
        if not spec.get("imageUri"):
            return [
                error(
                    f"{path}.containerSpec.imageUri",
                    spec.get("imageUri"),
                    "A container pool needs an image URI.",
                    ["REGION-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE@sha256:DIGEST (build-image)"],
                    code="pool-code",
                )
            ]
        return []
    spec = mapping(pool["pythonPackageSpec"])
    problems = [
        error(
            f"{path}.pythonPackageSpec.{key}",
            spec.get(key),
            f"A Python-package pool needs {key}.",
            [example],
            code="pool-code",
        )
        for key, example in (
            ("executorImageUri", _available_executor_image()),
            ("pythonModule", "mypackage.task"),
        )
        if not spec.get(key)
    ]
    uris = spec.get("packageUris")
    if not isinstance(uris, list) or not 1 <= len(uris) <= 100:
        problems.append(
            error(
                f"{path}.pythonPackageSpec.packageUris",
                uris,
                "packageUris must list 1 to 100 Cloud Storage URIs of packages.",
                ["[gs://BUCKET/trainer-0.1.tar.gz]"],
                code="pool-code",
            )
        )
    return problems


def check_pool_structure(pools: Any, spec_path: str) -> list[Problem]:
    """Checks pool count, order, replica counts, code specs and the Reduction Server pool.

    Args:
        pools: ``workerPoolSpecs`` (REST JSON list).
        spec_path: Field path of the CustomJobSpec (``jobSpec`` or ``trialJobSpec``).

    Returns:
        The problems found. Machine and accelerator checks are separate
        (:mod:`vertex_retrain.specs.hardware_rules`).
    """
    path = f"{spec_path}.workerPoolSpecs"
    if not isinstance(pools, list) or not pools:
        return [
            error(
                path,
                pools,
                "A job needs at least the primary worker pool.",
                [f"{path}[0] with machineSpec, replicaCount 1 and a containerSpec"],
                code="pool-missing",
            )
        ]
    problems: list[Problem] = []
    if len(pools) > 4:
        problems.append(
            error(
                f"{path}[4]",
                len(pools),
                f"At most four worker pools, one per role: {_LAYOUT}.",
                [f"more replicas in {path}[1] instead of extra pools"],
                code="pool-count",
            )
        )
    if not mapping(pools[0]):
        problems.append(
            error(
                f"{path}[0]",
                pools[0],
                "The first pool is the primary replica and cannot be empty.",
                [f"move the first real pool to {path}[0]"],
                code="pool-order",
            )
        )
    for index, raw in enumerate(pools[:4]):
        pool = mapping(raw)
        if not pool:
            continue
        pool_path = f"{path}[{index}]"
        problems += _check_code(dict(pool), pool_path)
        replicas = pool.get("replicaCount", 1)
        count = as_int(replicas)
        if count is None or count < 1:
            problems.append(
                error(
                    f"{pool_path}.replicaCount",
                    replicas,
                    "replicaCount must be a positive integer.",
                    ["replicaCount 1"],
                    code="pool-replicas",
                )
            )
        elif index == 0 and count != 1:
            problems.append(
                error(
                    f"{pool_path}.replicaCount",
                    replicas,
                    "The primary pool runs exactly one replica (the chief).",
                    ["replicaCount 1", f"the other {count - 1} replica(s) in {path}[1] (workers)"],
                    code="primary-replicas",
                )
            )
        if is_reduction_server(pool) and index != 2:
            problems.append(
                error(
                    f"{pool_path}.containerSpec.imageUri",
                    mapping(pool.get("containerSpec")).get("imageUri"),
                    f"Pools are positional ({_LAYOUT}); the Reduction Server must be pool [2].",
                    [f"move this pool to {path}[2]"],
                    code="pool-order",
                )
            )
    problems += _check_role_two(pools, path)
    return problems


def _check_role_two(pools: Sequence[Any], path: str) -> list[Problem]:
    if len(pools) < 3 or not mapping(pools[2]):
        return []
    third = mapping(pools[2])
    workers = mapping(pools[1])  # there is a pool [2], so a pool [1]
    if not is_reduction_server(third):
        if not workers:
            return [
                error(
                    f"{path}[2]",
                    mapping(third.get("machineSpec")).get("machineType"),
                    f"Pool [2] holds parameter servers, which need workers in pool [1] "
                    f"({_LAYOUT}).",
                    [f"workers in {path}[1]", f"evaluators belong in {path}[3]"],
                    code="pool-order",
                ),
            ]
        return []
    problems: list[Problem] = []
    accelerator = mapping(third.get("machineSpec")).get("acceleratorType")
    if accelerator:  # any accelerator named, whatever its count
        problems.append(
            error(
                f"{path}[2].machineSpec.acceleratorType",
                accelerator,
                "The Reduction Server runs on CPUs only; GPUs there are wasted money.",
                ["remove acceleratorType and acceleratorCount", "machineType n1-highcpu-16"],
                code="reduction-server-gpu",
            )
        )
    if not gpu_count(workers):  # no workers, or CPU workers
        problems.append(
            error(
                f"{path}[1]",
                mapping(workers.get("machineSpec")).get("machineType"),
                "A Reduction Server reduces gradients of GPU workers; pool [1] has no GPU workers.",
                [
                    f"GPU workers in {path}[1], e.g. n1-standard-16 with 2 × NVIDIA_TESLA_V100",
                    f"remove {path}[2] (the Reduction Server)",
                ],
                code="reduction-server-workers",
            )
        )
    return problems


__all__ = ["REDUCTION_SERVER_IMAGE", "ROLES", "check_pool_structure", "gpu_count", "replica_count"]

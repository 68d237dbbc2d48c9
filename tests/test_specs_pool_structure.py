"""The worker-pool structure rules in words and at their limits: pool count and order, replica
counts, the code a pool runs, parameter servers and the Reduction Server; and the counts other
rules read from a pool (replicas, GPUs)."""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.specs.pool_rules import check_pool_structure, gpu_count, replica_count
from vertex_retrain.specs.problems import Problem

POOLS = "jobSpec.workerPoolSpecs"
LAYOUT = "[0] primary, [1] workers, [2] parameter servers or Reduction Server, [3] evaluators"
RS_IMAGE = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
V100 = {"acceleratorType": "NVIDIA_TESLA_V100", "acceleratorCount": 2}


def _pool(
    machine: str = "n1-standard-4", replicas: Any = None, image: str = "gcr.io/p/i:1", **spec: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "machineSpec": {"machineType": machine, **spec},
        "containerSpec": {"imageUri": image},
    }
    if replicas is not None:
        out["replicaCount"] = replicas
    return out


def _error(field: str, value: Any, message: str, *alternatives: str, code: str) -> Problem:
    return Problem("error", f"{POOLS}{field}", value, message, alternatives, code)


def _problems(pools: Any) -> list[Problem]:
    return check_pool_structure(pools, "jobSpec")


@pytest.mark.parametrize(
    ("pool", "replicas"),
    [
        ({}, 0),
        (None, 0),
        ({"machineSpec": {}}, 1),  # no count: one replica
        ({"replicaCount": "3"}, 3),
        ({"replicaCount": "many"}, 0),
        ({"replicaCount": 0}, 0),
    ],
)
def test_replica_count_reads_a_pool(pool: Any, replicas: int) -> None:
    assert replica_count(pool) == replicas


@pytest.mark.parametrize(
    ("spec", "gpus"),
    [
        (None, 0),
        ({"acceleratorCount": 2}, 0),  # no type
        ({"acceleratorType": 3, "acceleratorCount": 2}, 0),
        ({"acceleratorType": "TPU_V3", "acceleratorCount": 8}, 0),
        ({"acceleratorType": "NVIDIA_TESLA_T4"}, 0),  # no count
        ({"acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": "2"}, 2),
        ({"acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": "two"}, 0),
    ],
)
def test_gpu_count_reads_nvidia_gpus_only(spec: Any, gpus: int) -> None:
    assert gpu_count({"machineSpec": spec}) == gpus


@pytest.mark.parametrize("pools", [None, {}, []])
def test_check_pool_structure_without_pools_in_words(pools: Any) -> None:
    assert _problems(pools) == [
        _error(
            "",
            pools,
            "A job needs at least the primary worker pool.",
            f"{POOLS}[0] with machineSpec, replicaCount 1 and a containerSpec",
            code="pool-missing",
        )
    ]


def test_check_pool_structure_takes_four_pools() -> None:
    assert _problems([_pool(), _pool(), _pool(), _pool()]) == []


def test_check_pool_structure_refuses_a_fifth_pool_and_reads_only_four() -> None:
    # The fifth pool is only counted: its own faults would be noise once it has to go.
    assert _problems([_pool(), _pool(), _pool(), _pool(), {"replicaCount": 0}]) == [
        _error(
            "[4]",
            5,
            f"At most four worker pools, one per role: {LAYOUT}.",
            f"more replicas in {POOLS}[1] instead of extra pools",
            code="pool-count",
        )
    ]


def test_check_pool_structure_empty_primary_in_words() -> None:
    assert _problems([{}, _pool()]) == [
        _error(
            "[0]",
            {},
            "The first pool is the primary replica and cannot be empty.",
            f"move the first real pool to {POOLS}[0]",
            code="pool-order",
        )
    ]


@pytest.mark.parametrize(
    "code", [{}, {"containerSpec": {"imageUri": "i"}, "pythonPackageSpec": {}}]
)
def test_check_pool_structure_pool_runs_one_kind_of_code_in_words(code: dict[str, Any]) -> None:
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, **code}
    assert _problems([pool]) == [
        _error(
            "[0]",
            sorted(pool),
            "A worker pool runs exactly one of containerSpec or pythonPackageSpec.",
            "containerSpec {imageUri, command, args, env}",
            "pythonPackageSpec {executorImageUri, packageUris, pythonModule, args}",
            code="pool-code",
        )
    ]


@pytest.mark.parametrize("image", [None, ""])
def test_check_pool_structure_container_without_image_in_words(image: str | None) -> None:
    container = {} if image is None else {"imageUri": image}
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, "containerSpec": container}
    assert _problems([pool]) == [
        _error(
            "[0].containerSpec.imageUri",
            image,
            "A container pool needs an image URI.",
            "REGION-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE@sha256:DIGEST (build-image)",
            code="pool-code",
        )
    ]


@pytest.mark.parametrize("uris", [None, "gs://b/p.tar.gz", []])
def test_check_pool_structure_package_without_module_or_uris_in_words(uris: Any) -> None:
    package: dict[str, Any] = {"executorImageUri": "gcr.io/p/i:1", "pythonModule": ""}
    if uris is not None:
        package["packageUris"] = uris
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, "pythonPackageSpec": package}
    assert _problems([pool]) == [
        _error(
            "[0].pythonPackageSpec.pythonModule",
            "",
            "A Python-package pool needs pythonModule.",
            "mypackage.task",
            code="pool-code",
        ),
        _error(
            "[0].pythonPackageSpec.packageUris",
            uris,
            "packageUris must list 1 to 100 Cloud Storage URIs of packages.",
            "[gs://BUCKET/trainer-0.1.tar.gz]",
            code="pool-code",
        ),
    ]


def test_check_pool_structure_complete_package_pool_passes() -> None:
    package = {
        "executorImageUri": "gcr.io/p/i:1",
        "pythonModule": "trainer.task",
        "packageUris": ["gs://b/p.tar.gz"],
    }
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, "pythonPackageSpec": package}
    assert _problems([pool]) == []


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("replicas", ["abc", 0, -1, None])
def test_check_pool_structure_replica_count_is_a_positive_integer(
    index: int, replicas: Any
) -> None:
    pools = [_pool(), _pool()]
    pools[index]["replicaCount"] = replicas
    assert _problems(pools) == [
        _error(
            f"[{index}].replicaCount",
            replicas,
            "replicaCount must be a positive integer.",
            "replicaCount 1",
            code="pool-replicas",
        )
    ]


@pytest.mark.parametrize("replicas", [1, "1"])
def test_check_pool_structure_one_primary_replica_passes(replicas: Any) -> None:
    assert _problems([_pool(replicas=replicas), _pool(replicas=3)]) == []


@pytest.mark.parametrize(("replicas", "others"), [(2, 1), ("3", 2)])
def test_check_pool_structure_primary_of_several_replicas_in_words(
    replicas: Any, others: int
) -> None:
    assert _problems([_pool(replicas=replicas)]) == [
        _error(
            "[0].replicaCount",
            replicas,
            "The primary pool runs exactly one replica (the chief).",
            "replicaCount 1",
            f"the other {others} replica(s) in {POOLS}[1] (workers)",
            code="primary-replicas",
        )
    ]


@pytest.mark.parametrize("index", [0, 1, 3])
def test_check_pool_structure_reduction_server_outside_pool_two_in_words(index: int) -> None:
    pools = [_pool(), _pool(**V100), {}, _pool()]
    pools[index] = _pool("n1-highcpu-16", image=RS_IMAGE)
    assert _problems(pools) == [
        _error(
            f"[{index}].containerSpec.imageUri",
            RS_IMAGE,
            f"Pools are positional ({LAYOUT}); the Reduction Server must be pool [2].",
            f"move this pool to {POOLS}[2]",
            code="pool-order",
        )
    ]


def test_check_pool_structure_reduction_server_in_pool_two_with_gpu_workers_passes() -> None:
    assert _problems([_pool(), _pool(**V100), _pool("n1-highcpu-16", image=RS_IMAGE)]) == []


@pytest.mark.parametrize("third", [{}, _pool("n1-highmem-8")])
def test_check_pool_structure_parameter_servers_with_workers_pass(third: dict[str, Any]) -> None:
    assert _problems([_pool(), _pool(replicas=2), third]) == []


def test_check_pool_structure_parameter_servers_without_workers_in_words() -> None:
    assert _problems([_pool(), {}, _pool("n1-highmem-8")]) == [
        _error(
            "[2]",
            "n1-highmem-8",
            f"Pool [2] holds parameter servers, which need workers in pool [1] ({LAYOUT}).",
            f"workers in {POOLS}[1]",
            f"evaluators belong in {POOLS}[3]",
            code="pool-order",
        )
    ]


def _rs_gpu_error(accelerator: str) -> Problem:
    return _error(
        "[2].machineSpec.acceleratorType",
        accelerator,
        "The Reduction Server runs on CPUs only; GPUs there are wasted money.",
        "remove acceleratorType and acceleratorCount",
        "machineType n1-highcpu-16",
        code="reduction-server-gpu",
    )


def _rs_workers_error(machine: str | None) -> Problem:
    return _error(
        "[1]",
        machine,
        "A Reduction Server reduces gradients of GPU workers; pool [1] has no GPU workers.",
        f"GPU workers in {POOLS}[1], e.g. n1-standard-16 with 2 × NVIDIA_TESLA_V100",
        f"remove {POOLS}[2] (the Reduction Server)",
        code="reduction-server-workers",
    )


@pytest.mark.parametrize(
    ("gpus", "problems"),
    [
        (
            {"acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
            [_rs_gpu_error("NVIDIA_TESLA_T4")],
        ),
        ({"acceleratorType": "NVIDIA_TESLA_T4"}, [_rs_gpu_error("NVIDIA_TESLA_T4")]),  # no count
        ({"acceleratorCount": 1}, []),  # no type: the hardware rules refuse it
    ],
)
def test_check_pool_structure_reduction_server_runs_on_cpus(
    gpus: dict[str, Any], problems: list[Problem]
) -> None:
    pools = [_pool(), _pool(**V100), _pool("n1-highcpu-16", image=RS_IMAGE, **gpus)]
    assert _problems(pools) == problems


@pytest.mark.parametrize(
    ("workers", "machine"), [({}, None), (_pool("n1-standard-16", replicas=2), "n1-standard-16")]
)
def test_check_pool_structure_reduction_server_needs_gpu_workers(
    workers: dict[str, Any], machine: str | None
) -> None:
    pools = [_pool(), workers, _pool("n1-highcpu-16", image=RS_IMAGE)]
    assert _problems(pools) == [_rs_workers_error(machine)]

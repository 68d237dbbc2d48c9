"""Table-driven validation cases: impossible configurations refused, valid ones accepted.

Cases come from the Vertex docs (machine / GPU / TPU tables, worker-pool roles, scheduling,
tuning) and from the source article (T4 × 3, n1-standard-32 with 2 V100s, TPU one pool / one
replica, Reduction Server in pool [2], ...). Every payload here is REST JSON.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from vertex_retrain.specs import check_payload_parses, validate_custom_job, validate_tuning_job
from vertex_retrain.specs.problems import errors_of

TODAY = dt.date(2026, 11, 29)
GPU_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
CPU_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-cpu.2-4.py310:latest"
# These tests are about the other rules, on prebuilt images that Google serves: every
# training image of the shipped catalog has ended, which test_specs_executor_images tests.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")
RS_IMAGE = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"


def pool(
    machine: str,
    acc: str | None = None,
    count: int | None = None,
    *,
    replicas: int = 1,
    image: str = GPU_IMAGE,
    topology: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": machine}
    if acc:
        spec["acceleratorType"] = acc
    if count is not None:
        spec["acceleratorCount"] = count
    if topology:
        spec["tpuTopology"] = topology
    return {
        "machineSpec": spec,
        "replicaCount": str(replicas),
        "containerSpec": {"imageUri": image},
    }


def job(
    *pools: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"workerPoolSpecs": list(pools), **spec}
    out: dict[str, Any] = {"displayName": "case", "jobSpec": body}
    if labels:
        out["labels"] = labels
    return out


DDP = {"distribution": "ddp"}
GCS = {"outputUriPrefix": "gs://bucket/run"}
N1_T4 = pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)
TF_TPU_215 = "us-docker.pkg.dev/vertex-ai/training/tf-tpu.2-15.py310:latest"


def study(
    params: list[dict[str, Any]], algorithm: str | None = None, **counts: Any
) -> dict[str, Any]:

    spec: dict[str, Any] = {
        "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
        "parameters": params,
    }
    if algorithm:
        spec["algorithm"] = algorithm
    out: dict[str, Any] = {
        "displayName": "tune",
        "studySpec": spec,
        "maxTrialCount": 10,
        "parallelTrialCount": 2,
        "trialJobSpec": {"workerPoolSpecs": [N1_T4]},
    }
    out.update(counts)
    return out


LR = {
    "parameterId": "lr",
    "doubleValueSpec": {"minValue": 1e-4, "maxValue": 1e-1},
    "scaleType": "UNIT_LOG_SCALE",
}
OPT = {"parameterId": "optimizer", "categoricalValueSpec": {"values": ["adam", "sgd"]}}
LAYERS = {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "4"}}
BATCH = {"parameterId": "batch", "discreteValueSpec": {"values": [32, 64, 128]}}
MOMENTUM = {"parameterId": "momentum", "doubleValueSpec": {"minValue": 0.0, "maxValue": 0.99}}


def with_child(
    parent: dict[str, Any], key: str, values: list[Any], child: dict[str, Any]
) -> dict[str, Any]:
    out = copy.deepcopy(parent)
    out["conditionalParameterSpecs"] = [{key: {"values": values}, "parameterSpec": child}]
    return out


P0 = "jobSpec.workerPoolSpecs[0]"
M0 = f"{P0}.machineSpec"
S = "jobSpec.scheduling"

# (case id, payload, field path of the error, substring of one suggested alternative)
INVALID_CUSTOM: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "t4-x3",
        job(pool("n1-standard-8", "NVIDIA_TESLA_T4", 3)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 2",
    ),
    (
        "t4-x8",
        job(pool("n1-standard-8", "NVIDIA_TESLA_T4", 8)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 4",
    ),
    (
        "v100-x3",
        job(pool("n1-standard-8", "NVIDIA_TESLA_V100", 3)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 4",
    ),
    (
        "v100-x16",
        job(pool("n1-standard-8", "NVIDIA_TESLA_V100", 16)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 8",
    ),
    (
        "p4-x3",
        job(pool("n1-standard-8", "NVIDIA_TESLA_P4", 3)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 2",
    ),
    (
        "t4-on-a2",
        job(pool("a2-highgpu-1g", "NVIDIA_TESLA_T4", 1)),
        f"{M0}.acceleratorType",
        "acceleratorType NVIDIA_TESLA_A100",
    ),
    (
        "a100-on-n1",
        job(pool("n1-standard-8", "NVIDIA_TESLA_A100", 1)),
        f"{M0}.acceleratorType",
        "machineType a2-highgpu-1g",
    ),
    (
        "a100x2-on-n1",
        job(pool("n1-standard-16", "NVIDIA_TESLA_A100", 2)),
        f"{M0}.acceleratorType",
        "machineType a2-highgpu-2g",
    ),
    (
        "a100-80-on-n1",
        job(pool("n1-standard-8", "NVIDIA_A100_80GB", 1)),
        f"{M0}.acceleratorType",
        "machineType a2-ultragpu-1g",
    ),
    (
        "l4-on-n1",
        job(pool("n1-standard-8", "NVIDIA_L4", 1)),
        f"{M0}.acceleratorType",
        "machineType g2-standard-4",
    ),
    (
        "t4-on-n2",
        job(pool("n2-standard-8", "NVIDIA_TESLA_T4", 1)),
        f"{M0}.acceleratorType",
        "machineType n1-standard-4",
    ),
    (
        "t4-on-e2",
        job(pool("e2-standard-4", "NVIDIA_TESLA_T4", 1)),
        f"{M0}.acceleratorType",
        "machineType n1-standard-4",
    ),
    (
        "v100-on-c2",
        job(pool("c2-standard-8", "NVIDIA_TESLA_V100", 2)),
        f"{M0}.acceleratorType",
        "machineType n1-standard-4",
    ),
    (
        "h100-on-n1",
        job(pool("n1-standard-96", "NVIDIA_H100_80GB", 8)),
        f"{M0}.acceleratorType",
        "machineType a3-highgpu-8g",
    ),
    (
        "n1-32-2xv100",
        job(pool("n1-standard-32", "NVIDIA_TESLA_V100", 2), labels=DDP),
        f"{M0}.machineType",
        "acceleratorCount 4",
    ),
    (
        "n1-32-2xv100-smaller",
        job(pool("n1-standard-32", "NVIDIA_TESLA_V100", 2), labels=DDP),
        f"{M0}.machineType",
        "n1-standard-16 or smaller",
    ),
    (
        "n1-64-1xt4",
        job(pool("n1-standard-64", "NVIDIA_TESLA_T4", 1)),
        f"{M0}.machineType",
        "acceleratorCount 4",
    ),
    (
        "n1-64-1xt4-smaller",
        job(pool("n1-standard-64", "NVIDIA_TESLA_T4", 1)),
        f"{M0}.machineType",
        "n1-standard-32 or smaller",
    ),
    (
        "n1-16-1xv100",
        job(pool("n1-standard-16", "NVIDIA_TESLA_V100", 1)),
        f"{M0}.machineType",
        "n1-standard-8 or smaller",
    ),
    (
        "n1-highmem-16-1xv100",
        job(pool("n1-highmem-16", "NVIDIA_TESLA_V100", 1)),
        f"{M0}.machineType",
        "acceleratorCount 2",
    ),
    (
        "p100-retired",
        job(pool("n1-standard-8", "NVIDIA_TESLA_P100", 1)),
        f"{M0}.acceleratorType",
        "acceleratorType NVIDIA_TESLA_T4",
    ),
    (
        "k80-retired",
        job(pool("n1-standard-8", "NVIDIA_TESLA_K80", 1)),
        f"{M0}.acceleratorType",
        "acceleratorType NVIDIA_TESLA_V100",
    ),
    (
        "a2-2g-count-1",
        job(pool("a2-highgpu-2g", "NVIDIA_TESLA_A100", 1)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 2",
    ),
    (
        "a2-missing-gpu",
        job(pool("a2-highgpu-1g")),
        f"{M0}.acceleratorType",
        "acceleratorType NVIDIA_TESLA_A100 with acceleratorCount 1",
    ),
    (
        "h200-on-a3-high",
        job(pool("a3-highgpu-8g", "NVIDIA_H200_141GB", 8), labels=DDP),
        f"{M0}.acceleratorType",
        "machineType a3-ultragpu-8g",
    ),
    (
        "b200-count-4",
        job(pool("a4-highgpu-8g", "NVIDIA_B200", 4), labels=DDP),
        f"{M0}.acceleratorCount",
        "acceleratorCount 8",
    ),
    (
        "mega-wrong-h100",
        job(pool("a3-megagpu-8g", "NVIDIA_H100_80GB", 8), labels=DDP),
        f"{M0}.acceleratorType",
        "acceleratorType NVIDIA_H100_MEGA_80GB",
    ),
    (
        "g2-24-one-l4",
        job(pool("g2-standard-24", "NVIDIA_L4", 1)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 2",
    ),
    ("typo-machine", job(pool("n1-standrd-8")), f"{M0}.machineType", "n1-standard-8"),
    (
        "typo-accelerator",
        job(pool("n1-standard-8", "NVIDIA_TESLA_T5", 1)),
        f"{M0}.acceleratorType",
        "NVIDIA_TESLA_T4",
    ),
    (
        "count-without-type",
        job(pool("n1-standard-8", None, 1)),
        f"{M0}.acceleratorType",
        "acceleratorType NVIDIA_TESLA_T4 with acceleratorCount 1",
    ),
    (
        "tpu-v3-16-cores",
        job(pool("cloud-tpu", "TPU_V3", 16)),
        f"{M0}.acceleratorCount",
        "acceleratorCount 32",
    ),
    (
        "cloud-tpu-no-type",
        job(pool("cloud-tpu", None, 8)),
        f"{M0}.acceleratorType",
        "acceleratorType TPU_V2",
    ),
    (
        "tpu-on-n1",
        job(pool("n1-standard-8", "TPU_V3", 8)),
        f"{M0}.acceleratorType",
        "machineType cloud-tpu",
    ),
    (
        "v5e-1t-2x2",
        job(pool("ct5lp-hightpu-1t", topology="2x2", image=TF_TPU_215)),
        f"{M0}.tpuTopology",
        "tpuTopology 1x1",
    ),
    (
        "v5e-4t-3x3",
        job(pool("ct5lp-hightpu-4t", topology="3x3", image=TF_TPU_215)),
        f"{M0}.tpuTopology",
        "tpuTopology 2x2",
    ),
    ("v6e-no-topology", job(pool("ct6e-standard-4t")), f"{M0}.tpuTopology", "tpuTopology 2x2"),
    (
        "v5e-wrong-type",
        job(pool("ct5lp-hightpu-4t", "TPU_V2", topology="2x2", image=TF_TPU_215)),
        f"{M0}.acceleratorType",
        "acceleratorType TPU_V5_LITEPOD",
    ),
    (
        "tpu7x-bad-topology",
        job(pool("tpu7x-standard-4t", topology="2x2")),
        f"{M0}.tpuTopology",
        "tpuTopology 2x2x1",
    ),
    (
        "topology-on-gpu",
        job(pool("n1-standard-8", "NVIDIA_TESLA_T4", 1, topology="2x2")),
        f"{M0}.tpuTopology",
        "remove tpuTopology",
    ),
    (
        "tpu-two-pools",
        job(pool("cloud-tpu", "TPU_V2", 8), pool("cloud-tpu", "TPU_V2", 8)),
        "jobSpec.workerPoolSpecs[1]",
        "remove jobSpec.workerPoolSpecs[1]",
    ),
    (
        "tpu-two-replicas",
        job(pool("ct5lp-hightpu-4t", topology="2x2", replicas=2, image=TF_TPU_215)),
        f"{P0}.replicaCount",
        "replicaCount 1",
    ),
    (
        "spot-tpu-pod-v3",
        job(
            pool("cloud-tpu", "TPU_V3", 32),
            scheduling={"strategy": "SPOT"},
            baseOutputDirectory=GCS,
        ),
        f"{S}.strategy",
        "strategy STANDARD",
    ),
    (
        "spot-tpu-pod-v5e",
        job(
            pool("ct5lp-hightpu-4t", topology="4x4", image=TF_TPU_215),
            scheduling={"strategy": "SPOT"},
            baseOutputDirectory=GCS,
        ),
        f"{S}.strategy",
        "tpuTopology 2x2",
    ),
    (
        "tpu7x-python-310",
        job(
            pool(
                "tpu7x-standard-4t",
                topology="2x2x1",
                image="us-docker.pkg.dev/p/r/jax-tpu.0-4.py310:1",
            )
        ),
        f"{P0}.containerSpec.imageUri",
        "Python 3.12",
    ),
    (
        "v6e-python-39",
        job(pool("ct6e-standard-1t", topology="1x1", image="gcr.io/p/trainer.py39:1")),
        f"{P0}.containerSpec.imageUri",
        "Python 3.10",
    ),
    (
        "v5e-tf-214",
        job(
            pool(
                "ct5lp-hightpu-4t",
                topology="2x2",
                image="us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
            )
        ),
        f"{P0}.containerSpec.imageUri",
        "tensorflow 2.15",
    ),
    (
        "primary-2-replicas",
        job(pool("n1-standard-8", replicas=2, image=CPU_IMAGE), labels=DDP),
        f"{P0}.replicaCount",
        "replicaCount 1",
    ),
    (
        "five-pools",
        job(*[pool("n1-standard-8", image=CPU_IMAGE)] * 5, labels=DDP),
        "jobSpec.workerPoolSpecs[4]",
        "more replicas in jobSpec.workerPoolSpecs[1]",
    ),
    (
        "empty-primary",
        job({}, pool("n1-standard-8", image=CPU_IMAGE)),
        "jobSpec.workerPoolSpecs[0]",
        "move the first real pool",
    ),
    ("no-pools", job(), "jobSpec.workerPoolSpecs", "jobSpec.workerPoolSpecs[0]"),
    (
        "rs-in-pool-1",
        job(N1_T4, pool("n1-highcpu-16", image=RS_IMAGE)),
        "jobSpec.workerPoolSpecs[1].containerSpec.imageUri",
        "move this pool to jobSpec.workerPoolSpecs[2]",
    ),
    (
        "rs-with-gpu",
        job(
            N1_T4,
            pool("n1-standard-8", "NVIDIA_TESLA_T4", 1, replicas=2),
            pool("n1-standard-8", "NVIDIA_TESLA_T4", 1, image=RS_IMAGE),
        ),
        "jobSpec.workerPoolSpecs[2].machineSpec.acceleratorType",
        "machineType n1-highcpu-16",
    ),
    (
        "rs-without-gpu-workers",
        job(
            N1_T4,
            pool("n1-standard-8", replicas=2, image=CPU_IMAGE),
            pool("n1-highcpu-16", image=RS_IMAGE),
        ),
        "jobSpec.workerPoolSpecs[1]",
        "GPU workers in jobSpec.workerPoolSpecs[1]",
    ),
    (
        "ps-without-workers",
        job(pool("n1-standard-8", image=CPU_IMAGE), {}, pool("n1-standard-8", image=CPU_IMAGE)),
        "jobSpec.workerPoolSpecs[2]",
        "workers in jobSpec.workerPoolSpecs[1]",
    ),
    (
        "max-wait-with-spot",
        job(
            N1_T4,
            scheduling={"strategy": "SPOT", "maxWaitDuration": "1800s"},
            baseOutputDirectory=GCS,
        ),
        f"{S}.maxWaitDuration",
        "strategy FLEX_START",
    ),
    (
        "max-wait-no-strategy",
        job(N1_T4, scheduling={"maxWaitDuration": "1800s"}),
        f"{S}.maxWaitDuration",
        "remove maxWaitDuration",
    ),
    ("timeout-not-duration", job(N1_T4, scheduling={"timeout": "1h"}), f"{S}.timeout", '"3600s"'),
    (
        "unknown-strategy",
        job(N1_T4, scheduling={"strategy": "PREEMPTIBLE"}),
        f"{S}.strategy",
        "strategy SPOT",
    ),
    (
        "both-code-specs",
        job({**N1_T4, "pythonPackageSpec": {"executorImageUri": GPU_IMAGE}}),
        P0,
        "containerSpec",
    ),
    (
        "package-no-module",
        job(
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": "1",
                "pythonPackageSpec": {
                    "executorImageUri": CPU_IMAGE,
                    "packageUris": ["gs://b/t.tar.gz"],
                },
            }
        ),
        f"{P0}.pythonPackageSpec.pythonModule",
        "mypackage.task",
    ),
    (
        "output-not-gcs",
        job(N1_T4, baseOutputDirectory={"outputUriPrefix": "/tmp/out"}),
        "jobSpec.baseOutputDirectory.outputUriPrefix",
        "gs://BUCKET",
    ),
    ("label-uppercase", job(N1_T4, labels={"Team": "ML"}), "labels.Team", "team=ml"),
    (
        "unknown-distribution",
        job(N1_T4, labels={"distribution": "horovod"}),
        "labels.distribution",
        "ddp",
    ),
    ("no-display-name", {"jobSpec": {"workerPoolSpecs": [N1_T4]}}, "displayName", "displayName"),
]

T0 = "studySpec.parameters[0]"
INVALID_TUNING: list[tuple[str, dict[str, Any], str, str]] = [
    ("grid-over-double", study([LR], "GRID_SEARCH"), f"{T0}.doubleValueSpec", "discreteValueSpec"),
    (
        "grid-over-double-random",
        study([LR], "GRID_SEARCH"),
        f"{T0}.doubleValueSpec",
        "algorithm RANDOM_SEARCH",
    ),
    (
        "conditional-missing-category",
        study([with_child(OPT, "parentCategoricalValues", ["rmsprop"], MOMENTUM)]),
        f"{T0}.conditionalParameterSpecs[0].parentCategoricalValues.values",
        "sgd",
    ),
    (
        "conditional-int-out-of-range",
        study([with_child(LAYERS, "parentIntValues", ["7"], MOMENTUM)]),
        f"{T0}.conditionalParameterSpecs[0].parentIntValues.values",
        "an integer in [1, 4]",
    ),
    (
        "conditional-missing-discrete",
        study([with_child(BATCH, "parentDiscreteValues", [48], MOMENTUM)]),
        f"{T0}.conditionalParameterSpecs[0].parentDiscreteValues.values",
        "64",
    ),
    (
        "conditional-under-double",
        study([with_child(LR, "parentDiscreteValues", [0.1], MOMENTUM)]),
        f"{T0}.conditionalParameterSpecs[0]",
        "make the parent a discreteValueSpec",
    ),
    (
        "conditional-wrong-key",
        study([with_child(OPT, "parentIntValues", ["1"], MOMENTUM)]),
        f"{T0}.conditionalParameterSpecs[0]",
        "parentCategoricalValues",
    ),
    (
        "parallel-over-max",
        study([LR], maxTrialCount=10, parallelTrialCount=20),
        "parallelTrialCount",
        "parallelTrialCount 10 or fewer",
    ),
    (
        "bad-goal",
        {
            **study([LR]),
            "studySpec": {"metrics": [{"metricId": "acc", "goal": "UP"}], "parameters": [LR]},
        },
        "studySpec.metrics[0].goal",
        "MAXIMIZE",
    ),
    (
        "log-scale-from-zero",
        study([{**LR, "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]),
        f"{T0}.doubleValueSpec.minValue",
        "minValue 1e-05",
    ),
    (
        "discrete-unsorted",
        study([{"parameterId": "b", "discreteValueSpec": {"values": [64, 16, 32]}}]),
        f"{T0}.discreteValueSpec.values",
        "[16.0, 32.0, 64.0]",
    ),
    ("duplicate-ids", study([LR, LR]), "studySpec.parameters[1].parameterId", "lr_2"),
    (
        "min-above-max",
        study([{"parameterId": "x", "doubleValueSpec": {"minValue": 2.0, "maxValue": 1.0}}]),
        f"{T0}.doubleValueSpec.minValue",
        "minValue 1.0, maxValue 2.0",
    ),
    (
        "algorithm-name",
        study([LR], "BAYESIAN"),
        "studySpec.algorithm",
        "leave unset for Bayesian optimisation",
    ),
    (
        "missing-max-trials",
        {k: v for k, v in study([LR]).items() if k != "maxTrialCount"},
        "maxTrialCount",
        "maxTrialCount 10",
    ),
    (
        "trial-job-t4-x3",
        {
            **study([LR]),
            "trialJobSpec": {"workerPoolSpecs": [pool("n1-standard-8", "NVIDIA_TESLA_T4", 3)]},
        },
        "trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount",
        "acceleratorCount 4",
    ),
]


@pytest.mark.parametrize(
    ("case", "payload", "field", "alternative"), INVALID_CUSTOM, ids=[c[0] for c in INVALID_CUSTOM]
)
def test_validate_custom_job_refuses_invalid_config(
    case: str, payload: dict[str, Any], field: str, alternative: str
) -> None:
    errors = errors_of(validate_custom_job(payload, today=TODAY))
    matching = [p for p in errors if p.field == field]
    assert matching, f"{case}: no error at {field}; got {[p.describe() for p in errors]}"
    described = " ".join(p.describe() for p in matching)
    assert alternative in described, f"{case}: {alternative!r} not suggested in {described}"


@pytest.mark.parametrize(
    ("case", "payload", "field", "alternative"), INVALID_TUNING, ids=[c[0] for c in INVALID_TUNING]
)
def test_validate_tuning_job_refuses_invalid_config(
    case: str, payload: dict[str, Any], field: str, alternative: str
) -> None:
    errors = errors_of(validate_tuning_job(payload, today=TODAY))
    matching = [p for p in errors if p.field == field]
    assert matching, f"{case}: no error at {field}; got {[p.describe() for p in errors]}"
    assert alternative in " ".join(p.describe() for p in matching)


def test_invalid_case_table_is_large_enough() -> None:
    assert len(INVALID_CUSTOM) + len(INVALID_TUNING) >= 40
    assert len(VALID_CUSTOM) + len(VALID_TUNING) >= 30


RS_JOB = job(
    pool("n1-standard-16", "NVIDIA_TESLA_T4", 2),
    pool("n1-standard-16", "NVIDIA_TESLA_T4", 2, replicas=3),
    pool("n1-highcpu-16", replicas=2, image=RS_IMAGE),
    baseOutputDirectory=GCS,
)
VALID_CUSTOM: list[tuple[str, dict[str, Any]]] = [
    ("cpu-n1-standard-4", job(pool("n1-standard-4", image=CPU_IMAGE))),
    ("cpu-e2", job(pool("e2-standard-4", image=CPU_IMAGE))),
    ("cpu-n2-highmem", job(pool("n2-highmem-8", image=CPU_IMAGE))),
    ("cpu-c2", job(pool("c2-standard-8", image=CPU_IMAGE))),
    ("t4-x1", job(N1_T4)),
    ("t4-x2", job(pool("n1-standard-16", "NVIDIA_TESLA_T4", 2), labels=DDP)),
    ("t4-x4", job(pool("n1-standard-32", "NVIDIA_TESLA_T4", 4), labels=DDP)),
    ("n1-64-4xt4", job(pool("n1-standard-64", "NVIDIA_TESLA_T4", 4), labels=DDP)),
    ("v100-x1", job(pool("n1-standard-8", "NVIDIA_TESLA_V100", 1))),
    ("v100-x2", job(pool("n1-standard-16", "NVIDIA_TESLA_V100", 2), labels=DDP)),
    ("n1-32-4xv100", job(pool("n1-standard-32", "NVIDIA_TESLA_V100", 4), labels=DDP)),
    ("v100-x8", job(pool("n1-standard-96", "NVIDIA_TESLA_V100", 8), labels=DDP)),
    ("p4-x1", job(pool("n1-highmem-8", "NVIDIA_TESLA_P4", 1))),
    ("a100-1g", job(pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1))),
    ("a100-8g", job(pool("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8), labels=DDP)),
    ("a100-mega", job(pool("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16), labels=DDP)),
    ("a100-80gb", job(pool("a2-ultragpu-1g", "NVIDIA_A100_80GB", 1))),
    ("l4-g2-4", job(pool("g2-standard-4", "NVIDIA_L4", 1))),
    ("l4-g2-48", job(pool("g2-standard-48", "NVIDIA_L4", 4), labels=DDP)),
    ("h100-a3", job(pool("a3-highgpu-8g", "NVIDIA_H100_80GB", 8), labels=DDP)),
    ("h100-mega", job(pool("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8), labels=DDP)),
    ("h200", job(pool("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8), labels=DDP)),
    ("b200", job(pool("a4-highgpu-8g", "NVIDIA_B200", 8), labels=DDP)),
    ("tpu-v2-8", job(pool("cloud-tpu", "TPU_V2", 8, image=TF_TPU_215))),
    (
        "tpu-v3-pod-32",
        job(pool("cloud-tpu", "TPU_V3", 32, image=TF_TPU_215), scheduling={"strategy": "STANDARD"}),
    ),
    (
        "v5e-1t-spot",
        job(
            pool("ct5lp-hightpu-1t", topology="1x1", image=TF_TPU_215),
            scheduling={"strategy": "SPOT"},
            baseOutputDirectory=GCS,
        ),
    ),
    (
        "v5e-4t-typed",
        job(pool("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", topology="2x2", image=TF_TPU_215)),
    ),
    ("v5e-4t-4x4", job(pool("ct5lp-hightpu-4t", topology="4x4", image=TF_TPU_215))),
    ("v5e-8t", job(pool("ct5lp-hightpu-8t", topology="2x4", image=TF_TPU_215))),
    ("v6e-4t", job(pool("ct6e-standard-4t", topology="2x2", image="gcr.io/p/jax-trainer.py311:1"))),
    (
        "tpu7x",
        job(pool("tpu7x-standard-4t", topology="2x2x1", image="gcr.io/p/jax-trainer.py312:1")),
    ),
    ("reduction-server", RS_JOB),
    (
        "parameter-servers",
        job(
            pool("n1-standard-8", image=CPU_IMAGE),
            pool("n1-standard-8", replicas=4, image=CPU_IMAGE),
            pool("n1-highmem-8", replicas=2, image=CPU_IMAGE),
            pool("n1-standard-4", image=CPU_IMAGE),
            labels={"distribution": "parameter_server"},
        ),
    ),
    (
        "evaluator-only",
        job(
            pool("n1-standard-8", image=CPU_IMAGE),
            {},
            {},
            pool("n1-standard-4", image=CPU_IMAGE),
            labels={"distribution": "multi_worker_mirrored"},
        ),
    ),
    (
        "flex-start",
        job(
            pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1),
            scheduling={"strategy": "FLEX_START", "maxWaitDuration": "7200s", "timeout": "86400s"},
        ),
    ),
    (
        "spot-with-output",
        job(
            N1_T4,
            scheduling={
                "strategy": "SPOT",
                "restartJobOnWorkerRestart": True,
                "disableRetries": False,
            },
            baseOutputDirectory=GCS,
        ),
    ),
    (
        "python-package",
        job(
            {
                "machineSpec": {
                    "machineType": "n1-standard-8",
                    "acceleratorType": "NVIDIA_TESLA_T4",
                    "acceleratorCount": 1,
                },
                "replicaCount": "1",
                "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
                "pythonPackageSpec": {
                    "executorImageUri": GPU_IMAGE,
                    "packageUris": ["gs://b/trainer-0.1.tar.gz"],
                    "pythonModule": "trainer.task",
                    "args": ["--epochs=3"],
                },
            }
        ),
    ),
    (
        "torchrun-declared",
        job(
            pool("n1-standard-16", "NVIDIA_TESLA_T4", 2)
            | {
                "containerSpec": {
                    "imageUri": GPU_IMAGE,
                    "command": ["torchrun", "--nproc_per_node=2", "train.py"],
                }
            }
        ),
    ),
    (
        "reservation",
        job(
            {
                **N1_T4,
                "machineSpec": {
                    **N1_T4["machineSpec"],
                    "reservationAffinity": {"reservationAffinityType": "ANY_RESERVATION"},
                },
            }
        ),
    ),
]

VALID_TUNING: list[tuple[str, dict[str, Any]]] = [
    (
        "bayesian-conditional",
        study(
            [
                LR,
                with_child(OPT, "parentCategoricalValues", ["sgd"], MOMENTUM),
                with_child(
                    LAYERS,
                    "parentIntValues",
                    ["3", "4"],
                    {
                        "parameterId": "width",
                        "integerValueSpec": {"minValue": "32", "maxValue": "256"},
                    },
                ),
            ]
        ),
    ),
    (
        "grid-discrete",
        study([BATCH, OPT, LAYERS], "GRID_SEARCH", maxTrialCount=24, parallelTrialCount=4),
    ),
    (
        "random-spot-trials",
        {
            **study([LR, BATCH], "RANDOM_SEARCH", maxFailedTrialCount=3),
            "trialJobSpec": {
                "workerPoolSpecs": [N1_T4],
                "scheduling": {"strategy": "SPOT"},
                "baseOutputDirectory": GCS,
            },
        },
    ),
    (
        "measurement-selection",
        {
            **study([LR]),
            "studySpec": {
                **study([LR])["studySpec"],
                "measurementSelectionType": "BEST_MEASUREMENT",
            },
        },
    ),
]


@pytest.mark.parametrize(("case", "payload"), VALID_CUSTOM, ids=[c[0] for c in VALID_CUSTOM])
def test_validate_custom_job_accepts_valid_config(
    case: str, payload: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    if case == "python-package":  # the shipped catalog's prebuilt images have all ended
        request.getfixturevalue("catalog_still_serving")
    problems = validate_custom_job(payload, today=TODAY)
    assert not errors_of(problems), [p.describe() for p in problems]
    check_payload_parses(payload, "custom_job")


@pytest.mark.parametrize(("case", "payload"), VALID_TUNING, ids=[c[0] for c in VALID_TUNING])
def test_validate_tuning_job_accepts_valid_config(case: str, payload: dict[str, Any]) -> None:
    problems = validate_tuning_job(payload, today=TODAY)
    assert not errors_of(problems), [p.describe() for p in problems]
    check_payload_parses(payload, "tuning_job")

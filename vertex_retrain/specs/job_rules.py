"""Rules for a whole CustomJobSpec: scheduling, outputs, labels and the soft pitfalls.

:func:`check_job_spec` is the single entry point for a job-spec body; CustomJobs validate
``jobSpec`` with it and tuning jobs validate ``trialJobSpec`` with it.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from vertex_retrain.specs.hardware_rules import check_machine_spec
from vertex_retrain.specs.image_rules import (
    check_gpu_image,
    check_tpu_image,
    is_reduction_server,
    pool_args,
    pool_env,
)
from vertex_retrain.specs.machine_catalog import Catalog
from vertex_retrain.specs.payload_io import mapping, parse_duration
from vertex_retrain.specs.pool_rules import check_pool_structure, gpu_count, replica_count
from vertex_retrain.specs.problems import Problem, error, warning
from vertex_retrain.specs.tpu_rules import check_tpu_pools

STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")
_DEPRECATED_STRATEGIES = {"ON_DEMAND": "STANDARD", "LOW_COST": "SPOT"}
Distribution = Literal[
    "ddp",
    "mirrored",
    "multi_worker_mirrored",
    "parameter_server",
    "reduction_server",
    "model_parallel",
]
"""How a job's replicas share the work (the ``distribution`` label)."""
DISTRIBUTIONS: tuple[str, ...] = get_args(Distribution)
DISTRIBUTION_LABEL = "distribution"
_LAUNCHERS = ("torchrun", "torch.distributed", "--distributed", "accelerate launch", "deepspeed")
_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")


def check_labels(labels: Any, path: str) -> list[Problem]:
    """Checks label keys and values against the Vertex label syntax."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [error(path, labels, "labels must be a map of strings.", code="labels")]
    problems = []
    for key, value in labels.items():
        # fullmatch: with match, `$` also matches before a final newline ('ml\n').
        if not _LABEL_KEY.fullmatch(str(key)) or not _LABEL_VALUE.fullmatch(str(value)):
            problems.append(
                error(
                    f"{path}.{key}",
                    value,
                    "Label keys start with a lowercase letter; keys and values use only "
                    "lowercase letters, digits, '_' and '-' (at most 63 characters).",
                    [
                        f"{re.sub(r'[^a-z0-9_-]', '_', str(key).lower())}="
                        f"{re.sub(r'[^a-z0-9_-]', '_', str(value).lower())}"
                    ],
                    code="labels",
                )
            )
    if DISTRIBUTION_LABEL in labels and labels[DISTRIBUTION_LABEL] not in DISTRIBUTIONS:
        problems.append(
            error(
                f"{path}.{DISTRIBUTION_LABEL}",
                labels[DISTRIBUTION_LABEL],
                "Unknown distributed-training setup.",
                list(DISTRIBUTIONS),
                code="distribution",
            )
        )
    return problems


def _check_scheduling(scheduling: Any, path: str) -> list[Problem]:
    if scheduling is None:
        return []
    if not isinstance(scheduling, Mapping):
        return [error(path, scheduling, "scheduling must be an object.", code="type")]
    problems: list[Problem] = []
    strategy = scheduling.get("strategy")
    if strategy in _DEPRECATED_STRATEGIES:
        problems.append(
            warning(
                f"{path}.strategy",
                strategy,
                f"{strategy} is deprecated in the v1 API.",
                [f"strategy {_DEPRECATED_STRATEGIES[strategy]}"],
                code="strategy",
            )
        )
    elif strategy not in (None, "STRATEGY_UNSPECIFIED", *STRATEGIES):
        problems.append(
            error(
                f"{path}.strategy",
                strategy,
                "Unknown scheduling strategy.",
                [f"strategy {s}" for s in STRATEGIES],
                code="strategy",
            )
        )
    for key in ("timeout", "maxWaitDuration"):
        if key in scheduling and parse_duration(scheduling[key]) is None:
            problems.append(
                error(
                    f"{path}.{key}",
                    scheduling[key],
                    "Durations are strings of seconds with an 's' suffix.",
                    ['"3600s"', '"86400s"'],
                    code="duration",
                )
            )
    if "maxWaitDuration" in scheduling and strategy != "FLEX_START":
        problems.append(
            error(
                f"{path}.maxWaitDuration",
                scheduling["maxWaitDuration"],
                f"maxWaitDuration only applies to strategy FLEX_START (Dynamic Workload "
                f"Scheduler); the strategy is {strategy or 'unset (STANDARD)'}.",
                ["strategy FLEX_START", "remove maxWaitDuration"],
                code="max-wait-without-flex",
            )
        )
    for key in ("restartJobOnWorkerRestart", "disableRetries"):
        if key in scheduling and not isinstance(scheduling[key], bool):
            problems.append(
                error(
                    f"{path}.{key}",
                    scheduling[key],
                    "Must be true or false.",
                    ["true", "false"],
                    code="type",
                )
            )
    return problems


def declares_checkpoints(job_spec: Mapping[str, Any]) -> bool:
    """True when the job has somewhere to checkpoint.

    Accepted declarations: ``baseOutputDirectory.outputUriPrefix`` (Vertex derives
    ``AIP_CHECKPOINT_DIR`` from it), an ``AIP_CHECKPOINT_DIR`` environment variable, or an
    argument naming a checkpoint location (containing ``checkpoint``).
    """
    if mapping(job_spec.get("baseOutputDirectory")).get("outputUriPrefix"):
        return True
    for pool in job_spec.get("workerPoolSpecs") or []:
        if "AIP_CHECKPOINT_DIR" in pool_env(pool):
            return True
        if any("checkpoint" in arg.lower() for arg in pool_args(pool)):
            return True
    return False


def declares_distribution(job_spec: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """True when the job says how several GPUs / replicas cooperate.

    Accepted declarations: a ``distribution`` label (the builders write it from
    ``CustomJobSpec(distribution=...)``), a Reduction Server pool, or a distributed launcher
    (``torchrun``, ``torch.distributed``, ``--distributed``, ...) in a pool's command or args.
    """
    if labels.get(DISTRIBUTION_LABEL) in DISTRIBUTIONS:
        return True
    for pool in job_spec.get("workerPoolSpecs") or []:
        if is_reduction_server(pool):
            return True
        if any(launcher in " ".join(pool_args(pool)) for launcher in _LAUNCHERS):
            return True
    return False


def _executor_availability(
    pool: Mapping[str, Any], pool_path: str, today: _dt.date
) -> list[Problem]:
    """A prebuilt training image past its end of availability (an error) or near it: the
    executor image of a package, or a prebuilt image run directly as the container."""
    from vertex_retrain.specs.executor_images import availability_problems

    for spec_key, image_key in (
        ("pythonPackageSpec", "executorImageUri"),
        ("containerSpec", "imageUri"),
    ):
        image = mapping(pool.get(spec_key)).get(image_key)
        if isinstance(image, str) and image:
            return availability_problems(image, f"{pool_path}.{spec_key}.{image_key}", today=today)
    return []


def check_job_spec(
    job_spec: Any,
    spec_path: str,
    catalog: Catalog,
    *,
    labels: Mapping[str, Any],
    labels_path: str,
    today: _dt.date,
) -> list[Problem]:
    """Checks one CustomJobSpec body: pools, hardware, scheduling, outputs and pitfalls.

    Args:
        job_spec: The body (``jobSpec`` or ``trialJobSpec``), REST JSON.
        spec_path: Its field path.
        catalog: The machine catalog.
        labels: The resource's labels (a ``distribution`` label declares the setup).
        labels_path: Field path of those labels.
        today: Date for the retirement checks.

    Returns:
        Errors and warnings, in field order.
    """
    if not isinstance(job_spec, Mapping):
        return [error(spec_path, job_spec, "The job spec must be an object.", code="type")]
    pools = job_spec.get("workerPoolSpecs")
    problems = check_pool_structure(pools, spec_path)
    pools = pools if isinstance(pools, list) else []
    scheduling = mapping(job_spec.get("scheduling"))
    strategy = scheduling.get("strategy")
    for index, raw in enumerate(pools[:4]):
        pool = mapping(raw)
        if not pool:
            continue
        pool_path = f"{spec_path}.workerPoolSpecs[{index}]"
        machine_spec = pool.get("machineSpec")
        problems += check_machine_spec(
            machine_spec, f"{pool_path}.machineSpec", catalog, today=today
        )
        if gpu_count(pool):
            problems += check_gpu_image(pool, pool_path)
        problems += _executor_availability(pool, pool_path, today)
        tpu = catalog.tpu_machines.get(str(mapping(machine_spec).get("machineType")))
        if tpu is not None:
            problems += check_tpu_image(
                pool, pool_path, tpu.generation, catalog.tpu_requirements.get(tpu.generation, {})
            )
    problems += check_tpu_pools(pools, spec_path, catalog, strategy)
    problems += _check_scheduling(job_spec.get("scheduling"), f"{spec_path}.scheduling")
    prefix = mapping(job_spec.get("baseOutputDirectory")).get("outputUriPrefix")
    if prefix is not None and not str(prefix).startswith("gs://"):
        problems.append(
            error(
                f"{spec_path}.baseOutputDirectory.outputUriPrefix",
                prefix,
                "The base output directory must be a Cloud Storage URI.",
                ["gs://BUCKET/runs/RUN_ID"],
                code="output-dir",
            )
        )
    if strategy == "SPOT" and not declares_checkpoints(job_spec):
        problems.append(
            warning(
                f"{spec_path}.baseOutputDirectory",
                None,
                "Spot VMs can be reclaimed at any time; without a checkpoint directory a "
                "preempted job restarts from step 0 and the savings are lost.",
                [
                    "baseOutputDirectory.outputUriPrefix gs://BUCKET/run (gives "
                    "AIP_CHECKPOINT_DIR)",
                    "an AIP_CHECKPOINT_DIR env var or a --checkpoint-dir argument",
                ],
                code="spot-no-checkpoint",
            )
        )
    problems += _check_distribution(pools, job_spec, labels, labels_path, catalog)
    return problems


def _check_distribution(
    pools: list[Any],
    job_spec: Mapping[str, Any],
    labels: Mapping[str, Any],
    labels_path: str,
    catalog: Catalog,
) -> list[Problem]:
    # No Reduction Server pool is left out: one declares the distribution itself.
    compute_pools = [
        p
        for p in pools[:4]
        if mapping(p)
        and str(mapping(mapping(p).get("machineSpec")).get("machineType"))
        not in catalog.tpu_machines
    ]
    gpus = sum(gpu_count(p) * replica_count(p) for p in compute_pools)
    replicas = sum(replica_count(p) for p in compute_pools)
    if (gpus > 1 or replicas > 1) and not declares_distribution(job_spec, labels):
        return [
            warning(
                f"{labels_path}.{DISTRIBUTION_LABEL}",
                None,
                f"{gpus} GPU(s) on {replicas} replica(s) but no distributed setup declared: "
                "without DDP or a tf.distribute strategy only one GPU does the work.",
                [
                    "distribution='ddp' (label distribution=ddp) for PyTorch DDP",
                    "distribution='mirrored' (one machine, several GPUs, TensorFlow)",
                    "distribution='multi_worker_mirrored' (several machines, TensorFlow)",
                    "acceleratorCount 1 and replicaCount 1",
                ],
                code="no-distribution",
            )
        ]
    return []

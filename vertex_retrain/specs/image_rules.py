"""Rules on the code a worker pool runs: CUDA base images, TPU framework minimums.

A GPU pool should run an image built on CUDA (the source article: GPU images start from
``nvidia/cuda``). Only the image URI is available, so the judgement is by name: Vertex
prebuilt ``*-gpu.*`` images and names mentioning ``cuda`` or ``nvidia`` pass. A custom image
declares its base through the pool environment variable :data:`BASE_IMAGE_ENV` (the builders
set it from ``WorkerPool(base_image=...)``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.payload_io import mapping
from vertex_retrain.specs.problems import Problem, error, warning

BASE_IMAGE_ENV = "VERTEX_RETRAIN_BASE_IMAGE"
REDUCTION_SERVER_IMAGE = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
_REDUCTION_SERVER = re.compile(r"vertex-ai-restricted/training/reductionserver(?:[:@]|$)")
_PREBUILT = re.compile(r"(?:docker\.pkg\.dev|gcr\.io)/(?:vertex-ai|deeplearning-platform-release)/")
_FRAMEWORK = re.compile(r"/(tf2?|tensorflow|pytorch|jax)(?:-[a-z0-9]+)*\.(\d+)-(\d+)")
_PYTHON = re.compile(r"[.\-_]py(3)(\d{1,2})\b")
_FRAMEWORK_NAMES = {"tf": "tensorflow", "tf2": "tensorflow", "tensorflow": "tensorflow"}


def pool_image(pool: Any) -> tuple[str | None, str]:
    """Returns ``(image URI, field path suffix)`` of a pool's container or executor image."""
    pool = mapping(pool)
    if "containerSpec" in pool:
        return mapping(pool["containerSpec"]).get("imageUri"), "containerSpec.imageUri"
    if "pythonPackageSpec" in pool:
        return (
            mapping(pool["pythonPackageSpec"]).get("executorImageUri"),
            "pythonPackageSpec.executorImageUri",
        )
    return None, "containerSpec.imageUri"


def pool_env(pool: Any) -> dict[str, str]:
    """Returns a pool's environment variables as a dict (container or Python package)."""
    pool = mapping(pool)
    code = mapping(pool.get("containerSpec") or pool.get("pythonPackageSpec"))
    env = code.get("env") or []
    out: dict[str, str] = {}
    for item in env if isinstance(env, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            out[item["name"]] = str(item.get("value", ""))
    return out


def pool_args(pool: Any) -> list[str]:
    """Returns a pool's command and args as one list of strings."""
    pool = mapping(pool)
    code = mapping(pool.get("containerSpec") or pool.get("pythonPackageSpec"))
    items = list(code.get("command") or []) + list(code.get("args") or [])
    return [str(x) for x in items]


def is_reduction_server(pool: Any) -> bool:
    """True when the pool runs the official Reduction Server image."""
    image, _ = pool_image(pool)
    return bool(image and _REDUCTION_SERVER.search(image))


def check_gpu_image(pool: Any, pool_path: str) -> list[Problem]:
    """Warns when a GPU pool's image does not look CUDA-based (see the module docstring)."""
    image, suffix = pool_image(pool)
    if not isinstance(image, str) or not image:
        return []
    lowered = image.lower()
    declared = pool_env(pool).get(BASE_IMAGE_ENV, "").lower()
    if "cuda" in lowered or "nvidia" in lowered or "cuda" in declared or "nvidia" in declared:
        return []
    path = f"{pool_path}.{suffix}"
    if _PREBUILT.search(lowered):
        # Google's own images say their build in the name: -gpu. or -tpu. are fine here.
        if "-cpu." in lowered:
            return [
                warning(
                    path,
                    image,
                    "A prebuilt CPU image on a GPU machine: the framework will not see the GPUs.",
                    [image.replace("-cpu.", "-gpu.")],
                    code="gpu-image-not-cuda",
                )
            ]
        return []
    return [
        warning(
            path,
            image,
            "A GPU worker pool whose custom image is not known to be built on CUDA.",
            [
                "build the image FROM nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04 (a CUDA 13.0 "
                "image: NVIDIA supports it while its driver branch R580 is, until August 2028)",
                f"declare the base image: env {BASE_IMAGE_ENV}=nvidia/cuda:<tag> "
                "(WorkerPool(base_image=...))",
            ],
            code="gpu-image-not-cuda",
        )
    ]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def check_tpu_image(
    pool: Any, pool_path: str, generation: str, requirements: Mapping[str, str]
) -> list[Problem]:
    """Refuses a TPU pool whose image name shows a framework or Python below the minimum.

    Args:
        pool: The worker pool (REST JSON).
        pool_path: Its field path.
        generation: TPU generation, e.g. ``v5e``.
        requirements: Minimums for that generation (``python``, ``jax``, ``tensorflow``,
            ``pytorch``), from the catalog.

    Returns:
        Errors for versions read from the image name that are too old. Images whose name
        shows no version are not judged.
    """
    image, suffix = pool_image(pool)
    if not isinstance(image, str) or not requirements:
        return []
    path = f"{pool_path}.{suffix}"
    problems: list[Problem] = []
    wanted = ", ".join(f"{k} {v}+" for k, v in requirements.items())
    python = _PYTHON.search(image)
    if python and "python" in requirements:
        found = (int(python.group(1)), int(python.group(2)))
        if found < _version(requirements["python"]):
            problems.append(
                error(
                    path,
                    image,
                    f"TPU {generation} needs Python {requirements['python']}+; this image has "
                    f"Python {found[0]}.{found[1]}.",
                    [f"an image with Python {requirements['python']} or newer"],
                    code="tpu-runtime",
                )
            )
    framework = _FRAMEWORK.search(image)
    if framework:
        name = _FRAMEWORK_NAMES.get(framework.group(1), framework.group(1))
        found = (int(framework.group(2)), int(framework.group(3)))
        minimum = requirements.get(name)
        if minimum and found < _version(minimum)[:2]:
            problems.append(
                error(
                    path,
                    image,
                    f"TPU {generation} needs {wanted}; this image has {name} "
                    f"{found[0]}.{found[1]}.",
                    [f"{name} {minimum} or newer"],
                    code="tpu-runtime",
                )
            )
    return problems

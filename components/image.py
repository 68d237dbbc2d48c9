"""The container image every vertex-retrain component runs in on Vertex AI Pipelines.

Components are declared with :data:`DEFAULT_COMPONENT_IMAGE`; ``compile.py compile
--component-image URI`` swaps it for the image you built from ``components/Dockerfile``.
The swap happens on the compiled spec (a pure transformation), so no environment variable
is read while compiling and the same Python definitions serve every image.
"""

from __future__ import annotations

import copy
from typing import Any

DEFAULT_COMPONENT_IMAGE = "us-docker.pkg.dev/vertex-retrain/components/vertex-retrain:0.1.0"
"""Placeholder image URI recorded in compiled components until a real one is given."""


def with_component_image(pipeline_spec: dict[str, Any], image_uri: str) -> dict[str, Any]:
    """Returns a copy of a compiled pipeline or component spec that runs in ``image_uri``.

    Only executors that use :data:`DEFAULT_COMPONENT_IMAGE` change; executors of other
    components (GCPC ops, user components) keep their images.

    Args:
        pipeline_spec: The compiled spec as a dict (the YAML document KFP writes).
        image_uri: The component image to use, e.g.
            ``europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:0.1.0``.

    Returns:
        The updated copy.

    Raises:
        ValueError: If ``image_uri`` is empty or contains whitespace.
    """
    if not image_uri or any(ch.isspace() for ch in image_uri):
        raise ValueError(
            f"component image must be a container image URI such as "
            f"'REGION-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG'; got {image_uri!r}"
        )
    updated = copy.deepcopy(pipeline_spec)
    executors = updated.get("deploymentSpec", {}).get("executors", {})
    for executor in executors.values():
        container = executor.get("container", {})
        if container.get("image") == DEFAULT_COMPONENT_IMAGE:
            container["image"] = image_uri
    return updated

"""The container image every vertex-retrain component runs in on Vertex AI Pipelines.

Components are declared with :data:`DEFAULT_COMPONENT_IMAGE`, a placeholder. Two ways give
them the image you built from ``components/Dockerfile`` (``vertex-retrain build-image``):

- ``vertex-retrain compile --component-image URI`` swaps it in the compiled spec
  (:func:`with_component_image`, a pure transformation of the spec);
- in your own Python, before ``kfp.compiler.Compiler().compile(...)``::

      from vertex_retrain.components import set_component_image
      set_component_image("europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:0.1.0")

  sets it on every vertex-retrain component of the process (:func:`set_component_image`).
"""

from __future__ import annotations

import copy
from typing import Any

DEFAULT_COMPONENT_IMAGE = "us-docker.pkg.dev/vertex-retrain/components/vertex-retrain:0.1.0"
"""Placeholder image URI recorded in compiled components until a real one is given."""


def check_image_uri(image_uri: str) -> str:
    """Returns ``image_uri`` when it can name a container image.

    Raises:
        ValueError: It is empty or contains whitespace.
    """
    if not image_uri or any(ch.isspace() for ch in image_uri):
        raise ValueError(
            f"component image must be a container image URI such as "
            f"'REGION-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG'; got {image_uri!r}"
        )
    return image_uri


_COMPONENTS: list[Any] = []
"""Every vertex-retrain component created in this process (see :func:`register`)."""
_current = [DEFAULT_COMPONENT_IMAGE]


def current_image() -> str:
    """The image new vertex-retrain components are declared with."""
    return _current[0]


def register(component: Any) -> Any:
    """Records a component so :func:`set_component_image` reaches it; returns it."""
    _COMPONENTS.append(component)
    return component


def set_component_image(image_uri: str) -> str:
    """Sets the image of every vertex-retrain component in this process, for plain
    ``kfp.compiler`` compiles; components imported later get it too.

    Args:
        image_uri: The component image, e.g.
            ``europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:0.1.0``.

    Returns:
        The image set before (to restore it).

    Raises:
        ValueError: If ``image_uri`` is empty or contains whitespace.
    """
    check_image_uri(image_uri)
    previous, _current[0] = _current[0], image_uri
    for component in _COMPONENTS:
        component.component_spec.implementation.container.image = image_uri
    return previous


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
    check_image_uri(image_uri)
    updated = copy.deepcopy(pipeline_spec)
    executors = updated.get("deploymentSpec", {}).get("executors", {})
    for executor in executors.values():
        container = executor.get("container", {})
        if container.get("image") == DEFAULT_COMPONENT_IMAGE:
            container["image"] = image_uri
    return updated

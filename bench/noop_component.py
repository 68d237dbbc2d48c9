"""A pipeline of one task with an empty body: the fixed cost of a kfp.local task.

No `from __future__ import annotations` here: KFP reads the signature's annotations as
objects.
"""

from kfp import dsl

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def noop() -> None:
    """An empty body."""


@dsl.pipeline(name="bench-noop")
def noop_pipeline() -> None:
    """One empty task."""
    noop()

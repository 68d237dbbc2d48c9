"""A user's pipeline configured with defaults ``run --param`` would refuse as values (outside
the ranges of vertex_retrain.pipelines.ranges), for the tests of
vertex_retrain.cli.param_defaults: every command refuses them before anything runs.

No `from __future__ import annotations`: KFP reads the signature's annotations as objects.
"""

from kfp import dsl

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.pipelines import configure


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def step(timeout_seconds: int, accelerator_count: int) -> str:
    """The step that would take the values; a run that reaches it was not refused."""
    return f"{timeout_seconds} s, {accelerator_count} accelerator(s)"


@dsl.pipeline(name="ranged")
def ranged(timeout_seconds: int = 3600, accelerator_count: int = 0) -> None:
    """Two parameters with a range, by their names."""
    step(timeout_seconds=timeout_seconds, accelerator_count=accelerator_count)


too_short = configure(ranged, name="too-short", timeout_seconds=5)
"""A timeout under the 60 s a --param timeout_seconds must have at least."""

two_bad = configure(ranged, name="two-bad", timeout_seconds=5, accelerator_count=-1)
"""Two defaults out of range: two lines."""

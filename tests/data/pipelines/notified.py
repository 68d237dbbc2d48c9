"""A tiny pipeline under the failure notice, to run locally (kfp.local) with and without a
failing step. No `from __future__ import annotations`: KFP reads the annotations as objects.
"""

from kfp import dsl

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.pipelines.failure_notice import with_failure_notice


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def step(fail: bool) -> None:
    """Fails when asked."""
    if fail:
        raise RuntimeError("the step failed on purpose")


@dsl.pipeline(name="tiny-run")
def tiny_run(fail: bool = False, notification_emails: list = ["ops@example.com"]) -> None:  # noqa: B006
    """One step."""
    step(fail=fail)


notified = with_failure_notice(tiny_run, name="tiny-notified", description="tiny, notified")


@dsl.pipeline(name="no-recipients")
def no_recipients(fail: bool = False) -> None:
    """A pipeline with no parameter for the notice's addresses."""
    step(fail=fail)

"""The failure notice: a pipeline wrapped so that Vertex AI e-mails how each run ended.

GCPC's ``VertexNotificationEmailOp`` must be the exit task of a ``dsl.ExitHandler`` (only an
exit task receives the run's final status). KFP allows exit handlers only at a pipeline's
outermost scope, never nested and never inside ``dsl.If``, and a pipeline already has its own
(the run summary). So the notice wraps the whole run as a nested pipeline::

    notice = VertexNotificationEmailOp(recipients=notification_emails)  # the exit task
    with dsl.ExitHandler(notice, name="failure-notice"):
        run(**every_parameter)  # the pipeline itself, with its run-summary exit handler

The wrapper has the run's name, description and parameters (same names, types and
defaults), so callers, schedules and ``--param`` overrides see no difference. Vertex sends the
e-mail when the run ends, failed or not, to the addresses in the recipients parameter (at most
three). kfp.local cannot run this Vertex service step: the local runner skips it
(:mod:`vertex_retrain.backends.local.kfp_adapter.kfp_tasks`) and the run summary says how the
run ended,
with a non-zero exit code on failure.
"""

import inspect
from typing import Any

from kfp import dsl

NOTIFICATION_PARAMETER = "notification_emails"
"""The pipeline parameter listing who is e-mailed when a run ends (empty: nobody)."""


def with_failure_notice(
    run: Any, *, name: str, description: str, recipients: str = NOTIFICATION_PARAMETER
) -> Any:
    """Wraps the pipeline ``run`` so Vertex e-mails ``recipients`` when a run of it ends.

    Args:
        run: A ``@dsl.pipeline`` with a ``list`` parameter called ``recipients``.
        name: The wrapper's pipeline name (the one templates and schedules use).
        description: The wrapper's description.
        recipients: The parameter holding the addresses.

    Returns:
        A ``@dsl.pipeline`` with ``run``'s parameters.

    Raises:
        ValueError: ``run`` has no parameter called ``recipients``.
    """
    from google_cloud_pipeline_components.v1.vertex_notification_email import (
        VertexNotificationEmailOp,
    )

    signature = inspect.signature(run.pipeline_func)
    names = list(signature.parameters)
    if recipients not in names:
        raise ValueError(
            f"pipeline {run.name!r} has no parameter {recipients!r} to take the notice's "
            f"addresses from; its parameters are {', '.join(names)}"
        )

    def notified(*channels: Any) -> None:
        arguments = dict(zip(names, channels, strict=True))
        notice = VertexNotificationEmailOp(recipients=arguments[recipients])
        notice.set_display_name("failure-notice")
        notice.set_caching_options(False)  # a notice is about this run, never an earlier one
        with dsl.ExitHandler(notice, name="failure-notice"):
            # The week's own tasks carry their cache keys; the group task that holds them has
            # the same inputs every week, so it must never be served from the cache.
            run(**arguments).set_display_name("run").set_caching_options(False)

    # KFP reads a pipeline's parameters from its signature and calls it positionally.
    notified.__signature__ = signature  # type: ignore[attr-defined]
    notified.__doc__ = run.pipeline_func.__doc__
    notified.__name__ = run.pipeline_func.__name__
    return dsl.pipeline(name=name, description=description)(notified)

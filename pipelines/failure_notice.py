"""The failure notice: a pipeline wrapped so that Vertex AI e-mails how each run ended.

GCPC's ``VertexNotificationEmailOp`` must be the exit task of a ``dsl.ExitHandler`` (only an
exit task receives the run's final status). KFP allows exit handlers only at a pipeline's
outermost scope, never nested and never inside ``dsl.If``, and a pipeline already has its own
(the run summary). So the notice wraps the whole run as a nested pipeline::

    notice = VertexNotificationEmailOp(recipients=notification_emails)  # the exit task
    with dsl.ExitHandler(notice, name="failure-notice"):
        run(**every_parameter)  # the pipeline itself, with its run-summary exit handler

The e-mail task exists only when the pipeline has recipients: an exit task cannot sit under a
condition, and what Vertex does with an e-mail task of no address is documented nowhere, so a
pipeline whose recipients default is empty is the run itself under the wrapper's name (no
nested pipeline, no e-mail task). :func:`vertex_retrain.pipelines.configure` with
``notification_emails=[...]`` builds the wrapped form; a run-time override of the recipients
of a pipeline compiled without them is refused by ``preflight``.

The wrapper has the run's name, description and parameters (same names, types and
defaults), so callers, schedules and ``--param`` overrides see no difference. Vertex sends the
e-mail when the run ends, failed or not (at most three addresses). kfp.local cannot run this
Vertex service step: the local runner skips it
(:mod:`vertex_retrain.backends.local.kfp_adapter.kfp_tasks`) and the run summary says how the
run ended, with a non-zero exit code on failure.
"""

import inspect
from dataclasses import dataclass
from typing import Any

from kfp import dsl

NOTIFICATION_PARAMETER = "notification_emails"
"""The pipeline parameter listing who is e-mailed when a run ends (empty: nobody)."""

NOTICE_ATTRIBUTE = "failure_notice"
"""Attribute of a pipeline made by :func:`with_failure_notice`: its :class:`FailureNotice`."""


@dataclass(frozen=True)
class FailureNotice:
    """How a pipeline was put under the notice, so ``configure`` can build it again.

    Attributes:
        run: The pipeline the notice wraps (or renames, without recipients).
        recipients: The parameter holding the addresses.
        wrapped: Whether the e-mail task exists (the recipients' default is not empty).
    """

    run: Any
    recipients: str
    wrapped: bool


def has_recipients(run: Any, recipients: str = NOTIFICATION_PARAMETER) -> bool:
    """Whether ``run``'s ``recipients`` parameter has a non-empty default."""
    parameter = inspect.signature(run.pipeline_func).parameters.get(recipients)
    return (
        parameter is not None
        and parameter.default is not parameter.empty
        and bool(parameter.default)
    )


def with_failure_notice(
    run: Any, *, name: str, description: str, recipients: str = NOTIFICATION_PARAMETER
) -> Any:
    """``run`` under ``name``; wrapped so Vertex e-mails ``recipients`` when a run ends, when
    the recipients' default is not empty.

    Args:
        run: A ``@dsl.pipeline`` with a ``list`` parameter called ``recipients``.
        name: The resulting pipeline's name (the one templates and schedules use).
        description: Its description.
        recipients: The parameter holding the addresses.

    Returns:
        A ``@dsl.pipeline`` with ``run``'s parameters; its ``failure_notice`` attribute says
        how it was made.

    Raises:
        ValueError: ``run`` has no parameter called ``recipients``.
    """
    signature = inspect.signature(run.pipeline_func)
    names = list(signature.parameters)
    if recipients not in names:
        raise ValueError(
            f"pipeline {run.name!r} has no parameter {recipients!r} to take the notice's "
            f"addresses from; its parameters are {', '.join(names)}"
        )
    wrapped = has_recipients(run, recipients)
    function = _notified(run, names, recipients) if wrapped else _renamed(run.pipeline_func)
    function.__signature__ = signature
    function.__doc__ = run.pipeline_func.__doc__
    function.__name__ = run.pipeline_func.__name__
    pipeline = dsl.pipeline(name=name, description=description)(function)
    setattr(pipeline, NOTICE_ATTRIBUTE, FailureNotice(run, recipients, wrapped))
    return pipeline


def _renamed(function: Any) -> Any:
    def run_itself(*channels: Any) -> Any:
        # KFP calls a pipeline function positionally, in its signature's order.
        return function(*channels)

    return run_itself


def _notified(run: Any, names: list[str], recipients: str) -> Any:
    from google_cloud_pipeline_components.v1.vertex_notification_email import (
        VertexNotificationEmailOp,
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

    return notified

"""A run's week as a Vertex AI Experiments run: one experiment per model, one run per week.

The run summary logs the record's parameters (window, decision, gate verdict...) and metrics
(candidate, champion and baseline metrics, the gate's statistics, goodput, cost) with
google-cloud-aiplatform's ``init(experiment=...)``, ``start_run``, ``log_params``,
``log_metrics`` and ``end_run``. The SDK is reached through :class:`ExperimentsClient`, so
tests pass a fake and check what was logged.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from vertex_retrain.run_record import RunRecord

_NAME_LIMIT = 128
"""Vertex AI experiment and experiment-run names: lowercase letters, digits and hyphens."""


class ExperimentsClient(Protocol):
    """The part of the Vertex AI SDK (``google.cloud.aiplatform``) that logs an experiment."""

    def init(self, *, project: str, location: str, experiment: str) -> None:
        """Selects the project, region and experiment (created when missing)."""
        ...

    def start_run(self, run: str) -> None:
        """Starts the experiment run ``run``, or resumes it when it exists."""
        ...

    def log_params(self, params: dict[str, str | float | int]) -> None:
        """Logs parameters on the current run."""
        ...

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """Logs metrics on the current run."""
        ...

    def end_run(self, state: str) -> None:
        """Ends the current run (``COMPLETE`` or ``FAILED``)."""
        ...


class AiplatformExperiments:
    """:class:`ExperimentsClient` on the real SDK (imported when first used)."""

    def init(self, *, project: str, location: str, experiment: str) -> None:
        """``aiplatform.init(project=, location=, experiment=)``."""
        from google.cloud import aiplatform

        aiplatform.init(project=project, location=location, experiment=experiment)

    def start_run(self, run: str) -> None:
        """``aiplatform.start_run``; a retried summary resumes the run it started."""
        from google.api_core import exceptions
        from google.cloud import aiplatform

        try:
            aiplatform.start_run(run)
        except exceptions.AlreadyExists:
            aiplatform.start_run(run, resume=True)

    def log_params(self, params: dict[str, str | float | int]) -> None:
        """``aiplatform.log_params``."""
        from google.cloud import aiplatform

        aiplatform.log_params(params)

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """``aiplatform.log_metrics``."""
        from google.cloud import aiplatform

        values: dict[str, float | int | str] = dict(metrics)
        aiplatform.log_metrics(values)

    def end_run(self, state: str) -> None:
        """``aiplatform.end_run`` with the run's final state."""
        from google.cloud import aiplatform
        from google.cloud.aiplatform_v1.types.execution import Execution

        aiplatform.end_run(state=getattr(Execution.State, state))


def experiment_name(text: str) -> str:
    """``text`` as a Vertex AI experiment or run name: ``[a-z0-9-]``, at most 128 characters.

    Raises:
        ValueError: Nothing of ``text`` is left.
    """
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:_NAME_LIMIT].rstrip("-")
    if not name:
        raise ValueError(
            f"{text!r} has no letter or digit to name a Vertex AI experiment or run with"
        )
    return name


def log_week(
    record: RunRecord,
    *,
    project: str,
    location: str,
    client: ExperimentsClient | Any | None = None,
) -> str:
    """Logs ``record`` as the run ``record.run`` of the experiment ``record.model``.

    Args:
        record: The week's record.
        project: Google Cloud project.
        location: Vertex AI region.
        client: The SDK seam; the real SDK when omitted.

    Returns:
        Where the record went, in words.
    """
    experiments = client if client is not None else AiplatformExperiments()
    experiment, run = experiment_name(record.model), experiment_name(record.run)
    experiments.init(project=project, location=location, experiment=experiment)
    experiments.start_run(run)
    experiments.log_params(record.experiment_params())
    experiments.log_metrics(record.experiment_metrics())
    experiments.end_run("COMPLETE" if record.state == "SUCCEEDED" else "FAILED")
    return f"Vertex AI experiment {experiment}, run {run}"

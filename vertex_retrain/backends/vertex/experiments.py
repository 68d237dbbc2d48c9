"""A run's week as a Vertex AI Experiments run: one experiment per model, one run per week.

The run summary logs the record's parameters (window, decision, gate verdict...) and metrics
(candidate, champion and baseline metrics, the gate's statistics, goodput, cost) with
google-cloud-aiplatform's ``init(experiment=...)``, ``start_run``, ``log_params``,
``log_metrics`` and ``end_run``. The SDK is reached through :class:`ExperimentsClient`, so
tests pass a fake and check what was logged.

Two limits of the SDK shape the names (google-cloud-aiplatform 1.165,
``metadata/experiment_run_resource.py``): the run's resource id is ``f"{experiment}-{run}"``,
and ``ExperimentRun._validate_run_id`` refuses one longer than
``constants._EXPERIMENT_RUN_MAX_LENGTH`` = 128 - len("-tb-run") = 121 characters. And
``aiplatform.init(experiment=...)`` gives the experiment a backing TensorBoard, creating the
project's default one when there is none, unless ``experiment_tensorboard=False``
(``metadata/metadata.py``, ``_ExperimentTracker.set_experiment``): a week's record needs none,
so none is created unless one is named.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Protocol

from vertex_retrain.run_record import RunRecord

_NAME_LIMIT = 128
"""Vertex AI experiment and experiment-run names: lowercase letters, digits and hyphens."""

RUN_ID_LIMIT = 121
"""Longest ``f"{experiment}-{run}"`` the SDK accepts (``_EXPERIMENT_RUN_MAX_LENGTH``)."""

EXPERIMENT_LIMIT = 64
"""The experiment's share of :data:`RUN_ID_LIMIT`; the rest is the run's."""


class ExperimentsClient(Protocol):
    """The part of the Vertex AI SDK (``google.cloud.aiplatform``) that logs an experiment."""

    def init(self, *, project: str, location: str, experiment: str, tensorboard: str = "") -> None:
        """Selects the project, region and experiment (created when missing), backed by
        ``tensorboard`` (a TensorBoard resource name) or by none when it is empty."""
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

    def init(self, *, project: str, location: str, experiment: str, tensorboard: str = "") -> None:
        """``aiplatform.init(project=, location=, experiment=, experiment_tensorboard=)``:
        ``False`` unless a TensorBoard is named, so the SDK creates none."""
        from google.cloud import aiplatform

        aiplatform.init(
            project=project,
            location=location,
            experiment=experiment,
            experiment_tensorboard=tensorboard or False,
        )

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
    name = _sanitized(text)[:_NAME_LIMIT].rstrip("-")
    if not name:
        raise ValueError(
            f"{text!r} has no letter or digit to name a Vertex AI experiment or run with"
        )
    return name


def _sanitized(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def experiment_run_names(model: str, run: str) -> tuple[str, str]:
    """The experiment and run names of a week, within the SDK's combined limit.

    The experiment keeps at most :data:`EXPERIMENT_LIMIT` characters; a run name that does
    not fit the rest of :data:`RUN_ID_LIMIT` keeps its start and ends with 8 hex digits of
    its full name's SHA-256, so two long run names stay two runs.

    Args:
        model: The model's display name (the experiment).
        run: The pipeline run's name.

    Returns:
        ``(experiment, run)`` with ``len(f"{experiment}-{run}") <= 121``.

    Raises:
        ValueError: One of them has no letter or digit.
    """
    experiment = experiment_name(model)[:EXPERIMENT_LIMIT].rstrip("-")
    experiment_name(run)  # refuses a name of no letter or digit
    full = _sanitized(run)
    room = RUN_ID_LIMIT - len(experiment) - 1
    if len(full) <= room:
        return experiment, full
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:8]
    return experiment, f"{full[: room - len(digest) - 1].rstrip('-')}-{digest}"


def log_week(
    record: RunRecord,
    *,
    project: str,
    location: str,
    client: ExperimentsClient | Any | None = None,
    tensorboard: str = "",
) -> str:
    """Logs ``record`` as the run ``record.run`` of the experiment ``record.model``.

    Args:
        record: The week's record.
        project: Google Cloud project.
        location: Vertex AI region.
        client: The SDK seam; the real SDK when omitted.
        tensorboard: A TensorBoard resource name to back the experiment; empty: none is
            used or created.

    Returns:
        Where the record went, in words.
    """
    experiments = client if client is not None else AiplatformExperiments()
    experiment, run = experiment_run_names(record.model, record.run)
    experiments.init(
        project=project, location=location, experiment=experiment, tensorboard=tensorboard
    )
    experiments.start_run(run)
    experiments.log_params(record.experiment_params())
    experiments.log_metrics(record.experiment_metrics())
    experiments.end_run("COMPLETE" if record.state == "SUCCEEDED" else "FAILED")
    return f"Vertex AI experiment {experiment}, run {run}"

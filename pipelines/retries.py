"""The retry policy of the tasks that call a Google API or run a job.

A launcher task (training, tuning, evaluation) waits on a Vertex job for hours; a network
outage or a 503 from an API in that time fails the task, and without a retry the week. Every
such task is safe to run again: a job launcher finds the job its first attempt started by the
key of its inputs and adopts it (:mod:`vertex_retrain.rules.idempotency`); a job it started
that failed in a way a new job would meet again (the code's exit, memory, a quota:
:func:`vertex_retrain.rules.job_failure.fails_again`) is reported again, not started again,
when the retry is in the same pipeline run; registration finds
the version it made, deployment the model it deployed. So the templates give these tasks
kfp's ``set_retry`` policy with exponential backoff (``retryPolicy`` in the compiled IR, which
Vertex AI Pipelines honours). The local runner runs each task once unless asked to honour the
policy (``run --local --retries``; docs/local-backend.md says why), and
tests/test_pipelines_retries.py runs a task that fails once both ways.

Call :func:`retry_google_calls` at the end of a pipeline function's body: it sets the policy
on every task created so far in that pipeline whose component is in :data:`RETRIED_COMPONENTS`.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRIED_COMPONENTS = frozenset(
    {
        "build-container",  # Cloud Build, Artifact Registry
        "source-digest",  # reads the source from Cloud Storage
        "extract-window",  # BigQuery; writes a folder named by its content (safe to redo)
        "check-data",  # reads the data (Cloud Storage, BigQuery)
        "prepare-dataset",  # reads and writes the data
        "train-custom-job",  # a CustomJob
        "hp-tune",  # a HyperparameterTuningJob
        "plan-training",  # the registry's champion, the source in Cloud Storage
        "evaluate-model",  # the registry's champion and a CustomJob
        "register-model",  # the Model Registry
        "deploy-model",  # endpoints
        "run-summary",  # Cloud Storage, Experiments, the run history
    }
)
"""Components (their KFP names) that call a Google API or run a job. Not here: data_window
(the clock), fixed_hyperparameters (its input), no_image (a constant), stop_run (fails on
purpose), and Vertex's own e-mail step."""


@dataclass(frozen=True)
class RetryPolicy:
    """kfp's ``PipelineTask.set_retry`` arguments.

    Attributes:
        num_retries: Attempts after the first.
        backoff_duration: Wait before the first retry (``"30s"``).
        backoff_factor: Each further wait is the previous one times this.
        backoff_max_duration: kfp's "maximum duration during which the task will be
            retried" (at most one hour); kfp.local caps each wait at it. The default's three
            waits (210 s) fit under it either way.
    """

    num_retries: int = 3
    backoff_duration: str = "30s"
    backoff_factor: float = 2.0
    backoff_max_duration: str = "600s"


DEFAULT_RETRY = RetryPolicy()
"""Three retries after 30 s, 60 s and 120 s: an outage of three and a half minutes is
survived; a task that fails for good fails within four minutes of its last attempt."""


def retry_google_calls(policy: RetryPolicy = DEFAULT_RETRY) -> None:
    """Sets ``policy`` on the retried tasks of the pipeline being defined.

    Args:
        policy: The retry policy.

    Raises:
        RuntimeError: Outside a ``@dsl.pipeline`` function's body.
    """
    from kfp.dsl import pipeline_context

    pipeline = pipeline_context.Pipeline.get_default_pipeline()
    if pipeline is None:
        raise RuntimeError("retry_google_calls() belongs in a @dsl.pipeline function's body")
    for task in pipeline.tasks.values():
        if task.component_spec.name in RETRIED_COMPONENTS:
            task.set_retry(
                num_retries=policy.num_retries,
                backoff_duration=policy.backoff_duration,
                backoff_factor=policy.backoff_factor,
                backoff_max_duration=policy.backoff_max_duration,
            )

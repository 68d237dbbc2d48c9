"""run_summary: the exit handler's report of a pipeline run, written even when it fails.

It also records the run's week: locally in the registry database (``vertex-retrain history``), on
Vertex as a Vertex AI Experiments run, and as the ``metrics`` artifact the console shows.
"""

from kfp import dsl
from kfp.dsl import Artifact, Markdown, Metrics, Output

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS, TRAINING


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(TRAINING, RUN_PLACEHOLDERS)
def run_summary(
    status: dsl.PipelineTaskFinalStatus,
    backend: str,
    pipeline_root: str,
    run_name: str,
    machine_type: str,
    accelerator_type: str,
    accelerator_count: int,
    worker_count: int,
    scheduling_strategy: str,
    summary: Output[Artifact],
    report: Output[Markdown],
    metrics: Output[Metrics],
    expected_training_hours: float = ...,
    model_display_name: str = "",
    notification_emails: list = [],  # noqa: B006 - KFP reads defaults from the signature
    project: str = ...,
    location: str = ...,
    expected_warm_training_hours: float = ...,
) -> None:
    """Gathers the run's window, data gate, decision, metrics, goodput and cost into
    ``summary`` and ``report``, and records the week.

    An exit task may not consume the outputs of the tasks it guards, so this reads them
    from the run itself: locally from kfp.local's pipeline root, on Vertex from the
    PipelineJob's task details.

    Args:
        status: The guarded tasks' final status (set by KFP).
        backend: ``"vertex"`` or ``"local"``.
        pipeline_root: The run's pipeline root (``dsl.PIPELINE_ROOT_PLACEHOLDER``).
        run_name: The run's name (``dsl.PIPELINE_JOB_NAME_PLACEHOLDER``).
        machine_type: Training machine type (for the cost estimate).
        accelerator_type: Training accelerator type (for the cost estimate).
        accelerator_count: Accelerators per training replica.
        worker_count: Replicas in the training workers pool.
        scheduling_strategy: The training job's strategy (``SPOT``...).
        summary: Output: the summary as JSON.
        report: Output: the summary as Markdown.
        metrics: Output: the week's numbers (candidate, champion and baseline metrics, the
            data statistics, goodput, cost), as the Vertex console shows metrics.
        expected_training_hours: Training time on Vertex assumed by the cost estimate.
        model_display_name: The model whose history the week joins ("": not recorded).
        notification_emails: Who Vertex e-mails when the run ends (the summary says so).
        project: Google Cloud project.
        location: Google Cloud region.
        expected_warm_training_hours: Training time assumed for a warm start from the
            champion (the summary says which kind ran, ``plan_training``).
    """
    import json

    from vertex_retrain.steps.run_history import record_week
    from vertex_retrain.steps.summary import render_markdown, summarize_run

    facts = summarize_run(
        backend=backend,
        pipeline_root=pipeline_root,
        run_name=run_name,
        state=status.state,
        error_message=status.error_message,
        job_shape={
            "machine_type": machine_type,
            "accelerator_type": accelerator_type,
            "accelerator_count": accelerator_count,
            "worker_count": worker_count,
            "scheduling_strategy": scheduling_strategy,
        },
        expected_training_hours=expected_training_hours,
        project=project,
        location=location,
        notification_emails=list(notification_emails),
        expected_warm_training_hours=expected_warm_training_hours,
    )
    if model_display_name:
        record, facts["recorded"] = record_week(
            facts, backend=backend, model=model_display_name, project=project, location=location
        )
        for name, value in record.experiment_metrics().items():
            metrics.log_metric(name, value)
    with open(summary.path, "w", encoding="utf-8") as handle:
        json.dump(facts, handle, indent=2, sort_keys=True)
    with open(report.path, "w", encoding="utf-8") as handle:
        handle.write(render_markdown(facts))
    print(render_markdown(facts))

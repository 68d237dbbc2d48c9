"""train_only: a smaller pipeline for experiments: train, evaluate, register as a challenger.

Nothing is deployed and the champion never moves, so experiments (on Spot, by default) can
run next to production without touching what serves. Like the weekly pipeline, a run has a
data window (``as_of``) and a data gate before training.
"""

from kfp import dsl

from vertex_retrain.components.evaluate_model import evaluate_model
from vertex_retrain.components.prepare_dataset import prepare_dataset
from vertex_retrain.components.register_model import register_model
from vertex_retrain.components.stop_run import stop_run
from vertex_retrain.components.train_custom_job import train_custom_job

from . import defaults
from .data_week import week_and_data_gate

PIPELINE_NAME = "train-only"


@dsl.pipeline(
    name=PIPELINE_NAME,
    description="Experiment: train, evaluate against the champion, register as a challenger.",
)
def train_only(
    backend: str = "vertex",
    project: str = "{{$.pipeline_google_cloud_project_id}}",
    location: str = "{{$.pipeline_google_cloud_location}}",
    package_uri: str = f"{defaults.PACKAGES_URI}/vertex_retrain_trainer-1.0.0-py3-none-any.whl",
    transactions_uri: str = defaults.TRANSACTIONS_URI,
    output_root: str = defaults.OUTPUT_ROOT,
    model_display_name: str = defaults.MODEL_DISPLAY_NAME,
    executor_image_uri: str = defaults.TRAINING.executor_image_uri,
    serving_image_uri: str = defaults.SERVING_IMAGE_URI,
    as_of: str = "",
    data_time_zone: str = defaults.DATA_TIME_ZONE,
    data_gate_thresholds: dict = defaults.DATA_GATE_THRESHOLDS,
    data_gate_accept: str = "",
    validation_weeks: int = 1,
    epochs: int = 4,
    learning_rate: float = 0.005,
    embedding_dim: int = 32,
    batch_size: int = 512,
    machine_type: str = defaults.TRAINING.machine_type,
    accelerator_type: str = defaults.TRAINING.accelerator_type,
    accelerator_count: int = defaults.TRAINING.accelerator_count,
    scheduling_strategy: str = defaults.TRAINING.scheduling_strategy,
    timeout_seconds: int = defaults.TRAINING.timeout_seconds,
    service_account: str = "",
    local_preemption_after_seconds: float = 0.0,
) -> None:
    """Trains one candidate and registers it as a challenger; traffic is never touched.

    ``as_of`` (``YYYY-MM-DD``) replays a past week; empty, the run's schedule time (else its
    creation time) in ``data_time_zone`` gives the week.
    """
    week, gate = week_and_data_gate(
        backend=backend,
        transactions_uri=transactions_uri,
        as_of=as_of,
        time_zone=data_time_zone,
        thresholds=data_gate_thresholds,
        accept=data_gate_accept,
    )
    with dsl.If(gate.outputs["passed"] == True, name="data-ok"):  # noqa: E712
        data = prepare_dataset(
            backend=backend,
            transactions_uri=transactions_uri,
            validation_weeks=validation_weeks,
            as_of=week,
        ).set_display_name("prepare-dataset")
        trained = train_custom_job(
            backend=backend,
            display_name="guess-your-order-experiment",
            base_output_directory=output_root,
            python_module="trainer.task",
            package_uri=package_uri,
            executor_image_uri=executor_image_uri,
            dataset=data.outputs["dataset"],
            hyperparameters={
                "epochs": epochs,
                "learning_rate": learning_rate,
                "embedding_dim": embedding_dim,
                "batch_size": batch_size,
            },
            machine_type=machine_type,
            accelerator_type=accelerator_type,
            accelerator_count=accelerator_count,
            scheduling_strategy=scheduling_strategy,
            timeout_seconds=timeout_seconds,
            service_account=service_account,
            local_preemption_after_seconds=local_preemption_after_seconds,
            pipeline_run=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
            pipeline_task=dsl.PIPELINE_TASK_NAME_PLACEHOLDER,
            project=project,
            location=location,
        ).set_display_name("train")
        evaluation = evaluate_model(
            backend=backend,
            candidate=trained.outputs["model"],
            dataset=data.outputs["dataset"],
            model_display_name=model_display_name,
            base_output_directory=output_root,
            package_uri=package_uri,
            executor_image_uri=executor_image_uri,
            service_account=service_account,
            pipeline_run=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
            pipeline_task=dsl.PIPELINE_TASK_NAME_PLACEHOLDER,
            project=project,
            location=location,
        ).set_display_name("evaluate")
        register_model(
            backend=backend,
            model=trained.outputs["model"],
            display_name=model_display_name,
            serving_image_uri=serving_image_uri,
            serving_command=defaults.SERVING_COMMAND,
            serving_package_uri=package_uri,
            serving_extras=defaults.SERVING_EXTRAS,
            sample_instances=defaults.SAMPLE_INSTANCES,
            make_champion=False,
            evaluation=evaluation.outputs["metrics"],
            labels=data.outputs["window_labels"],
            pipeline_run=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
            project=project,
            location=location,
        ).set_display_name("register-challenger")
    with dsl.Else(name="data-breach"):
        stop_run(reason=gate.outputs["verdict"]).set_display_name("stop-before-training")

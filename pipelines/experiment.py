"""train_only: a smaller template for experiments: train, evaluate, register as a challenger.

Nothing is deployed and the champion never moves, so experiments (on Spot, by default) can
run next to production without touching what serves. Like the weekly template, a run has a
data window (``as_of``) and a data gate before training. The team's package (``package_uri``,
a built wheel), modules, data and metrics are parameters with no default; the jobs run the
image built from the source's Dockerfile (:mod:`.training_image`).
"""

from kfp import dsl

from vertex_retrain.components.evaluate_model import evaluate_model
from vertex_retrain.components.register_model import register_model
from vertex_retrain.components.train_custom_job import train_custom_job
from vertex_retrain.specs.defaults import CONTAINER, PIPELINE_SERVICE_ACCOUNT, TRAINING

from .data_week import gated_week
from .retries import retry_google_calls
from .training_image import training_image

PIPELINE_NAME = "train-only"


@dsl.pipeline(
    name=PIPELINE_NAME,
    description="Experiment: train, evaluate against the champion, register as a challenger.",
)
def train_only(
    data_uri: str,
    dataset_declaration: dict,
    evaluation_declaration: dict,
    package_uri: str,
    training_module: str,
    evaluation_module: str,
    output_root: str,
    model_display_name: str,
    serving_image_uri: str,
    backend: str = "vertex",
    project: str = "{{$.pipeline_google_cloud_project_id}}",
    location: str = "{{$.pipeline_google_cloud_location}}",
    executor_image_uri: str = TRAINING.executor_image_uri,
    serving_command: list = [],  # noqa: B006 - KFP reads defaults from the signature
    serving_extras: list = [],  # noqa: B006
    sample_instances: list = [],  # noqa: B006
    as_of: str = "",
    data_time_zone: str = "UTC",
    data_gate_thresholds: dict = {},  # noqa: B006
    data_gate_accept: str = "",
    selection_periods: int = 1,
    gate_periods: int = 1,
    training_args: list = [],  # noqa: B006
    hyperparameters: dict = {},  # noqa: B006
    machine_type: str = TRAINING.machine_type,
    accelerator_type: str = TRAINING.accelerator_type,
    accelerator_count: int = TRAINING.accelerator_count,
    scheduling_strategy: str = TRAINING.scheduling_strategy,
    timeout_seconds: int = TRAINING.timeout_seconds,
    service_account: str = PIPELINE_SERVICE_ACCOUNT,
    local_preemption_after_seconds: float = 0.0,
    training_code: str = CONTAINER,
    source_uri: str = "",
    image_destination: str = "",
    dockerfile: str = "Dockerfile",
) -> None:
    """Trains one candidate and registers it as a challenger; traffic is never touched.

    ``as_of`` (``YYYY-MM-DD``) replays a past week; empty, the run's schedule time (else its
    creation time) in ``data_time_zone`` gives the week. See ``weekly_retraining`` for the
    other inputs.

    The jobs run a custom container by default (``training_code="container"``): ``dockerfile``
    in ``source_uri`` built into ``image_destination`` and run by digest.
    ``training_code="python_package"`` runs ``package_uri`` on the prebuilt
    ``executor_image_uri`` instead. ``package_uri`` is what a local deployment serves from.
    """
    with gated_week(
        backend=backend,
        data_uri=data_uri,
        dataset_declaration=dataset_declaration,
        as_of=as_of,
        time_zone=data_time_zone,
        thresholds=data_gate_thresholds,
        accept=data_gate_accept,
        selection_periods=selection_periods,
        gate_periods=gate_periods,
        project=project,
        location=location,
    ) as (_week, data):
        # Built only on a week whose data passed: a stopped week pays for no Cloud Build.
        image = training_image(
            backend=backend,
            training_code=training_code,
            source_uri=source_uri,
            image_destination=image_destination,
            dockerfile=dockerfile,
            staging_uri=output_root,
            project=project,
            location=location,
        )
        trained = train_custom_job(
            backend=backend,
            display_name=model_display_name,
            base_output_directory=output_root,
            python_module=training_module,
            package_uri=package_uri,
            image_uri=image,
            executor_image_uri=executor_image_uri,
            # Training reads the dataset without its gate period.
            dataset=data.outputs["training_dataset"],
            args=training_args,
            hyperparameters=hyperparameters,
            machine_type=machine_type,
            accelerator_type=accelerator_type,
            accelerator_count=accelerator_count,
            scheduling_strategy=scheduling_strategy,
            timeout_seconds=timeout_seconds,
            service_account=service_account,
            local_preemption_after_seconds=local_preemption_after_seconds,
            project=project,
            location=location,
        ).set_display_name("train")
        evaluation = evaluate_model(
            backend=backend,
            candidate=trained.outputs["model"],
            dataset=data.outputs["dataset"],
            model_display_name=model_display_name,
            base_output_directory=output_root,
            evaluation_declaration=evaluation_declaration,
            python_module=evaluation_module,
            package_uri=package_uri,
            image_uri=image,
            executor_image_uri=executor_image_uri,
            service_account=service_account,
            project=project,
            location=location,
        ).set_display_name("evaluate")
        # Reads the registry's champion, which is not among its inputs: never cached.
        evaluation.set_caching_options(False)
        register_model(
            backend=backend,
            model=trained.outputs["model"],
            display_name=model_display_name,
            serving_image_uri=serving_image_uri,
            serving_command=serving_command,
            serving_package_uri=package_uri,
            serving_extras=serving_extras,
            sample_instances=sample_instances,
            make_champion=False,
            evaluation=evaluation.outputs["metrics"],
            labels=data.outputs["window_labels"],
            pipeline_run=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
            project=project,
            location=location,
        ).set_display_name("register-challenger").set_caching_options(False)
    retry_google_calls()  # every task that calls Google or runs a job: .retries

"""Pipelines of a user's own, for preflight, estimate and local-run tests: the library's job
components with shapes of the user's choosing, in nested groups and wired to other tasks.

No `from __future__ import annotations`: KFP reads the signature's annotations as objects.
"""

from kfp import dsl

from vertex_retrain.components.hp_tune import hp_tune
from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.components.train_custom_job import train_custom_job

IMAGE = f"europe-west4-docker.pkg.dev/my-project/training/mytrainer-cuda@sha256:{'1' * 64}"
"""The user's training image (FROM nvidia/cuda), built by build_container."""
LEARNING_RATE = {
    "parameterId": "lr",
    "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1},
    "scaleType": "UNIT_LOG_SCALE",
}


@dsl.pipeline(name="a100-times-three")
def a100_times_three() -> None:
    """Three A100s on an N1 machine: Vertex refuses it (A100s come only with A2 machines)."""
    train_custom_job(
        backend="vertex",
        display_name="linear",
        base_output_directory="gs://my-bucket/runs",
        python_module="mytrainer.task",
        image_uri=IMAGE,
        machine_type="n1-standard-4",
        accelerator_type="NVIDIA_TESLA_A100",
        accelerator_count=3,
    ).set_display_name("train")


@dsl.pipeline(name="shaped-by-parameters")
def shaped_by_parameters(
    backend: str = "vertex",
    machine_type: str = "a2-highgpu-1g",
    accelerators: int = 1,
    labels: dict = {},  # noqa: B006 - KFP reads defaults from the signature
) -> None:
    """The job's shape comes from the pipeline's parameters (defaults, or --param)."""
    train_custom_job(
        labels=labels,
        backend=backend,
        display_name="linear",
        base_output_directory="gs://my-bucket/runs",
        python_module="mytrainer.task",
        image_uri=IMAGE,
        machine_type=machine_type,
        accelerator_type="NVIDIA_TESLA_A100",
        accelerator_count=accelerators,
    ).set_display_name("train")


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def image_location() -> str:
    """Where a build put the image: known only when the pipeline runs."""
    return IMAGE


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def announce(message: str) -> None:
    """An exit task."""
    print(message)


@dsl.pipeline(name="nested-jobs")
def nested_jobs(tune: bool = False, trial_accelerators: int = 3) -> None:
    """A tuning study under a condition, inside an exit handler; the training job's image is
    another task's output."""
    with dsl.ExitHandler(announce(message="done")):
        built = image_location()
        with dsl.If(tune == True):  # noqa: E712 - KFP builds a condition from ==
            hp_tune(
                backend="vertex",
                display_name="study",
                base_output_directory="gs://my-bucket/runs",
                parameter_specs=[LEARNING_RATE],
                metric_id="rmse",
                goal="MINIMIZE",
                python_module="mytrainer.task",
                image_uri=IMAGE,
                accelerator_count=trial_accelerators,
            ).set_display_name("tune")
        train_custom_job(
            backend="vertex",
            display_name="linear",
            base_output_directory="gs://my-bucket/runs",
            python_module="mytrainer.task",
            image_uri=built.output,
            machine_type="n1-standard-4",
            accelerator_type="",
            accelerator_count=0,
            scheduling_strategy="STANDARD",
        ).set_display_name("train")


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def accelerator_named(name: str) -> str:
    """The accelerator type, as another task's output: known only when the run has started."""
    return name


@dsl.pipeline(name="impossible-locally")
def impossible_locally(backend: str = "local") -> None:
    """An A100 on an N1 machine, known only at run time (so no preflight sees it), run here:
    the local run must say why it failed."""
    accelerator = accelerator_named(name="NVIDIA_TESLA_A100").set_caching_options(False)
    train_custom_job(
        backend=backend,
        display_name="linear",
        base_output_directory="gs://my-bucket/runs",
        python_module="mytrainer.task",
        image_uri=IMAGE,
        machine_type="n1-standard-8",
        accelerator_type=accelerator.output,
        accelerator_count=1,
    ).set_caching_options(False)


@dsl.pipeline(name="register-only")
def register_only(backend: str = "vertex", model_uri: str = "gs://b/model") -> None:
    """Registers a model that exists; passes no project or location (Vertex's placeholders)."""
    from vertex_retrain.components.register_model import register_model

    model = dsl.importer(artifact_uri=model_uri, artifact_class=dsl.Model, reimport=False)
    register_model(
        backend=backend,
        model=model.output,
        display_name="m",
        serving_image_uri="example.com/serve:1",
    )


@dsl.pipeline(name="week-only")
def week_only() -> str:
    """The run's week, from the placeholders only Vertex resolves (kfp.local alone cannot)."""
    from vertex_retrain.components.data_window import data_window

    window = data_window(
        scheduled_time=dsl.PIPELINE_JOB_SCHEDULE_TIME_UTC_PLACEHOLDER,
        created_time=dsl.PIPELINE_JOB_CREATE_TIME_UTC_PLACEHOLDER,
    ).set_caching_options(False)
    return window.outputs["as_of"]

"""A user's weekly pipeline in small: plan_training reads the trainer's warm-start declaration
from ``source_uri`` and the training job takes its plan, for the tests of the estimate's
typical month (vertex_retrain.cli.trainer_declaration).

No `from __future__ import annotations`: KFP reads the signature's annotations as objects.
"""

from kfp import dsl

from vertex_retrain.components.plan_training import plan_training
from vertex_retrain.components.train_custom_job import train_custom_job

IMAGE = f"europe-west4-docker.pkg.dev/my-project/training/mytrainer@sha256:{'1' * 64}"


@dsl.pipeline(name="planned-training")
def planned_training(
    source_uri: str,
    backend: str = "vertex",
    warm_start: bool = True,
    full_retrain_every_weeks: int = 4,
    expected_training_hours: float = 2.0,
    expected_warm_training_hours: float = 0.5,
) -> None:
    """Plans the week from the trainer's declaration, then trains as planned."""
    plan = plan_training(
        backend=backend,
        source_uri=source_uri,
        model_display_name="mymodel",
        as_of="2026-01-05",
        warm_start=warm_start,
        full_retrain_every_weeks=full_retrain_every_weeks,
    ).set_caching_options(False)
    train_custom_job(
        backend=backend,
        display_name="mymodel",
        base_output_directory="gs://my-bucket/runs",
        python_module="mytrainer.task",
        image_uri=IMAGE,
        machine_type="n1-standard-8",
        accelerator_type="NVIDIA_TESLA_T4",
        accelerator_count=1,
        warm_start_args=plan.outputs["warm_start_args"],
    ).set_display_name("train")

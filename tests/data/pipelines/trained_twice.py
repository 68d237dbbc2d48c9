"""A user's pipeline with two tasks that build the same job from the same parameters, as the
weekly template's ``train`` and ``train-full`` do, for the test that preflight says a bad job
setting once (vertex_retrain.cli.job_tasks.problems_by_task).

No `from __future__ import annotations`: KFP reads the signature's annotations as objects.
"""

from kfp import dsl

from vertex_retrain.components.train_custom_job import train_custom_job

IMAGE = f"europe-west4-docker.pkg.dev/my-project/training/mytrainer@sha256:{'1' * 64}"


@dsl.pipeline(name="trained-twice")
def trained_twice(machine_type: str = "n1-standard-8") -> None:
    """Trains, then trains again from scratch: the same job twice."""
    for name in ("train-full", "train"):
        train_custom_job(
            backend="vertex",
            display_name="mymodel",
            base_output_directory="gs://my-bucket/runs",
            python_module="mytrainer.task",
            image_uri=IMAGE,
            machine_type=machine_type,
            accelerator_type="NVIDIA_TESLA_T4",
            accelerator_count=1,
        ).set_display_name(name)

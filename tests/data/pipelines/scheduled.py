"""A small weekly pipeline that a test schedule runs: one training job, valid on Vertex.

It stands for a user's pipeline in the schedule tests (tests/data/schedules/weekly.yaml names
it), independent of the library's templates. No `from __future__ import annotations`: KFP
reads the signature's annotations as objects.
"""

from kfp import dsl

from vertex_retrain.components.train_custom_job import train_custom_job


@dsl.pipeline(name="weekly-retraining")
def weekly(
    backend: str = "vertex",
    accelerator_count: int = 1,
    image_uri: str = "us-docker.pkg.dev/shop-ml/training/trainer-cuda@sha256:" + "1" * 64,
) -> None:
    """Trains once a week on one T4, in the team's image (built FROM nvidia/cuda)."""
    train_custom_job(
        backend=backend,
        display_name="weekly-training",
        base_output_directory="gs://shop-ml/runs",
        python_module="trainer.task",
        image_uri=image_uri,
        accelerator_count=accelerator_count,
    ).set_display_name("train")

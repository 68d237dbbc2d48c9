"""A scheduled pipeline with a parameter that has no default (schedule tests)."""

from kfp import dsl

from vertex_retrain.components.train_custom_job import train_custom_job


@dsl.pipeline(name="weekly-retraining")
def weekly(
    data_uri: str,
    backend: str = "vertex",
    image_uri: str = "us-docker.pkg.dev/shop-ml/training/trainer-cuda@sha256:" + "1" * 64,
) -> None:
    """Trains once a week; ``data_uri`` has no default, so every run must be given it."""
    train_custom_job(
        backend=backend,
        display_name="weekly-training",
        base_output_directory=data_uri,
        python_module="trainer.task",
        image_uri=image_uri,
    ).set_display_name("train")

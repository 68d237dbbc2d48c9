"""The drink shops' pipelines: the library's templates configured for the chain.

2,000 shops retrain their "guess your order" recommender (a PyTorch model with a custom loss,
``trainer/``) every Monday on the members' purchases. Its jobs run the image ``trainer/Dockerfile``
builds (CUDA 13.0, torch 2.13), by digest. Everything specific to the chain is
here: the bucket, the trainer's modules and flags, the dataset and evaluation declarations,
the serving image and the sample instances a new deployment must answer. The library holds
none of it.

    vertex-retrain run examples/drink_shops/pipelines.py:weekly --local
    vertex-retrain compile examples/drink_shops/pipelines.py:weekly
"""

from __future__ import annotations

from pathlib import Path

from vertex_retrain.contracts.dataset import load_dataset_declaration
from vertex_retrain.contracts.evaluation_declaration import load_evaluation_declaration
from vertex_retrain.pipelines import configure, train_only, weekly_retraining

HERE = Path(__file__).resolve().parent

BUCKET = "gs://drink-shops-ml"
"""The chain's Cloud Storage bucket (locally: ``$VERTEX_LOCAL_ROOT/gcs/drink-shops-ml``)."""

DATA_URI = f"{BUCKET}/transactions"
SOURCE_URI = f"{BUCKET}/source/trainer"
PACKAGES_URI = f"{BUCKET}/packages"
PACKAGE_URI = f"{PACKAGES_URI}/vertex_retrain_trainer-1.0.0-py3-none-any.whl"
"""The trainer's wheel as ``weekly`` builds it (a local deployment serves from it)."""

TRAINING_IMAGE = "us-docker.pkg.dev/drink-shops-ml/training/trainer"
"""Where ``trainer/Dockerfile`` is built; the jobs run it by digest."""

MODEL = "guess-your-order"

SAMPLE_INSTANCES = [{"member_id": 1, "store_id": 1, "timestamp": "2026-07-01T15:00:00"}]
"""What a new deployment must answer before it gets traffic."""

TUNING_PARAMETERS = [
    {
        "parameterId": "learning_rate",
        "doubleValueSpec": {"minValue": 1e-4, "maxValue": 3e-2},
        "scaleType": "UNIT_LOG_SCALE",
    },
    {"parameterId": "embedding_dim", "discreteValueSpec": {"values": [16, 32, 64]}},
]

COMMON = dict(
    data_uri=DATA_URI,
    source_uri=SOURCE_URI,
    image_destination=TRAINING_IMAGE,
    dataset_declaration=load_dataset_declaration(HERE / "dataset.yaml"),
    evaluation_declaration=load_evaluation_declaration(HERE / "evaluation.yaml"),
    training_module="trainer.task",
    evaluation_module="trainer.evaluate",
    output_root=f"{BUCKET}/runs",
    model_display_name=MODEL,
    serving_image_uri=f"us-docker.pkg.dev/drink-shops-ml/serving/{MODEL}:latest",
    serving_command=["python", "-m", "trainer.serve"],
    serving_extras=["serve"],
    sample_instances=SAMPLE_INSTANCES,
    # Transaction times are local times in Taipei; the Monday 03:00 run there cuts the week.
    data_time_zone="Asia/Taipei",
    training_args=["--epochs", "4", "--batch_size", "512"],
    hyperparameters={"learning_rate": 0.005, "embedding_dim": 32},
)

weekly = configure(
    weekly_retraining,
    name="drink-shops-weekly",
    description="Weekly retraining of the drink shops' 'guess your order' recommender.",
    package_destination=PACKAGES_URI,
    endpoint_display_name=MODEL,
    tuning_parameters=TUNING_PARAMETERS,
    tuning_metric="ndcg_at_10",
    **COMMON,
)
"""The Monday retraining (schedules.yaml runs it)."""

experiment = configure(
    train_only,
    name="drink-shops-experiment",
    description="An experiment on the drink shops' recommender, registered as a challenger.",
    package_uri=PACKAGE_URI,
    **COMMON,
)
"""One candidate for an experiment, registered as a challenger."""

"""The daily demand team's pipelines: the library's templates configured for its forecaster.

A grocery chain forecasts the units each store sells of each item per day with a
scikit-learn regressor (``demand_forecast/``) and retrains it every Monday on the sales up to
Sunday. Everything specific to the team is here: its bucket, its package's modules and flags,
the dataset and evaluation declarations, the training image (``demand_forecast/Dockerfile``:
scikit-learn on CPU, no accelerator, on-demand), the serving image and command, and the
instances a new deployment must answer. The library holds none of it.

    python -m demand_forecast.data generate --out=gs://daily-demand-ml/data
    vertex-retrain run examples/daily_demand/pipelines.py:weekly --local \
        --param source_uri=examples/daily_demand/demand_forecast
    vertex-retrain preflight examples/daily_demand/pipelines.py:weekly --location us-central1 \
        --service-account retrain@PROJECT.iam.gserviceaccount.com \
        --pipeline-root gs://daily-demand-ml/pipeline-root
"""

from __future__ import annotations

from pathlib import Path

from vertex_retrain.contracts.dataset import load_dataset_declaration
from vertex_retrain.contracts.evaluation_declaration import load_evaluation_declaration
from vertex_retrain.pipelines import configure, train_only, weekly_retraining

HERE = Path(__file__).resolve().parent

BUCKET = "gs://daily-demand-ml"
"""The team's Cloud Storage bucket (locally: ``$VERTEX_LOCAL_ROOT/gcs/daily-demand-ml``)."""

DATA_URI = f"{BUCKET}/data"
SOURCE_URI = f"{BUCKET}/source/demand_forecast"
PACKAGES_URI = f"{BUCKET}/packages"
PACKAGE_URI = f"{PACKAGES_URI}/demand_forecast-0.1.0-py3-none-any.whl"
"""The package's wheel as ``weekly`` builds it (a local deployment serves from it)."""

MODEL = "daily-demand"

TRAINING_IMAGE = "us-docker.pkg.dev/daily-demand-ml/training/demand-forecast"
"""Where ``demand_forecast/Dockerfile`` is built (Python 3.12, scikit-learn 1.6); the jobs run it
by digest. Google's scikit-learn training image, sklearn-cpu.1-6, ended on 2026-07-11."""

SAMPLE_INSTANCES = [
    {"store": "S01", "item": "I01", "day": "2025-03-03", "price": 2.5, "on_promo": True}
]
"""What a new deployment must answer before it gets traffic."""

TUNING_PARAMETERS = [
    {
        "parameterId": "learning_rate",
        "doubleValueSpec": {"minValue": 0.02, "maxValue": 0.3},
        "scaleType": "UNIT_LOG_SCALE",
    },
    {
        "parameterId": "max_leaf_nodes",
        "integerValueSpec": {"minValue": 8, "maxValue": 63},
        "scaleType": "UNIT_LINEAR_SCALE",
    },
]

COMMON = dict(
    data_uri=DATA_URI,
    source_uri=SOURCE_URI,
    image_destination=TRAINING_IMAGE,
    dataset_declaration=load_dataset_declaration(HERE / "dataset.yaml"),
    evaluation_declaration=load_evaluation_declaration(HERE / "evaluation.yaml"),
    training_module="demand_forecast.task",
    evaluation_module="demand_forecast.evaluate",
    output_root=f"{BUCKET}/runs",
    model_display_name=MODEL,
    serving_image_uri=f"us-docker.pkg.dev/daily-demand-ml/serving/{MODEL}:latest",
    serving_command=["python", "-m", "demand_forecast.serve"],
    serving_extras=["serve"],
    sample_instances=SAMPLE_INSTANCES,
    machine_type="n1-standard-4",
    accelerator_type="",
    accelerator_count=0,
    # A few minutes of CPU: on-demand costs little, and a Spot preemption would only delay it.
    scheduling_strategy="STANDARD",
    timeout_seconds=3600,
    # The stores close at night in Chicago; a day's sales are complete after local midnight.
    data_time_zone="America/Chicago",
    # Each store sells every item every day: a store's family mix is worth comparing from 20
    # rows a day (the default wants 100, a weekly volume).
    data_gate_thresholds={"min_group_rows_for_mix": 20},
    # The last week is the gate (every weekday once), the week before it is for tuning; the
    # days before them train.
    selection_periods=7,
    gate_periods=7,
    training_args=["--seed=0", "--min_samples_leaf=20"],
    hyperparameters={"learning_rate": 0.1, "max_iter": 200, "max_leaf_nodes": 31},
)

weekly = configure(
    weekly_retraining,
    name="daily-demand-weekly",
    description="Weekly retraining of the daily demand forecaster (units per store, item, day).",
    package_destination=PACKAGES_URI,
    endpoint_display_name=MODEL,
    tuning_parameters=TUNING_PARAMETERS,
    tuning_metric="rmse",
    tuning_goal="MINIMIZE",
    expected_training_hours=0.1,
    **COMMON,
)
"""The Monday retraining (schedules.yaml runs it)."""

experiment = configure(
    train_only,
    name="daily-demand-experiment",
    description="An experiment on the daily demand forecaster, registered as a challenger.",
    package_uri=PACKAGE_URI,
    **COMMON,
)
"""One candidate for an experiment, registered as a challenger."""

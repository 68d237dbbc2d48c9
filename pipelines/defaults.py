"""Defaults shared by the drink shops' pipelines: one place to read what a run costs."""

from __future__ import annotations

BUCKET = "gs://drink-shops-ml"
"""Cloud Storage bucket of the worked example (maps to the local storage root locally)."""

TRANSACTIONS_URI = f"{BUCKET}/transactions"
SOURCE_URI = f"{BUCKET}/source/trainer"
PACKAGES_URI = f"{BUCKET}/packages"
OUTPUT_ROOT = f"{BUCKET}/runs"
MODEL_DISPLAY_NAME = "guess-your-order"
ENDPOINT_DISPLAY_NAME = "guess-your-order"

# The seed's recommendation for this model: a custom PyTorch model with a custom loss wants a
# GPU (not a TPU: custom ops and branching), one T4 is the cost-efficient start, and Spot
# suits a job that checkpoints (the trainer checkpoints on SIGTERM and resumes exactly).
MACHINE_TYPE = "n1-standard-8"
ACCELERATOR_TYPE = "NVIDIA_TESLA_T4"
ACCELERATOR_COUNT = 1
SCHEDULING_STRATEGY = "SPOT"
EXECUTOR_IMAGE_URI = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
SERVING_IMAGE_URI = "us-docker.pkg.dev/drink-shops-ml/serving/guess-your-order:latest"
SERVING_COMMAND = ["python", "-m", "trainer.serve"]
SAMPLE_INSTANCES = [{"member_id": 1, "store_id": 1, "timestamp": "2026-07-01T15:00:00"}]
"""What a new deployment must answer before it gets traffic."""

# Expected run time of one weekly training job on the default machine, used by cost
# estimates (compile.py estimate): a budget figure, not a measurement.
EXPECTED_TRAINING_HOURS = 2.0

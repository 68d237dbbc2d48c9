"""Defaults shared by the drink shops' pipelines: one place to read what a run costs.

The job shape (machine, accelerators, strategy, timeout, executor image, expected training
time) and the tuning study's size are not repeated here: :data:`TRAINING` and :data:`TUNING`
are the library's own definitions (:mod:`vertex_retrain.specs.defaults`), the ones the
components and request types default to, so a pipeline that sets nothing and a component
called alone run the same job. Only what belongs to this worked example is defined here.
"""

from __future__ import annotations

from vertex_retrain.contracts.data_gate import GateThresholds
from vertex_retrain.rules.retention import MIN_KEEP_LAST_N
from vertex_retrain.specs.defaults import TRAINING, TUNING

__all__ = [
    "BUCKET",
    "DATA_GATE_THRESHOLDS",
    "DATA_TIME_ZONE",
    "ENDPOINT_DISPLAY_NAME",
    "MODEL_DISPLAY_NAME",
    "OUTPUT_ROOT",
    "PACKAGES_URI",
    "PARAMETER_RANGES",
    "SAMPLE_INSTANCES",
    "SERVING_COMMAND",
    "SERVING_EXTRAS",
    "SERVING_IMAGE_URI",
    "SOURCE_URI",
    "TRAINING",
    "TRANSACTIONS_URI",
    "TUNING",
]

BUCKET = "gs://drink-shops-ml"
"""Cloud Storage bucket of the worked example (maps to the local storage root locally)."""

TRANSACTIONS_URI = f"{BUCKET}/transactions"
SOURCE_URI = f"{BUCKET}/source/trainer"
PACKAGES_URI = f"{BUCKET}/packages"
OUTPUT_ROOT = f"{BUCKET}/runs"
MODEL_DISPLAY_NAME = "guess-your-order"
ENDPOINT_DISPLAY_NAME = "guess-your-order"

SERVING_IMAGE_URI = "us-docker.pkg.dev/drink-shops-ml/serving/guess-your-order:latest"
SERVING_COMMAND = ["python", "-m", "trainer.serve"]
SERVING_EXTRAS = ["serve"]
"""Extras of the training package the serving command needs (the local backend serves the
version from the package, in an environment with these extras)."""
SAMPLE_INSTANCES = [{"member_id": 1, "store_id": 1, "timestamp": "2026-07-01T15:00:00"}]
"""What a new deployment must answer before it gets traffic."""

DATA_TIME_ZONE = "Asia/Taipei"
"""Where the shops are: transaction timestamps are local times there, and a run's schedule time
is cut to its date there (the weekly schedule fires Monday 03:00 Taipei time, so ``as_of`` is
that Monday and the window ends with Sunday's sales)."""

DATA_GATE_THRESHOLDS: dict[str, float | int] = GateThresholds().as_dict()
"""The data gate's thresholds (the library's defaults), shown as the pipelines' parameter."""

WEEK_S = 7 * 24 * 3600
PARAMETER_RANGES: dict[str, tuple[int | float, int | float]] = {
    "validation_weeks": (1, 52),
    "max_trial_count": (1, 1000),
    "parallel_trial_count": (1, 100),
    "epochs": (1, 1000),
    "learning_rate": (1e-7, 1.0),
    "embedding_dim": (1, 1024),
    "batch_size": (1, 65536),
    "accelerator_count": (0, 16),
    "worker_count": (0, 64),
    "timeout_seconds": (60, WEEK_S),
    "expected_training_hours": (0, 168),
    "min_improvement": (-1.0, 1.0),
    "traffic_percentage": (0, 100),
    "keep_last_n": (MIN_KEEP_LAST_N, 100),
    "local_preemption_after_seconds": (0, WEEK_S),
    "spot_fallback_deadline_seconds": (0, WEEK_S),
}
"""The allowed range (both ends included) of every numeric parameter of the pipelines here.

``compile.py run``, ``estimate``, ``demo`` and ``preflight`` refuse a value outside it before
anything runs, naming the parameter and the range (`vertex_retrain.cli.params`); a run that
started with ``accelerator_count=-1`` or ``batch_size=0`` would only fail later, in a step,
with a message about something else. tests/test_params.py checks that every numeric
parameter of every pipeline has a range here and that its default lies inside it."""

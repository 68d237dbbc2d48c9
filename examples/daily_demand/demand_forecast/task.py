"""Training entry point: ``python -m demand_forecast.task --data=DATASET [--name=value ...]``.

The trainer contract of vertex-retrain's ``train_custom_job``: ``--data`` is the prepared
dataset folder (its ``manifest.json`` names the training and selection days), the
hyperparameters arrive as ``--name=value`` flags (integral floats accepted where a whole
number is expected, as a tuning service may send them), and the model goes to
``AIP_MODEL_DIR`` (a ``gs://`` URI on Vertex, read and written under the ``/gcs`` mount as
Vertex documents; ``--output_dir`` when the variable is unset, e.g. run by hand).

The regressor trains on the training days only; its RMSE and MAE on the selection days are
logged, saved with the model and, when cloudml-hypertune is installed (the prebuilt images
ship it), reported as the tuning metric ``rmse`` (lower is better). Bad flags or data: one
line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from demand_forecast.paths import mounted

log = logging.getLogger("demand_forecast.task")
TUNING_METRIC = "rmse"

HYPERPARAMETERS: dict[str, Any] = {
    "learning_rate": 0.1,
    "max_iter": 200,
    "max_leaf_nodes": 31,
    "min_samples_leaf": 20,
    "l2_regularization": 0.0,
    "seed": 0,
}
"""Every hyperparameter flag and its default."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def whole(text: str) -> int:
    """A whole-number flag value; ``16.0`` counts as 16."""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or not number.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(number)


def build_parser() -> argparse.ArgumentParser:
    """The contract's ``--data``, the hyperparameters and ``--output_dir``."""
    parser = _Parser(prog="python -m demand_forecast.task", description=__doc__)
    parser.add_argument("--data", required=True, help="prepared dataset folder (manifest.json)")
    parser.add_argument(
        "--output_dir", default="demand-model", help="model folder when AIP_MODEL_DIR is unset"
    )
    parser.add_argument("--learning_rate", type=float, default=HYPERPARAMETERS["learning_rate"])
    parser.add_argument("--max_iter", type=whole, default=HYPERPARAMETERS["max_iter"])
    parser.add_argument("--max_leaf_nodes", type=whole, default=HYPERPARAMETERS["max_leaf_nodes"])
    parser.add_argument(
        "--min_samples_leaf", type=whole, default=HYPERPARAMETERS["min_samples_leaf"]
    )
    parser.add_argument(
        "--l2_regularization", type=float, default=HYPERPARAMETERS["l2_regularization"]
    )
    parser.add_argument("--seed", type=whole, default=HYPERPARAMETERS["seed"])
    return parser


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if not 0 < args.learning_rate <= 1:
        parser.error(f"--learning_rate must be in (0, 1], got {args.learning_rate}")
    if not 1 <= args.max_iter <= 10000:
        parser.error(f"--max_iter must be between 1 and 10000, got {args.max_iter}")
    if args.max_leaf_nodes < 2:
        parser.error(f"--max_leaf_nodes must be >= 2, got {args.max_leaf_nodes}")
    if args.min_samples_leaf < 1:
        parser.error(f"--min_samples_leaf must be >= 1, got {args.min_samples_leaf}")
    if args.l2_regularization < 0:
        parser.error(f"--l2_regularization must be >= 0, got {args.l2_regularization}")


def report_tuning_metric(value: float) -> bool:
    """Reports ``rmse`` to a tuning study through cloudml-hypertune, when it is installed."""
    try:
        import hypertune
    except ImportError:
        return False
    hypertune.HyperTune().report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag=TUNING_METRIC, metric_value=value, global_step=1
    )
    return True


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Fits the model on the training days, scores the selection days and saves it.

    Returns:
        The saved metadata.
    """
    import sklearn

    from demand_forecast.dataset import read_prepared
    from demand_forecast.features import FEATURES, build_profile, history_of, sales_features
    from demand_forecast.model import DemandModel, fit_regressor, save_model
    from demand_forecast.reference import error_metrics

    data = read_prepared(args.data)
    profile = build_profile(data.train, data.items)
    history = history_of(data.train)
    hyperparameters = {name: getattr(args, name) for name in HYPERPARAMETERS}
    regressor = fit_regressor(
        sales_features(profile, data.train, history), data.train.units, hyperparameters
    )
    manifest = data.manifest
    metadata: dict[str, Any] = {
        "sklearn_version": sklearn.__version__,
        "features": list(FEATURES),
        "hyperparameters": hyperparameters,
        "trained_on": {
            "data_uri": manifest.get("data_uri"),
            "content_hash": manifest.get("content_hash"),
            "days": manifest["train"]["periods"],
            "rows": len(data.train),
        },
    }
    model = DemandModel(regressor, profile, metadata)
    if len(data.selection):
        scores = error_metrics(data.selection.units, model.predict_sales(data.selection, history))
        metadata["selection"] = {
            "days": manifest["selection"]["periods"],
            "rows": len(data.selection),
            **scores,
        }
        log.info("selection rmse %.4f, mae %.4f", scores["rmse"], scores["mae"])
        report_tuning_metric(scores["rmse"])
    folder = mounted(os.environ.get("AIP_MODEL_DIR") or args.output_dir)
    save_model(model, folder)
    log.info("trained on %d rows; model written to %s", len(data.train), folder)
    return metadata


def main(argv: Sequence[str] | None = None) -> int:
    """Parses the flags and trains.

    Returns:
        0 on success, 2 on bad flags or unusable data.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    _check(args, parser)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        train(args)
    except (FileNotFoundError, KeyError, ValueError) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

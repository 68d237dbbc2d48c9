"""Evaluation entry point: ``python -m demand_forecast.evaluate --candidate-model-dir=URI ...``.

vertex-retrain's evaluation contract (docs/components.md#evaluation-contract): ``evaluate_model``
runs this module as a job with ``--candidate-model-dir``, ``--champion-model-dir`` (absent
when there is no champion), ``--data`` (the prepared dataset folder) and ``--metrics-output``,
and reads back the metrics file it writes::

    {"format": "vertex-retrain-evaluation-metrics/v1",
     "candidate": {"rmse": ..., "mae": ...},
     "champion": {"rmse": ..., "mae": ...} | null,
     "references": {"seasonal_naive": {"rmse": ..., "mae": ...}}}

Every forecaster is scored on the same rows, the gate days (the newest, which no training or
tuning saw): the models with lags from the training days (as they were trained, as they would
serve), the seasonal naive reference with the actual units a week earlier. The package does
not import the library, so the names are repeated here. Paths are read and written under
the ``/gcs`` mount (:func:`demand_forecast.paths.mounted`). A missing model or dataset: one
line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from demand_forecast.paths import atomic_write_json, mounted

METRICS_FORMAT = "vertex-retrain-evaluation-metrics/v1"
REFERENCE = "seasonal_naive"

log = logging.getLogger("demand_forecast.evaluate")


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The evaluation contract's four flags."""
    parser = _Parser(prog="python -m demand_forecast.evaluate", description=__doc__)
    parser.add_argument("--candidate-model-dir", required=True, help="candidate model folder")
    parser.add_argument(
        "--champion-model-dir", default="", help="champion model folder; absent without one"
    )
    parser.add_argument("--data", required=True, help="prepared dataset folder (manifest.json)")
    parser.add_argument("--metrics-output", required=True, help="metrics JSON file to write")
    return parser


def evaluation_report(candidate_dir: str, champion_dir: str, data_uri: str) -> dict[str, Any]:
    """Scores the candidate, the champion (if any) and the seasonal naive reference.

    Args:
        candidate_dir: The candidate's model folder.
        champion_dir: The champion's model folder, or ``""``.
        data_uri: The prepared dataset folder.

    Returns:
        The metrics file's content.

    Raises:
        FileNotFoundError: A model folder or the dataset is missing.
        ValueError: The dataset has no gate rows, or a model cannot be loaded.
    """
    from demand_forecast.dataset import read_prepared
    from demand_forecast.features import history_of
    from demand_forecast.model import load_model
    from demand_forecast.reference import error_metrics, seasonal_naive

    data = read_prepared(data_uri)
    if not len(data.gate):
        raise ValueError(
            f"--data={data_uri}: the gate days hold no rows to score (a training dataset "
            "withholds them: evaluate on the prepared dataset)"
        )
    actual = data.gate.units
    trained_history = history_of(data.train)

    def scores(model_dir: str) -> dict[str, float]:
        model = load_model(mounted(model_dir))
        return error_metrics(actual, model.predict_sales(data.gate, trained_history))

    everything = history_of(data.train.concat(data.selection).concat(data.gate))
    return {
        "format": METRICS_FORMAT,
        "candidate": scores(candidate_dir),
        "champion": scores(champion_dir) if champion_dir else None,
        "references": {REFERENCE: error_metrics(actual, seasonal_naive(data.gate, everything))},
        "rows": len(data.gate),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Parses the contract's flags, scores, and writes the metrics file atomically.

    Returns:
        0 on success, 2 when a model or the dataset is missing or unusable.
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        report = evaluation_report(args.candidate_model_dir, args.champion_model_dir, args.data)
    except (FileNotFoundError, KeyError, ValueError) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    atomic_write_json(mounted(args.metrics_output), report)
    log.info(
        "rmse: candidate %.4f, champion %s, seasonal naive %.4f; wrote %s",
        report["candidate"]["rmse"],
        f"{report['champion']['rmse']:.4f}" if report["champion"] else "none",
        report["references"][REFERENCE]["rmse"],
        args.metrics_output,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

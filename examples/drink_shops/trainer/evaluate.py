"""The evaluation job: `python -m trainer.evaluate --candidate-model-dir URI --data URI ...`.

`evaluate_model` runs this entry point as a CustomJob from the training wheel, so full-scale
scoring gets a real machine, and compares what it writes. It scores the candidate (and the
champion) with `trainer.scoring` and writes a metrics file. The flags and the file are
vertex-retrain's evaluation contract (docs/components.md#evaluation-contract); the trainer does
not import the library, so the names are repeated here and tests/test_contracts.py checks that
both sides agree. The metric code itself is `trainer.metrics`.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from trainer.paths import atomic_write_json, resolve

METRICS_FORMAT = "vertex-retrain-evaluation-metrics/v1"
"""The contract's `format` value for the metrics file."""

log = logging.getLogger("trainer.evaluate")


def build_parser() -> argparse.ArgumentParser:
    """The contract's flags, plus the trainer's own scoring options."""
    parser = argparse.ArgumentParser(prog="python -m trainer.evaluate", description=__doc__)
    parser.add_argument(
        "--candidate-model-dir", required=True, help="candidate model folder (gs://, /gcs/, local)"
    )
    parser.add_argument(
        "--champion-model-dir", default="", help="champion model folder; omit without a champion"
    )
    parser.add_argument("--data", required=True, help="prepared dataset folder or manifest.json")
    parser.add_argument("--metrics-output", required=True, help="metrics JSON file to write")
    parser.add_argument(
        "--baseline-weeks",
        type=int,
        default=4,
        help="training weeks the popularity baseline counts",
    )
    parser.add_argument("--num-threads", type=int, default=0, help="torch CPU threads (0: default)")
    return parser


def finite_metrics(metrics: Mapping[str, float], whose: str) -> dict[str, float]:
    """Drops metrics without a finite value (JSON has none; e.g. a lift over a zero baseline)."""
    kept = {}
    for name, value in metrics.items():
        if math.isfinite(value):
            kept[name] = float(value)
        else:
            log.warning("leaving out the %s's %s = %s: not a finite number", whose, name, value)
    return kept


def evaluation_report(args: argparse.Namespace) -> dict[str, Any]:
    """Scores the candidate (and the champion) on the dataset's validation weeks.

    Returns:
        The metrics file's content: `format`, `candidate`, `champion` (or None) and the
        `references` on the same rows: per-store `popularity` and "reorder your `usual`".
    """
    from trainer.scoring import evaluate_exported_model

    if args.num_threads:
        import torch

        torch.set_num_threads(args.num_threads)
    candidate = evaluate_exported_model(
        args.candidate_model_dir, args.data, baseline_weeks=args.baseline_weeks
    )
    champion = None
    if args.champion_model_dir:
        scores = evaluate_exported_model(
            args.champion_model_dir, args.data, baseline_weeks=args.baseline_weeks
        )
        champion = finite_metrics(scores["model"], "champion")
    return {
        "format": METRICS_FORMAT,
        "candidate": finite_metrics(candidate["model"], "candidate"),
        "champion": champion,
        "references": {
            name: finite_metrics(metrics, name)
            for name, metrics in candidate.items()
            if name != "model"
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the contract's flags, score, and write the metrics file atomically.

    Returns:
        0 on success, 2 when a model or the dataset is missing or unusable.
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        report = evaluation_report(args)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    atomic_write_json(resolve(args.metrics_output), report)
    log.info(
        "candidate ndcg_at_10 %s, champion %s; wrote %s",
        report["candidate"].get("ndcg_at_10"),
        (report["champion"] or {}).get("ndcg_at_10"),
        args.metrics_output,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

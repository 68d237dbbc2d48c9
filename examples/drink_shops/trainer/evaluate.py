"""The evaluation job: `python -m trainer.evaluate --candidate-model-dir URI --data URI ...`.

`evaluate_model` runs this entry point as a CustomJob from the training wheel, so full-scale
scoring gets a real machine, and compares what it writes. It scores the candidate (and the
champion) on the dataset's gate weeks, the same rows for both, with `trainer.scoring`, and
writes a metrics file and, beside it, the per-member scores file the library's paired
bootstrap resamples (`scores.parquet`: one row per member, its rows as `weight`, and each
model's and reference's mean NDCG@10 over them). The flags and the files are vertex-retrain's
evaluation contract (docs/components.md#evaluation-contract); the trainer does not import the
library, so the names are repeated here and tests/test_contracts.py checks that both sides
agree. The metric code itself is `trainer.metrics`.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trainer.paths import atomic_write_bytes, atomic_write_json, resolve

if TYPE_CHECKING:
    from trainer.scoring import ScoredModel

METRICS_FORMAT = "vertex-retrain-evaluation-metrics/v1"
"""The contract's `format` value for the metrics file."""
SCORES_FILE = "scores.parquet"
"""The per-entity scores file, written beside the metrics file."""
SCORED_METRIC = "ndcg_at_10"
"""The metric the scores file holds per member (the evaluation declaration's primary)."""

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


def entity_scores(candidate: ScoredModel, champion: ScoredModel | None) -> bytes:
    """The scores file: per member, its gate rows (`weight`) and each role's mean NDCG@10.

    Columns `entity`, `weight`, `candidate`, `champion` (with a champion) and
    `reference:<name>` per reference; the row-weighted mean of a column is that role's
    NDCG@10 in the metrics file.
    """
    import numpy as np
    import pyarrow as pa

    from trainer.data import parquet_bytes
    from trainer.metrics import RANKERS
    from trainer.scoring import REFERENCES

    members, inverse = np.unique(candidate.member_ids, return_inverse=True)
    weight = np.bincount(inverse, minlength=members.size)

    def mean(gains: np.ndarray) -> np.ndarray:
        return np.asarray(np.bincount(inverse, weights=gains, minlength=members.size) / weight)

    columns: dict[str, Any] = {
        "entity": pa.array(members, pa.int64()),
        "weight": pa.array(weight, pa.int64()),
        "candidate": mean(candidate.gains[:, 0]),
    }
    if champion is not None:
        if not np.array_equal(champion.member_ids, candidate.member_ids):
            raise ValueError("the champion was scored on other rows than the candidate")
        columns["champion"] = mean(champion.gains[:, 0])
    for i, prefix in enumerate(RANKERS[1:], start=1):
        columns[f"reference:{REFERENCES[prefix]}"] = mean(candidate.gains[:, i])
    return parquet_bytes(pa.table(columns))


def evaluation_report(args: argparse.Namespace) -> dict[str, Any]:
    """Scores the candidate (and the champion) on the dataset's gate weeks; writes the
    per-member scores file beside the metrics file.

    Returns:
        The metrics file's content: `format`, `candidate`, `champion` (or None), the
        `references` on the same rows (per-store `popularity`, "reorder your `usual`" and
        `usual_plus_launches`) and `scores` (the scores file and the metric it holds).
    """
    from trainer.scoring import score_exported_model

    if args.num_threads:
        import torch

        torch.set_num_threads(args.num_threads)
    candidate = score_exported_model(
        args.candidate_model_dir, args.data, baseline_weeks=args.baseline_weeks
    )
    champion = None
    if args.champion_model_dir:
        champion = score_exported_model(
            args.champion_model_dir, args.data, baseline_weeks=args.baseline_weeks
        )
    folder, slash, _ = args.metrics_output.rpartition("/")
    scores_path = resolve(f"{folder}{slash}{SCORES_FILE}")  # gs:// keeps its two slashes
    atomic_write_bytes(scores_path, entity_scores(candidate, champion))
    return {
        "format": METRICS_FORMAT,
        "candidate": finite_metrics(candidate.metrics["model"], "candidate"),
        "champion": (
            None if champion is None else finite_metrics(champion.metrics["model"], "champion")
        ),
        "references": {
            name: finite_metrics(metrics, name)
            for name, metrics in candidate.metrics.items()
            if name != "model"
        },
        "scores": {"file": SCORES_FILE, "metric": SCORED_METRIC},
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

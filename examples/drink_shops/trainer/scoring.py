"""Scoring an exported model on a dataset's gate weeks (champion/challenger evaluation).

The evaluation job (`python -m trainer.evaluate`, run by the pipeline's `evaluate_model`)
scores the candidate and the current champion on the same gate weeks, with the same
references, using the code `trainer.task` uses at the end of training (there on the selection
weeks), so the numbers are comparable with the training report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

REFERENCES = {
    "baseline_": "popularity",
    "usual_": "usual",
    "launches_": "usual_plus_launches",
    "recent_": "recent_usual",
}
"""Metric name prefix of each reference ranker -> its name in the metrics file."""


@dataclass(frozen=True)
class ScoredModel:
    """A model and the references scored on one part of a dataset.

    Attributes:
        metrics: ``{"model": {...}, "popularity": {...}, "usual": {...},
            "usual_plus_launches": {...}, "recent_usual": {...}}`` (see ``split_references``).
        member_ids: int64 (rows,): each row's member id, as in the data.
        gains: float64 (rows, rankers): each row's NDCG@10 gain of the model and of each
            reference, in `trainer.metrics.RANKERS` order.
    """

    metrics: dict[str, dict[str, float]]
    member_ids: np.ndarray
    gains: np.ndarray


def score_exported_model(
    model_dir: str, dataset: str, *, part: str = "gate", baseline_weeks: int = 4
) -> ScoredModel:
    """Scores an exported model on a part of ``dataset`` (the gate weeks by default).

    The training weeks are streamed (`trainer.reference`) for the popularity baseline and
    the "usual" references; only the scored rows are held, encoded. A model with a history
    head scores with the history exported with it, as it would serve.

    Args:
        model_dir: A folder written by ``trainer.task`` (local, ``gs://`` or ``/gcs/``).
        dataset: A ``manifest.json``, a folder holding one, or a generated dataset folder.
        part: The manifest part to score: ``gate`` (evaluation) or ``selection``.
        baseline_weeks: Recent training weeks counted by the popularity baseline.

    Raises:
        FileNotFoundError: No model or no dataset at the given place.
        ValueError: The model was trained on a different catalogue of drinks and shops, its
            artifact fails verification, or the manifest lacks the part (a training dataset
            withholds its gate weeks).
    """
    import numpy as np
    import torch

    from trainer.export import load_artifact
    from trainer.features import encode_rows, read_catalogue, read_columns
    from trainer.metrics import score_rows, summarize
    from trainer.model import CatalogueTensors
    from trainer.paths import resolve
    from trainer.reference import count_training_rows
    from trainer.split import load_manifest, manifest_part
    from trainer.train import rows_to_tensors

    manifest = load_manifest(dataset)
    manifest_part(manifest, part)  # a clear error before any model is read
    artifact = load_artifact(resolve(model_dir))
    catalogue = artifact.catalogue
    data_catalogue = read_catalogue(manifest)
    for name in ("drink_ids", "store_ids"):
        if not np.array_equal(getattr(catalogue, name), getattr(data_catalogue, name)):
            raise ValueError(
                f"the model in {model_dir} knows different {name.removesuffix('_ids')}s than "
                f"the dataset {dataset}; score it on data from the same catalogue"
            )
    counts = count_training_rows(manifest, artifact.member_vocab, catalogue, baseline_weeks)
    columns = read_columns(manifest, part)
    rows = encode_rows(columns, artifact.member_vocab, catalogue)
    device = torch.device("cpu")
    scored = score_rows(
        artifact.model,
        CatalogueTensors.build(catalogue, None, device, artifact.history),
        rows_to_tensors(rows, device),
        torch.as_tensor(counts.popularity),
        torch.as_tensor(counts.member_counts),
        torch.as_tensor(counts.recent_counts),
    )
    return ScoredModel(
        metrics=split_references(summarize(scored)),
        member_ids=columns["member_id"],
        gains=scored.gains.numpy(),
    )


def evaluate_exported_model(
    model_dir: str, dataset: str, *, part: str = "gate", baseline_weeks: int = 4
) -> dict[str, dict[str, float]]:
    """The metrics of `score_exported_model`: the model's and each reference's, on `part`."""
    return score_exported_model(
        model_dir, dataset, part=part, baseline_weeks=baseline_weeks
    ).metrics


def split_references(metrics: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Separates each reference's metrics (by prefix) from the model's own (numbers only)."""
    split: dict[str, dict[str, float]] = {"model": {}, **{name: {} for name in REFERENCES.values()}}
    for name, value in metrics.items():
        if not isinstance(value, int | float):
            continue
        prefix = next((p for p in REFERENCES if name.startswith(p)), None)
        if prefix is None:
            split["model"][name] = float(value)
        else:
            split[REFERENCES[prefix]][name.removeprefix(prefix)] = float(value)
    return split

"""Scoring an exported model on a dataset's validation weeks (champion/challenger evaluation).

The evaluation job (`python -m trainer.evaluate`, run by the pipeline's `evaluate_model`)
scores the candidate and the current champion on the same held-out week, with the same
per-store popularity baseline, using the code `trainer.task` uses at the end of training, so
the numbers are comparable with the training report.
"""

from __future__ import annotations

from typing import Any

REFERENCES = {"baseline_": "popularity", "usual_": "usual"}
"""Metric name prefix of each reference ranker -> its name in the metrics file."""


def evaluate_exported_model(
    model_dir: str, dataset: str, *, baseline_weeks: int = 4
) -> dict[str, dict[str, float]]:
    """Scores an exported model on the validation weeks of ``dataset``.

    The training weeks are streamed (`trainer.reference`) for the popularity baseline and
    the "usual" reference; only the validation rows are held, encoded. A model with a history
    head scores with the history exported with it, as it would serve.

    Args:
        model_dir: A folder written by ``trainer.task`` (local, ``gs://`` or ``/gcs/``).
        dataset: A ``manifest.json``, a folder holding one, or a generated dataset folder.
        baseline_weeks: Recent training weeks counted by the popularity baseline.

    Returns:
        ``{"model": {...}, "popularity": {...}, "usual": {...}}``: Recall@10 and NDCG@10 of
        the model (with its margins over "usual" and by segment), of the per-store
        popularity baseline and of "reorder your usual", on the same rows.

    Raises:
        FileNotFoundError: No model or no dataset at the given place.
        ValueError: The model was trained on a different catalogue of drinks and shops, or
            its artifact fails verification.
    """
    import numpy as np
    import torch

    from trainer.export import load_artifact
    from trainer.features import encode_rows, read_catalogue, read_columns
    from trainer.metrics import evaluate
    from trainer.model import CatalogueTensors
    from trainer.paths import resolve
    from trainer.reference import count_training_rows
    from trainer.split import load_manifest
    from trainer.train import rows_to_tensors

    manifest = load_manifest(dataset)
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
    validation = encode_rows(read_columns(manifest, "validation"), artifact.member_vocab, catalogue)
    device = torch.device("cpu")
    metrics = evaluate(
        artifact.model,
        CatalogueTensors.build(catalogue, None, device, artifact.history),
        rows_to_tensors(validation, device),
        torch.as_tensor(counts.popularity),
        torch.as_tensor(counts.member_counts),
    )
    return split_references(metrics)


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

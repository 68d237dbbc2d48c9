"""prepare_dataset's logic: a time-based split written as a dataset manifest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vertex_retrain.steps.backend import gcs_fuse_root


@dataclass(frozen=True)
class PreparedDataset:
    """What the split produced."""

    manifest: dict[str, Any]

    @property
    def train_rows(self) -> int:
        """Rows in the training weeks."""
        return int(self.manifest["train"]["rows"])

    @property
    def validation_rows(self) -> int:
        """Rows in the validation weeks."""
        return int(self.manifest["validation"]["rows"])

    def summary(self) -> dict[str, Any]:
        """Metadata for the KFP ``Dataset`` artifact (shown in the pipeline UI)."""
        return {
            "data_uri": self.manifest["data_uri"],
            "train_weeks": [
                min(self.manifest["train"]["weeks"]),
                max(self.manifest["train"]["weeks"]),
            ],
            "validation_weeks": self.manifest["validation"]["weeks"],
            "train_rows": self.train_rows,
            "validation_rows": self.validation_rows,
            "content_hash": self.manifest["content_hash"],
        }


def prepare(
    *, backend: str, transactions_uri: str, output_dir: str, validation_weeks: int = 1
) -> PreparedDataset:
    """Splits ``transactions_uri`` by time into ``output_dir/manifest.json``.

    The manifest keeps ``transactions_uri`` as given (e.g. ``gs://``), so the training job
    resolves the same files wherever it runs.

    Args:
        backend: ``"vertex"`` or ``"local"``.
        transactions_uri: Folder written by ``python -m trainer.data generate``.
        output_dir: Folder that receives ``manifest.json``.
        validation_weeks: Final weeks held out for validation.

    Returns:
        The split.
    """
    from trainer.split import make_time_split

    with gcs_fuse_root(backend):
        manifest = make_time_split(transactions_uri, output_dir, validation_weeks)
    return PreparedDataset(manifest)

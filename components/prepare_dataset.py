"""prepare_dataset: a time-based train/validation split of transaction data."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Output

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def prepare_dataset(
    backend: str,
    transactions_uri: str,
    dataset: Output[Dataset],
    validation_weeks: int = 1,
) -> NamedTuple("Outputs", [("train_rows", int), ("validation_rows", int)]):
    """Splits transactions by time: train up to week T-1, validate on the last week(s).

    A random split would leak the future into training, so the split is by calendar week.
    The data is first checked against the declared transactions contract (columns, types, key
    columns; docs/components.md#dataset-contract); a mismatch fails naming the column.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        transactions_uri: Dataset folder (local, ``gs://`` or ``/gcs/``):
            ``transactions/*.parquet``, ``drinks.parquet`` and ``stores.parquet``.
        dataset: Output: the folder holding the split and its ``manifest.json``.
        validation_weeks: How many final weeks to hold out.

    Returns:
        train_rows: Rows in the training part.
        validation_rows: Rows in the validation part.
    """
    from vertex_retrain.steps.prepare import prepare

    manifest = prepare(
        backend=backend,
        transactions_uri=transactions_uri,
        output_dir=dataset.path,
        validation_weeks=validation_weeks,
    )
    dataset.metadata.update(manifest.summary())
    return (manifest.train_rows, manifest.validation_rows)

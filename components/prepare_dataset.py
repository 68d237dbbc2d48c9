"""prepare_dataset: the run's window of transaction data, split by time."""

from typing import NamedTuple

from kfp.dsl import Dataset, Output

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
def prepare_dataset(
    backend: str,
    transactions_uri: str,
    dataset: Output[Dataset],
    validation_weeks: int = 1,
    as_of: str = "",
) -> NamedTuple(
    "Outputs",
    [("train_rows", int), ("validation_rows", int), ("as_of", str), ("window_labels", dict)],
):
    """Selects the transactions before ``as_of`` and splits them by time: the last week(s)
    validate, the weeks before train.

    Point in time: a file is used only when all its rows are before ``as_of``; later weeks
    and the week in progress are left out whole, so nothing from after the cut reaches
    training or evaluation. A random split would leak the future into training, so the split
    is by calendar week. The data is first checked against the declared transactions
    contract (columns, types, key columns; docs/components.md#dataset-contract); a mismatch
    fails naming the column.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        transactions_uri: Dataset folder (local, ``gs://`` or ``/gcs/``):
            ``transactions/*.parquet``, ``drinks.parquet`` and ``stores.parquet``.
        dataset: Output: the folder holding the split and its ``manifest.json``.
        validation_weeks: How many final weeks of the window to hold out.
        as_of: The window end, ``YYYY-MM-DD`` (from ``data_window``); empty: today (UTC).

    Returns:
        train_rows: Rows in the training part.
        validation_rows: Rows in the validation part.
        as_of: The window end used.
        window_labels: The window as labels (``data_as_of``, ``data_from``) for
            ``register_model(labels=...)``.
    """
    from vertex_retrain.steps.prepare import prepare

    prepared = prepare(
        backend=backend,
        transactions_uri=transactions_uri,
        output_dir=dataset.path,
        validation_weeks=validation_weeks,
        as_of=as_of,
    )
    dataset.metadata.update(prepared.summary())
    print(prepared.manifest["window"]["description"])
    return (
        prepared.train_rows,
        prepared.validation_rows,
        prepared.manifest["window"]["as_of"],
        prepared.labels,
    )

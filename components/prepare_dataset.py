"""prepare_dataset: the run's window of the declared table, split by time."""

from typing import NamedTuple

from kfp.dsl import Dataset, Output

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
def prepare_dataset(
    backend: str,
    data_uri: str,
    dataset_declaration: dict,
    dataset: Output[Dataset],
    validation_periods: int = 1,
    as_of: str = "",
) -> NamedTuple(
    "Outputs",
    [("train_rows", int), ("validation_rows", int), ("as_of", str), ("window_labels", dict)],
):
    """Selects the rows before ``as_of`` and splits them by time: the last period(s)
    validate, the periods before train.

    Point in time: a file is used only when all its rows are before ``as_of``; later periods
    and the period in progress are left out whole, so nothing from after the cut reaches
    training or evaluation. A random split would leak the future into training, so the split
    is by period. The files are first checked against the dataset declaration (columns,
    types, key columns; docs/components.md#dataset-declaration); a mismatch fails naming the
    file and the column.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        data_uri: The dataset folder (local, ``gs://`` or ``/gcs/``) the declaration
            describes.
        dataset_declaration: The dataset declaration (docs/components.md#dataset-declaration).
        dataset: Output: the folder holding the split's ``manifest.json``.
        validation_periods: How many final periods of the window to hold out.
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
        data_uri=data_uri,
        dataset_declaration=dict(dataset_declaration),
        output_dir=dataset.path,
        validation_periods=validation_periods,
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

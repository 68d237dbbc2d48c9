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
    training_dataset: Output[Dataset],
    selection_periods: int = 1,
    gate_periods: int = 1,
    as_of: str = "",
    window_digest: str = "",
) -> NamedTuple(
    "Outputs",
    [
        ("train_rows", int),
        ("selection_rows", int),
        ("gate_rows", int),
        ("as_of", str),
        ("window_labels", dict),
    ],
):
    """Selects the rows before ``as_of`` and splits them by time into three parts: the
    newest period(s) are the gate, the period(s) before them selection, the rest train.

    Point in time: a file is used only when all its rows are before ``as_of``; later periods
    and the period in progress are left out whole, so nothing from after the cut reaches
    training or evaluation. A random split would leak the future into training, so the split
    is by period. The gate periods judge the candidate against the champion and the
    references; selection is for what training chooses (early stopping, the tuning
    objective). ``training_dataset`` is the same split with the gate part withheld: give it
    to training and tuning, so nothing they choose sees the gate. The files are first checked
    against the dataset declaration (columns, types, key columns;
    docs/components.md#dataset-declaration); a mismatch fails naming the file and the column.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        data_uri: The dataset folder (local, ``gs://`` or ``/gcs/``) the declaration
            describes.
        dataset_declaration: The dataset declaration (docs/components.md#dataset-declaration).
        dataset: Output: the folder holding the split's ``manifest.json`` (all three parts),
            for evaluation.
        training_dataset: Output: the folder holding the training jobs' ``manifest.json``
            (train and selection; the gate withheld).
        selection_periods: Periods before the gate for selection (0: none).
        gate_periods: How many final periods of the window judge the candidate.
        as_of: The window end, ``YYYY-MM-DD`` (from ``data_window``); empty: today (UTC).
        window_digest: The cache key only: ``check_data``'s digest of the window's files, so
            a period rewritten in place is prepared again. Not used by the split itself.

    Returns:
        train_rows: Rows in the training part.
        selection_rows: Rows in the selection part.
        gate_rows: Rows in the gate part.
        as_of: The window end used.
        window_labels: The window as labels (``data_as_of``, ``data_from``,
            ``data_gate_from``) for ``register_model(labels=...)``.
    """
    from vertex_retrain.steps.prepare import prepare

    prepared = prepare(
        backend=backend,
        data_uri=data_uri,
        dataset_declaration=dict(dataset_declaration),
        output_dir=dataset.path,
        training_output_dir=training_dataset.path,
        selection_periods=selection_periods,
        gate_periods=gate_periods,
        as_of=as_of,
    )
    dataset.metadata.update(prepared.summary())
    training_dataset.metadata.update(prepared.training_summary())
    print(prepared.manifest["window"]["description"])
    return (
        prepared.train_rows,
        prepared.selection_rows,
        prepared.gate_rows,
        prepared.manifest["window"]["as_of"],
        prepared.labels,
    )

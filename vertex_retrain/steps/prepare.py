"""prepare_dataset's logic: the run's window of the declared table, checked and split by time.

The dataset's shape is the user's declaration (:mod:`vertex_retrain.contracts.dataset`), not an
import of model code, and the result is the manifest of
:mod:`vertex_retrain.contracts.dataset_manifest`. Only rows strictly before ``as_of`` are in it
(:mod:`vertex_retrain.contracts.as_of`): the periods after, and the period in progress,
are left out whole, so nothing from after the cut reaches training or evaluation. Only Parquet
metadata and the time column are read to plan the split; every file in the window is hashed
so the manifest names exact bytes. The split has three parts (train, selection, gate); the
training and tuning jobs get a second manifest that withholds the gate part, so nothing they
choose can see the periods the candidate is judged on.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.contracts.as_of import (
    DataWindowError,
    Selection,
    check_after_start,
    cut_of,
    describe,
    select_before,
    window_labels,
)
from vertex_retrain.contracts.dataset import (
    Column,
    DatasetDeclaration,
    SchemaMismatchError,
    check_schema,
    parse_dataset_declaration,
)
from vertex_retrain.contracts.dataset_manifest import (
    MANIFEST_NAME,
    PeriodFile,
    check_split,
    plan_time_split,
    training_manifest,
)
from vertex_retrain.steps.backend import readable_path
from vertex_retrain.steps.table_files import ScannedFile, open_dataset, scan_file
from vertex_retrain.steps.window import window_end

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = [
    "GATE_LABEL",
    "DataWindowError",
    "PreparedDataset",
    "SchemaMismatchError",
    "prepare",
    "select_window",
]

GATE_LABEL = "data_gate_from"
"""The window label naming the gate's first period: a model trained on this dataset saw
nothing from that day on (its window is ``data_from`` up to it)."""


@dataclass(frozen=True)
class PreparedDataset:
    """What the split produced."""

    manifest: dict[str, Any]

    @property
    def train_rows(self) -> int:
        """Rows in the training periods."""
        return int(self.manifest["train"]["rows"])

    @property
    def selection_rows(self) -> int:
        """Rows in the selection periods."""
        return int(self.manifest["selection"]["rows"])

    @property
    def gate_rows(self) -> int:
        """Rows in the gate periods."""
        return int(self.manifest["gate"]["rows"])

    @property
    def labels(self) -> dict[str, str]:
        """The window as labels for the registered version: ``data_as_of``, ``data_from``
        and ``data_gate_from``."""
        return dict(self.manifest["window"]["labels"])

    def summary(self) -> dict[str, Any]:
        """Metadata for the KFP ``Dataset`` artifact (shown in the pipeline UI)."""
        window = self.manifest["window"]
        train = self.manifest["train"]["periods"]
        return {
            "data_uri": self.manifest["data_uri"],
            "as_of": window["as_of"],
            "first_row": window["first_row"],
            "last_row": window["last_row"],
            "train_periods": [train[0], train[-1]] if train else [],
            "selection_periods": self.manifest["selection"]["periods"],
            "gate_periods": self.manifest["gate"]["periods"],
            "train_rows": self.train_rows,
            "selection_rows": self.selection_rows,
            "gate_rows": self.gate_rows,
            "content_hash": self.manifest["content_hash"],
        }

    def training_summary(self) -> dict[str, Any]:
        """Metadata for the training jobs' ``Dataset``: the gate's periods withheld."""
        summary = self.summary()
        summary.update(
            content_hash=training_manifest(self.manifest)["content_hash"],
            gate_rows=0,
            gate_withheld=summary.pop("gate_periods"),
        )
        return summary


def prepare(
    *,
    backend: str,
    data_uri: str,
    dataset_declaration: Mapping[str, Any],
    output_dir: str,
    training_output_dir: str = "",
    selection_periods: int = 1,
    gate_periods: int = 1,
    as_of: str = "",
    now: dt.datetime | None = None,
) -> PreparedDataset:
    """Checks the window of the dataset at ``data_uri``, writes its split to ``output_dir``.

    The manifest keeps ``data_uri`` as given (e.g. ``gs://``), so the training job resolves
    the same files wherever it runs.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        data_uri: The dataset folder the declaration describes.
        dataset_declaration: The dataset declaration (its JSON object).
        output_dir: Folder that receives ``manifest.json`` (all three parts).
        training_output_dir: Folder that receives the training jobs' ``manifest.json``, the
            gate part withheld (empty: not written).
        selection_periods: Periods before the gate for selection (0 or more).
        gate_periods: The newest periods of the window, on which the candidate is judged.
        as_of: The window end, ``YYYY-MM-DD`` (or a time); empty: today, by ``now``.
        now: The clock (a test's); the system's by default.

    Returns:
        The split.

    Raises:
        DatasetDeclarationError: The declaration is malformed (the message names the field).
        FileNotFoundError: The folder, the table's files or a dimension's file is missing.
        SchemaMismatchError: A file's columns or types differ from the declaration (the
            message names the file, the column, the type found and the type expected).
        DataWindowError: ``as_of`` is malformed, in the future, or leaves no period.
        ValueError: A file holds several periods or nulls in a key column, or the period
            counts leave no training or no gate period.
    """
    import pyarrow.parquet as pq

    declaration = parse_dataset_declaration(dataset_declaration)
    table = declaration.table
    end = window_end(as_of, now=now)
    folder = open_dataset(backend, data_uri, declaration)
    shown = folder.shown
    scanned = [scan_file(pq.ParquetFile(p), p, folder.rel(p), table) for p in folder.files]
    selection, chosen = select_window(scanned, end, shown, declaration)
    # Everything cheap is checked before any file is hashed.
    for item in chosen:
        _check_table(pq.ParquetFile(item.path), table.columns, table.key_columns,
                     "the table", f"{shown}/{item.rel}")  # fmt: skip
        _one_period(item, shown, declaration)
    for name, path in folder.dimensions.items():
        dimension = declaration.dimensions[name]
        _check_table(pq.ParquetFile(path), dimension.columns, (dimension.key,),
                     f"dimension {name!r}", f"{shown}/{dimension.file}")  # fmt: skip
    check_split(selection_periods, gate_periods, len({item.period for item in chosen}))
    files = [
        PeriodFile(item.rel, item.period or dt.date.min, item.rows, _sha256(item.path))
        for item in chosen
    ]
    periods = sorted({f.period for f in files})
    manifest = plan_time_split(
        data_uri,
        declaration,
        files,
        {
            declaration.dimensions[name].file: _sha256(path)
            for name, path in folder.dimensions.items()
        },
        selection_periods,
        gate_periods,
        window=_window_record(end, selection, periods),
    )
    manifest["window"]["labels"][GATE_LABEL] = manifest["gate"]["periods"][0]
    atomic_write_json(readable_path(backend, output_dir) / MANIFEST_NAME, manifest)
    if training_output_dir:
        atomic_write_json(
            readable_path(backend, training_output_dir) / MANIFEST_NAME,
            training_manifest(manifest),
        )
    return PreparedDataset(manifest)


def select_window(
    scanned: list[ScannedFile], as_of: dt.date, shown: str, declaration: DatasetDeclaration
) -> tuple[Selection, list[ScannedFile]]:
    """The files of the window ending at ``as_of``, after refusing what cannot be placed.

    Raises:
        SchemaMismatchError: A file with rows whose time column is unreadable (it cannot be
            placed in time).
        DataWindowError: ``as_of`` leaves no complete period.
    """
    table = declaration.table
    for item in scanned:
        if item.rows and item.span.first is None:
            check_schema(table.columns, item.schema, what="the table", where=f"{shown}/{item.rel}")
    selection = select_before((item.span for item in scanned), cut_of(as_of))
    if not selection.included:
        starts = [s.first for s in selection.partial + selection.after if s.first is not None]
        if starts:
            check_after_start(as_of, min(starts))
        raise DataWindowError(
            f"as_of {as_of.isoformat()} leaves no complete {table.period} in {shown}: the first "
            f"{table.period} is still in progress at that date; give a later date"
        )
    included = {span.path for span in selection.included}
    return selection, [item for item in scanned if item.rel in included]


def _window_record(
    as_of: dt.date, selection: Selection, periods: Sequence[dt.date]
) -> dict[str, Any]:
    first, last = selection.first, selection.last
    return {
        "as_of": as_of.isoformat(),
        "first_row": first.isoformat() if first else None,
        "last_row": last.isoformat() if last else None,
        "periods": [min(periods).isoformat(), max(periods).isoformat()] if periods else [],
        "left_out": {
            "in_progress": [s.path for s in selection.partial],
            "after_as_of": [s.path for s in selection.after],
            "empty": [s.path for s in selection.empty],
        },
        "labels": window_labels(as_of, first),
        "description": describe(as_of, selection, periods),
    }


def _one_period(item: ScannedFile, shown: str, declaration: DatasetDeclaration) -> None:
    if item.periods is not None and item.periods[0] != item.periods[1]:
        low, high = item.periods
        table = declaration.table
        raise ValueError(
            f"{shown}/{item.rel} holds rows of the {table.period}s starting {low.isoformat()} "
            f"and {high.isoformat()}; the dataset declaration needs one {table.period} per "
            f"file (column {table.time_column!r}), because the split moves whole files"
        )


def _check_table(
    parquet: pq.ParquetFile,
    columns: Sequence[Column],
    key_columns: Sequence[str],
    what: str,
    where: str,
) -> None:
    """Schema and key-column nulls of one file, from its metadata."""
    check_schema(
        columns, {f.name: str(f.type) for f in parquet.schema_arrow}, what=what, where=where
    )
    for column in key_columns:
        nulls = _null_count(parquet, column)
        if nulls:
            raise ValueError(
                f"{where}: key column {column!r} holds {nulls} null(s); the dataset "
                "declaration allows none"
            )


def _null_count(parquet: pq.ParquetFile, column: str) -> int:
    """Nulls in ``column``, from row-group statistics, else by reading the column."""
    metadata = parquet.metadata
    total = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        chunk = next(
            row_group.column(i)
            for i in range(row_group.num_columns)
            if row_group.column(i).path_in_schema == column
        )
        stats = chunk.statistics
        if stats is None or not stats.has_null_count:
            return int(parquet.read(columns=[column]).column(column).null_count)
        total += stats.null_count
    return total


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()

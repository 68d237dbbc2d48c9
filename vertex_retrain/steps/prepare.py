"""prepare_dataset's logic: the run's window of a dataset, checked and split by time.

The dataset's shape is a declared contract (:mod:`vertex_retrain.contracts.transactions`),
not an import of model code, and the result is the manifest of
:mod:`vertex_retrain.contracts.dataset_manifest`. Only transactions strictly before ``as_of``
are in it (:mod:`vertex_retrain.contracts.data_window`): the weeks after, and the week in
progress, are left out whole, so nothing from after the cut reaches training or evaluation.
Only Parquet metadata and the week and timestamp columns are read to plan the split; every
file in the window is hashed so the manifest names exact bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.contracts.data_window import (
    DataWindowError,
    Selection,
    check_after_start,
    cut_of,
    describe,
    select_before,
    window_labels,
)
from vertex_retrain.contracts.dataset_manifest import (
    MANIFEST_NAME,
    WeekFile,
    check_validation_weeks,
    plan_time_split,
)
from vertex_retrain.contracts.transactions import (
    DRINKS,
    STORES,
    TIME_COLUMN,
    TRANSACTIONS,
    SchemaMismatchError,
    TableContract,
)
from vertex_retrain.steps.backend import readable_path
from vertex_retrain.steps.transactions_files import ScannedFile, open_dataset, scan_file
from vertex_retrain.steps.window import window_end

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["DataWindowError", "PreparedDataset", "SchemaMismatchError", "prepare", "select_window"]


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

    @property
    def labels(self) -> dict[str, str]:
        """The window as labels for the registered version."""
        return dict(self.manifest["window"]["labels"])

    def summary(self) -> dict[str, Any]:
        """Metadata for the KFP ``Dataset`` artifact (shown in the pipeline UI)."""
        window = self.manifest["window"]
        return {
            "data_uri": self.manifest["data_uri"],
            "as_of": window["as_of"],
            "first_transaction": window["first_transaction"],
            "last_transaction": window["last_transaction"],
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
    *,
    backend: str,
    transactions_uri: str,
    output_dir: str,
    validation_weeks: int = 1,
    as_of: str = "",
    now: dt.datetime | None = None,
) -> PreparedDataset:
    """Checks the window of the dataset at ``transactions_uri``, writes its split to ``output_dir``.

    The manifest keeps ``transactions_uri`` as given (e.g. ``gs://``), so the training job
    resolves the same files wherever it runs.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        transactions_uri: A dataset folder laid out as the transactions contract says.
        output_dir: Folder that receives ``manifest.json``.
        validation_weeks: Final weeks of the window held out for validation.
        as_of: The window end, ``YYYY-MM-DD`` (or a time); empty: today, by ``now``.
        now: The clock (a test's); the system's by default.

    Returns:
        The split.

    Raises:
        FileNotFoundError: The folder, its transactions or a catalogue file is missing.
        SchemaMismatchError: A table's columns or types differ from the contract (the
            message names the file, the column, the type found and the type expected).
        DataWindowError: ``as_of`` is malformed, in the future, or leaves no week.
        ValueError: A file holds several weeks or nulls in a key column, or
            ``validation_weeks`` leaves no training week.
    """
    import pyarrow.parquet as pq

    end = window_end(as_of, now=now)
    folder = open_dataset(backend, transactions_uri)
    shown = folder.shown
    scanned = [scan_file(pq.ParquetFile(p), p, folder.rel(p)) for p in folder.transactions]
    selection, chosen = select_window(scanned, end, shown)
    # Everything cheap is checked before any file is hashed.
    for item in chosen:
        _check_table(pq.ParquetFile(item.path), TRANSACTIONS, f"{shown}/{item.rel}")
        _one_week(item, shown)
    for (name, path), contract in zip(folder.catalogue.items(), (DRINKS, STORES), strict=True):
        _check_table(pq.ParquetFile(path), contract, f"{shown}/{name}")
    check_validation_weeks(validation_weeks, len({item.week for item in chosen}))
    files = [
        WeekFile(item.rel, int(item.week or 0), item.rows, _sha256(item.path)) for item in chosen
    ]
    weeks = sorted({f.week for f in files})
    manifest = plan_time_split(
        transactions_uri,
        files,
        {name: _sha256(path) for name, path in folder.catalogue.items()},
        validation_weeks,
        window=_window_record(end, selection, weeks),
    )
    atomic_write_json(readable_path(backend, output_dir) / MANIFEST_NAME, manifest)
    return PreparedDataset(manifest)


def select_window(
    scanned: list[ScannedFile], as_of: dt.date, shown: str
) -> tuple[Selection, list[ScannedFile]]:
    """The files of the window ending at ``as_of``, after refusing what cannot be placed.

    Raises:
        SchemaMismatchError: A file with rows whose week or timestamp column is unreadable
            (it cannot be placed in time).
        DataWindowError: ``as_of`` leaves no complete week.
    """
    for item in scanned:
        if item.rows and (item.span.first is None or item.weeks is None):
            TRANSACTIONS.check(item.schema, where=f"{shown}/{item.rel}")
    selection = select_before((item.span for item in scanned), cut_of(as_of))
    if not selection.included:
        starts = [s.first for s in selection.partial + selection.after if s.first is not None]
        if starts:
            check_after_start(as_of, min(starts))
        raise DataWindowError(
            f"as_of {as_of.isoformat()} leaves no complete week in {shown}: the first week "
            "is still in progress at that date; give a later date"
        )
    included = {span.path for span in selection.included}
    return selection, [item for item in scanned if item.rel in included]


def _window_record(as_of: dt.date, selection: Selection, weeks: list[int]) -> dict[str, Any]:
    first, last = selection.first, selection.last
    return {
        "as_of": as_of.isoformat(),
        "first_transaction": first.isoformat() if first else None,
        "last_transaction": last.isoformat() if last else None,
        "weeks": [min(weeks), max(weeks)] if weeks else [],
        "left_out": {
            "in_progress": [s.path for s in selection.partial],
            "after_as_of": [s.path for s in selection.after],
            "empty": [s.path for s in selection.empty],
        },
        "labels": window_labels(as_of, first),
        "description": describe(as_of, selection, weeks),
    }


def _one_week(item: ScannedFile, shown: str) -> None:
    if item.weeks is not None and item.weeks[0] != item.weeks[1]:
        low, high = item.weeks
        raise ValueError(
            f"{shown}/{item.rel} holds weeks {low}..{high}; the transactions contract needs one "
            f"week per file (column {TIME_COLUMN!r}), because the split moves whole files"
        )


def _check_table(parquet: pq.ParquetFile, contract: TableContract, where: str) -> None:
    """Schema and key-column nulls of one file, from its metadata."""
    schema = parquet.schema_arrow
    contract.check({f.name: str(f.type) for f in schema}, where=where)
    for column in contract.key_columns:
        nulls = _null_count(parquet, column)
        if nulls:
            raise ValueError(
                f"{where}: key column {column!r} holds {nulls} null(s); the {contract.name} "
                "contract allows none"
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

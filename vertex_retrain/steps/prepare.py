"""prepare_dataset's logic: check a dataset against its contract, split it by time.

The dataset's shape is a declared contract (:mod:`vertex_retrain.contracts.transactions`),
not an import of model code, and the result is the manifest of
:mod:`vertex_retrain.contracts.dataset_manifest`. Only Parquet metadata and the week column
are read to plan the split; every file is hashed so the manifest names exact bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.contracts.dataset_manifest import (
    MANIFEST_NAME,
    WeekFile,
    check_validation_weeks,
    plan_time_split,
)
from vertex_retrain.contracts.transactions import (
    DRINKS,
    DRINKS_FILE,
    STORES,
    STORES_FILE,
    TIME_COLUMN,
    TRANSACTIONS,
    TRANSACTIONS_DIR,
    SchemaMismatchError,
    TableContract,
)
from vertex_retrain.steps.backend import readable_path

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["PreparedDataset", "SchemaMismatchError", "prepare"]


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
    """Checks the dataset at ``transactions_uri`` and writes its split to ``output_dir``.

    The manifest keeps ``transactions_uri`` as given (e.g. ``gs://``), so the training job
    resolves the same files wherever it runs.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        transactions_uri: A dataset folder laid out as the transactions contract says.
        output_dir: Folder that receives ``manifest.json``.
        validation_weeks: Final weeks held out for validation.

    Returns:
        The split.

    Raises:
        FileNotFoundError: The folder, its transactions or a catalogue file is missing.
        SchemaMismatchError: A table's columns or types differ from the contract (the
            message names the file, the column, the type found and the type expected).
        ValueError: A file holds no rows, several weeks or nulls in a key column, or
            ``validation_weeks`` leaves no training week.
    """
    import pyarrow.parquet as pq

    root = readable_path(backend, transactions_uri)
    shown = transactions_uri.rstrip("/")
    if not root.is_dir():
        raise FileNotFoundError(
            f"no dataset folder at {transactions_uri!r} ({root}); expected a folder with "
            f"{TRANSACTIONS_DIR}/*.parquet, {DRINKS_FILE} and {STORES_FILE}"
        )
    paths = sorted((root / TRANSACTIONS_DIR).glob("*.parquet"))
    if not paths:
        raise FileNotFoundError(
            f"{shown}/{TRANSACTIONS_DIR}/ holds no .parquet files; the transactions contract "
            "puts the purchases there (one or more files per week)"
        )
    catalogue = {name: root / name for name in (DRINKS_FILE, STORES_FILE)}
    for name, path in catalogue.items():
        if not path.is_file():
            raise FileNotFoundError(f"{shown}/{name} is missing; the dataset contract needs it")
    # Everything cheap is checked before any file is hashed.
    scanned = [
        _scan_transactions(pq.ParquetFile(path), f"{shown}/{_rel(root, path)}") for path in paths
    ]
    for (name, path), contract in zip(catalogue.items(), (DRINKS, STORES), strict=True):
        _check_table(pq.ParquetFile(path), contract, f"{shown}/{name}")
    check_validation_weeks(validation_weeks, len({week for week, _ in scanned}))
    files = [
        WeekFile(path=_rel(root, path), week=week, rows=rows, sha256=_sha256(path))
        for path, (week, rows) in zip(paths, scanned, strict=True)
    ]
    manifest = plan_time_split(
        transactions_uri,
        files,
        {name: _sha256(path) for name, path in catalogue.items()},
        validation_weeks,
    )
    from vertex_retrain.backends.local.storage import atomic_write_json

    atomic_write_json(readable_path(backend, output_dir) / MANIFEST_NAME, manifest)
    return PreparedDataset(manifest)


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


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


def _scan_transactions(parquet: pq.ParquetFile, where: str) -> tuple[int, int]:
    """Returns ``(week, rows)`` of one transactions file after checking it."""
    import pyarrow.compute as pc

    _check_table(parquet, TRANSACTIONS, where)
    rows = parquet.metadata.num_rows
    if rows == 0:
        raise ValueError(f"{where} holds no rows; remove it or write the week's purchases")
    # Only the week column is read; the split moves whole files, so one file is one week.
    bounds = pc.min_max(parquet.read(columns=[TIME_COLUMN]).column(TIME_COLUMN))
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low != high:
        raise ValueError(
            f"{where} holds weeks {low}..{high}; the transactions contract needs one week per "
            f"file (column {TIME_COLUMN!r}), because the split moves whole files"
        )
    return int(low), int(rows)


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

"""A transactions dataset folder, as ``prepare_dataset`` and ``check_data`` both read it.

The folder's layout is the declared contract (:mod:`vertex_retrain.contracts.transactions`).
Only Parquet metadata and two columns (the week and the timestamp) are read to place each
file in time; the run's window (:mod:`vertex_retrain.contracts.data_window`) then decides
which files a run may see.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vertex_retrain.contracts.data_window import FileSpan
from vertex_retrain.contracts.transactions import (
    DRINKS_FILE,
    STORES_FILE,
    TIME_COLUMN,
    TRANSACTIONS,
    TRANSACTIONS_DIR,
)
from vertex_retrain.steps.backend import readable_path

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["TIMESTAMP_COLUMN", "DatasetFolder", "ScannedFile", "open_dataset", "scan_file"]

TIMESTAMP_COLUMN = "timestamp"
"""The contract's purchase time: naive local time of the shops."""


@dataclass(frozen=True)
class ScannedFile:
    """One transactions file: its place in time and its schema.

    Attributes:
        path: The local path.
        rel: Relative to the dataset folder (``transactions/week-0000.parquet``).
        rows: Its row count.
        week: Its week (None when empty, or when the week column cannot be read).
        weeks: ``(lowest, highest)`` week in the file (equal for a well-formed file).
        span: Its first and last transaction.
        schema: ``{column: arrow type}`` as written.
    """

    path: Path
    rel: str
    rows: int
    weeks: tuple[int, int] | None
    span: FileSpan
    schema: dict[str, str]

    @property
    def week(self) -> int | None:
        """The file's week when it holds one week only."""
        if self.weeks is None or self.weeks[0] != self.weeks[1]:
            return None
        return self.weeks[0]


@dataclass(frozen=True)
class DatasetFolder:
    """A dataset folder checked for its parts.

    Attributes:
        root: The local folder.
        shown: The URI as given, for messages.
        transactions: Every ``transactions/*.parquet`` file, sorted.
        catalogue: ``drinks.parquet`` and ``stores.parquet`` by name.
    """

    root: Path
    shown: str
    transactions: list[Path]
    catalogue: dict[str, Path]

    def rel(self, path: Path) -> str:
        """``path`` relative to the folder, with forward slashes."""
        return path.relative_to(self.root).as_posix()


def open_dataset(backend: str, transactions_uri: str) -> DatasetFolder:
    """Finds the dataset's files.

    Raises:
        FileNotFoundError: The folder, its transactions or a catalogue file is missing.
    """
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
    return DatasetFolder(root, shown, paths, catalogue)


def scan_file(parquet: pq.ParquetFile, path: Path, rel: str) -> ScannedFile:
    """Places one transactions file in time, reading its week and timestamp columns only.

    A column the contract declares but the file lacks (or types otherwise) is left unread;
    the schema says why, for whoever checks it.
    """
    import pyarrow.compute as pc

    schema = {f.name: str(f.type) for f in parquet.schema_arrow}
    rows = parquet.metadata.num_rows
    declared = TRANSACTIONS.schema()
    readable = [
        c for c in (TIME_COLUMN, TIMESTAMP_COLUMN) if schema.get(c) == declared[c] and rows > 0
    ]
    table = parquet.read(columns=readable) if readable else None
    weeks = first = last = None
    if table is not None and TIME_COLUMN in readable:
        bounds = pc.min_max(table.column(TIME_COLUMN))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        weeks = (int(low), int(high)) if low is not None and high is not None else None
    if table is not None and TIMESTAMP_COLUMN in readable:
        bounds = pc.min_max(table.column(TIMESTAMP_COLUMN))
        first, last = bounds["min"].as_py(), bounds["max"].as_py()
    return ScannedFile(path, rel, int(rows), weeks, FileSpan(rel, int(rows), first, last), schema)

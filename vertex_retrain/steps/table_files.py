"""The declared table's files, as ``prepare_dataset`` and ``check_data`` both read them.

The folder's layout is the dataset declaration (:mod:`vertex_retrain.contracts.dataset`). Only
Parquet metadata and the time column are read to place each file in time; the run's window
(:mod:`vertex_retrain.contracts.as_of`) then decides which files a run may see.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertex_retrain.contracts.as_of import FileSpan
from vertex_retrain.contracts.dataset import DatasetDeclaration, TableDeclaration
from vertex_retrain.steps.backend import readable_path

if TYPE_CHECKING:
    import pyarrow.parquet as pq

__all__ = ["DatasetFolder", "ScannedFile", "as_datetime", "open_dataset", "scan_file"]


@dataclass(frozen=True)
class ScannedFile:
    """One file of the table: its place in time and its schema.

    Attributes:
        path: The local path.
        rel: Relative to the dataset folder (``sales/2026-01-05.parquet``).
        rows: Its row count.
        periods: First day of the period of its oldest and of its newest row (equal for a
            well-formed file); None when empty or when the time column cannot be read.
        span: Its first and last row's time.
        schema: ``{column: arrow type}`` as written.
    """

    path: Path
    rel: str
    rows: int
    periods: tuple[dt.date, dt.date] | None
    span: FileSpan
    schema: dict[str, str]

    @property
    def period(self) -> dt.date | None:
        """The file's period when it holds one period only."""
        if self.periods is None or self.periods[0] != self.periods[1]:
            return None
        return self.periods[0]


@dataclass(frozen=True)
class DatasetFolder:
    """A dataset folder checked for its parts.

    Attributes:
        root: The local folder.
        shown: The URI as given, for messages.
        files: Every ``<table folder>/*.parquet`` file, sorted.
        dimensions: Each dimension's file, by dimension name.
    """

    root: Path
    shown: str
    files: list[Path]
    dimensions: dict[str, Path]

    def rel(self, path: Path) -> str:
        """``path`` relative to the folder, with forward slashes."""
        return path.relative_to(self.root).as_posix()


def open_dataset(backend: str, data_uri: str, declaration: DatasetDeclaration) -> DatasetFolder:
    """Finds the dataset's files.

    Raises:
        FileNotFoundError: The folder, the table's files or a dimension's file is missing.
    """
    root = readable_path(backend, data_uri)
    shown = data_uri.rstrip("/")
    folder = declaration.table.folder
    dimension_files = [d.file for d in declaration.dimensions.values()]
    if not root.is_dir():
        parts = ", ".join([f"{folder}/*.parquet", *dimension_files])
        raise FileNotFoundError(
            f"no dataset folder at {data_uri!r} ({root}); the dataset declaration expects {parts}"
        )
    paths = sorted((root / folder).glob("*.parquet"))
    if not paths:
        # Locally a gs:// URI is a folder under the local root, which follows the working
        # folder: name the folder that was read, so a run from elsewhere is recognised.
        raise FileNotFoundError(
            f"{shown}/{folder}/ holds no .parquet files (read at {root / folder}); the dataset "
            f"declaration's table.folder puts the rows there, one file per "
            f"{declaration.table.period}"
        )
    dimensions = {name: root / d.file for name, d in declaration.dimensions.items()}
    for name, path in dimensions.items():
        if not path.is_file():
            raise FileNotFoundError(
                f"{shown}/{declaration.dimensions[name].file} is missing; the dataset "
                f"declaration's dimension {name!r} needs it"
            )
    return DatasetFolder(root, shown, paths, dimensions)


def as_datetime(value: Any) -> dt.datetime | None:
    """A time column's value as a naive datetime (a date is its midnight)."""
    if value is None or isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time())
    raise TypeError(f"not a date or time: {value!r}")


def scan_file(
    parquet: pq.ParquetFile, path: Path, rel: str, table: TableDeclaration
) -> ScannedFile:
    """Places one file in time, reading its time column only.

    A time column the file lacks (or types otherwise) is left unread; the schema says why,
    for whoever checks it.
    """
    import pyarrow.compute as pc

    schema = {f.name: str(f.type) for f in parquet.schema_arrow}
    rows = int(parquet.metadata.num_rows)
    column = table.time_column
    first = last = None
    if rows > 0 and schema.get(column) == table.schema()[column]:
        bounds = pc.min_max(parquet.read(columns=[column]).column(column))
        first, last = as_datetime(bounds["min"].as_py()), as_datetime(bounds["max"].as_py())
    periods = (
        (table.period_start(first), table.period_start(last))
        if first is not None and last is not None
        else None
    )
    return ScannedFile(path, rel, rows, periods, FileSpan(rel, rows, first, last), schema)

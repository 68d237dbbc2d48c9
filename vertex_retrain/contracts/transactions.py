"""The transactions dataset contract: the folder ``prepare_dataset`` splits, declared here.

A dataset is a folder (local, ``gs://`` or ``/gcs/``) holding three Parquet tables:

- ``transactions/*.parquet``: the purchases, one or more files per calendar week (a file
  holds rows of one week only, because the split moves whole files);
- ``drinks.parquet``: the catalogue of drinks;
- ``stores.parquet``: the shops.

Every file must have at least the columns declared below with exactly the declared Arrow
types (written as ``str(pyarrow_type)``: ``int32``, ``timestamp[ms]``, ``float`` for
float32...); extra columns are allowed and ignored. Key columns may hold no nulls. The split
is made on :data:`TIME_COLUMN`, the week index.

This module is pure (no pyarrow import): a schema to check arrives as ``{name: type text}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DRINKS",
    "DRINKS_FILE",
    "STORES",
    "STORES_FILE",
    "TIME_COLUMN",
    "TRANSACTIONS",
    "TRANSACTIONS_DIR",
    "Column",
    "SchemaMismatchError",
    "TableContract",
]


class SchemaMismatchError(ValueError):
    """A table's columns or types differ from its contract; the message names each column."""


@dataclass(frozen=True)
class Column:
    """One declared column.

    Attributes:
        name: Column name.
        type: Arrow type as ``str(pyarrow_type)``, e.g. ``int32`` or ``timestamp[ms]``.
    """

    name: str
    type: str


@dataclass(frozen=True)
class TableContract:
    """The declared schema of one table.

    Attributes:
        name: What the table is called in messages (``transactions``...).
        columns: Required columns with their exact types.
        key_columns: Columns that may hold no nulls.
    """

    name: str
    columns: tuple[Column, ...]
    key_columns: tuple[str, ...] = ()

    def schema(self) -> dict[str, str]:
        """The declared columns as ``{name: type}``, in declaration order."""
        return {column.name: column.type for column in self.columns}

    def problems(self, found: Mapping[str, str]) -> list[str]:
        """Lists every difference between ``found`` (``{name: type}``) and the contract.

        Returns:
            One sentence per missing or mistyped column, naming the column, the type found
            and the type expected; empty when the table conforms.
        """
        problems = []
        for column in self.columns:
            if column.name not in found:
                problems.append(
                    f"column {column.name!r} is missing; the {self.name} contract expects it "
                    f"with type {column.type} (found columns: {', '.join(sorted(found))})"
                )
            elif found[column.name] != column.type:
                problems.append(
                    f"column {column.name!r} has type {found[column.name]}; the {self.name} "
                    f"contract expects {column.type}"
                )
        return problems

    def check(self, found: Mapping[str, str], *, where: str) -> None:
        """Raises :class:`SchemaMismatchError` listing every problem of ``found``.

        Args:
            found: The table's schema as ``{name: type}``.
            where: The file checked, for the message.
        """
        problems = self.problems(found)
        if problems:
            raise SchemaMismatchError(
                f"{where} does not match the {self.name} contract "
                "(docs/components.md#dataset-contract):\n  " + "\n  ".join(problems)
            )


TRANSACTIONS_DIR = "transactions"
"""Folder of the transactions files, relative to the dataset folder."""

DRINKS_FILE = "drinks.parquet"
"""The drinks catalogue, relative to the dataset folder."""

STORES_FILE = "stores.parquet"
"""The shops, relative to the dataset folder."""

TIME_COLUMN = "week"
"""The column the split is made on: weeks since the start of the data, 0-based."""

TRANSACTIONS = TableContract(
    "transactions",
    (
        Column("member_id", "int32"),
        Column("store_id", "int32"),
        Column("drink_id", "int32"),
        Column("timestamp", "timestamp[ms]"),
        Column("quantity", "int8"),
        Column("price", "float"),
        Column("hour", "int8"),
        Column("weekday", "int8"),
        Column(TIME_COLUMN, "int16"),
        Column("season", "int8"),
        Column("region", "int8"),
        Column("temperature", "float"),
    ),
    key_columns=("member_id", "store_id", "drink_id", "timestamp", TIME_COLUMN),
)
"""One row per purchase."""

DRINKS = TableContract(
    "drinks",
    (
        Column("drink_id", "int32"),
        Column("name", "string"),
        Column("category", "string"),
        Column("category_id", "int8"),
        Column("is_cold", "bool"),
        Column("region_id", "int8"),
        Column("region", "string"),
        Column("launch_week", "int16"),
        Column("launch_date", "date32[day]"),
        Column("base_price", "float"),
    ),
    key_columns=("drink_id",),
)
"""Every drink ever sold; ``region_id`` -1 means sold nationwide."""

STORES = TableContract(
    "stores",
    (
        Column("store_id", "int32"),
        Column("region_id", "int8"),
        Column("region", "string"),
        Column("traffic", "float"),
    ),
    key_columns=("store_id",),
)
"""One row per shop."""

"""The prepared dataset, as the library's ``prepare_dataset`` hands it to the entry points.

``--data`` is a folder holding ``manifest.json`` (vertex-retrain's dataset manifest,
``vertex-retrain-dataset-manifest/v2``): the data folder's URI, the files of the training, the
selection and the gate days (relative to it), and the dimension files. Training gets a
dataset that withholds the gate days (no ``gate`` part); evaluation gets all three. Files are
read under the Cloud Storage mount (:func:`demand_forecast.paths.mounted`). Only the columns
this model uses are read; the library has already checked them against ``dataset.yaml``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from demand_forecast.paths import mounted

MANIFEST_FORMAT = "vertex-retrain-dataset-manifest/v2"
MANIFEST_NAME = "manifest.json"
SALES_COLUMNS = ("day", "store", "item", "units", "price", "on_promo")
ITEMS_DIMENSION = "items"


@dataclass(frozen=True)
class Sales:
    """Rows of the sales table as aligned arrays.

    Attributes:
        day: ``datetime64[D]``.
        store: Store names.
        item: Item names.
        units: Units sold (float: the regression target).
        price: The day's price.
        on_promo: Whether the item was on promotion.
    """

    day: np.ndarray
    store: np.ndarray
    item: np.ndarray
    units: np.ndarray
    price: np.ndarray
    on_promo: np.ndarray

    def __len__(self) -> int:
        return int(self.day.size)

    def concat(self, other: Sales) -> Sales:
        """These rows followed by ``other``'s."""
        return Sales(
            *(np.concatenate([getattr(self, n), getattr(other, n)]) for n in SALES_COLUMNS)
        )


@dataclass(frozen=True)
class Item:
    """An item of the items dimension: its family and list price."""

    family: str
    base_price: float


@dataclass(frozen=True)
class PreparedData:
    """The training, selection and gate days of a prepared dataset (selection and gate
    empty when the dataset has none, or withholds them), and the items dimension."""

    manifest: dict[str, Any]
    train: Sales
    selection: Sales
    gate: Sales
    items: dict[str, Item]


def manifest_path(data: str) -> Path:
    """The manifest of ``--data`` (a folder holding ``manifest.json``, or that file)."""
    path = mounted(data)
    return path if path.name == MANIFEST_NAME else path / MANIFEST_NAME


def load_manifest(data: str) -> dict[str, Any]:
    """Reads and checks the manifest.

    Raises:
        FileNotFoundError: No manifest at ``data``.
        ValueError: Not a manifest of the expected format.
    """
    path = manifest_path(data)
    if not path.is_file():
        raise FileNotFoundError(
            f"--data={data}: no {MANIFEST_NAME} at {path}; pass the prepared dataset folder "
            "(prepare_dataset's output)"
        )
    manifest = json.loads(path.read_text(encoding="utf-8"))
    found = manifest.get("format") if isinstance(manifest, dict) else None
    if found != MANIFEST_FORMAT:
        raise ValueError(f"{path}: format {found!r}; expected {MANIFEST_FORMAT!r}")
    return dict(manifest)


def _data_file(manifest: dict[str, Any], relative: str) -> Path:
    return mounted(f"{str(manifest['data_uri']).rstrip('/')}/{relative}")


def no_sales() -> Sales:
    """No rows."""
    return Sales(
        day=np.zeros(0, dtype="datetime64[D]"),
        store=np.zeros(0, dtype=str),
        item=np.zeros(0, dtype=str),
        units=np.zeros(0),
        price=np.zeros(0),
        on_promo=np.zeros(0, dtype=bool),
    )


def read_sales(paths: Sequence[Path]) -> Sales:
    """The rows of the given sales files, in file order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(p, columns=list(SALES_COLUMNS)) for p in paths]
    if not tables:
        raise ValueError("no sales files to read")
    table = pa.concat_tables(tables)
    column = {name: table.column(name).to_numpy(zero_copy_only=False) for name in SALES_COLUMNS}
    return Sales(
        day=column["day"].astype("datetime64[D]"),
        store=column["store"].astype(str),
        item=column["item"].astype(str),
        units=column["units"].astype(np.float64),
        price=column["price"].astype(np.float64),
        on_promo=column["on_promo"].astype(bool),
    )


def read_items(path: Path) -> dict[str, Item]:
    """The items dimension: item -> :class:`Item`."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["item", "family", "base_price"]).to_pydict()
    return {
        str(item): Item(str(family), float(price))
        for item, family, price in zip(
            table["item"], table["family"], table["base_price"], strict=True
        )
    }


def read_prepared(data: str) -> PreparedData:
    """Reads the training, selection and gate days and the items dimension of ``--data``.

    Raises:
        FileNotFoundError: The manifest or a file it names is missing.
        ValueError: The manifest is malformed or names no items dimension.
    """
    manifest = load_manifest(data)
    dimensions = manifest.get("dimensions") or {}
    if ITEMS_DIMENSION not in dimensions:
        raise ValueError(
            f"--data={data}: the manifest names no {ITEMS_DIMENSION!r} dimension (found "
            f"{sorted(dimensions) or 'none'}); declare it in dataset.yaml"
        )
    parts = {}
    for part in ("train", "selection", "gate"):
        files = (manifest.get(part) or {}).get("files") or []
        if part == "train" or files:
            parts[part] = read_sales([_data_file(manifest, f) for f in files])
        else:
            parts[part] = no_sales()
    items = read_items(_data_file(manifest, dimensions[ITEMS_DIMENSION]))
    return PreparedData(manifest, parts["train"], parts["selection"], parts["gate"], items)

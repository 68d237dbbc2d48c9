"""The dataset manifest: what ``prepare_dataset`` writes and a training package reads.

The manifest is the whole interface between the split and the model code, so a trainer needs
no library import to read it. ``<dataset folder>/manifest.json`` holds::

    {
      "format": "drinkshop-dataset-manifest/v1",
      "data_uri": "gs://bucket/transactions",        # the dataset folder, as given
      "schema": {"member_id": "int32", ...},          # the transactions contract's columns
      "train":      {"weeks": [0, ...], "files": ["transactions/week-0000.parquet", ...],
                     "rows": 123456},
      "validation": {"weeks": [52], "files": [...], "rows": 2345},
      "drinks": "drinks.parquet",                     # relative to data_uri
      "stores": "stores.parquet",
      "sha256": {"transactions/week-0000.parquet": "<hex>", ...},   # every file above
      "content_hash": "<hex>",                        # see content_hash()
      "window": {"as_of": "2026-11-23", ...}          # optional: the run's data window
    }

File paths are relative to ``data_uri``, which keeps the URI as given (``gs://`` stays
``gs://``), so a job resolves the same files wherever it runs. Readers ignore keys they do not
know. The reference trainer reads it with ``trainer.split.load_manifest``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vertex_retrain.contracts.transactions import DRINKS_FILE, STORES_FILE, TRANSACTIONS

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "WeekFile",
    "check_validation_weeks",
    "content_hash",
    "plan_time_split",
]

MANIFEST_FORMAT = "drinkshop-dataset-manifest/v1"
"""The ``format`` value of a manifest of this shape."""

MANIFEST_NAME = "manifest.json"
"""The manifest's file name inside the prepared dataset folder."""


@dataclass(frozen=True)
class WeekFile:
    """One transactions file, as the split sees it.

    Attributes:
        path: Relative to the dataset folder (``transactions/week-0000.parquet``).
        week: The week its rows belong to.
        rows: Its row count.
        sha256: Hex digest of its bytes.
    """

    path: str
    week: int
    rows: int
    sha256: str


def content_hash(sha256_by_path: Mapping[str, str]) -> str:
    """One digest over every file: SHA-256 of ``"<path>:<sha256>\\n"`` lines sorted by path.

    Equal hashes mean byte-identical data, so a registered model can name the exact data it
    was trained on.
    """
    lines = "".join(f"{path}:{digest}\n" for path, digest in sorted(sha256_by_path.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def check_validation_weeks(validation_weeks: int, n_weeks: int) -> None:
    """Raises ValueError unless ``validation_weeks`` leaves a training and a validation week."""
    if not 1 <= validation_weeks < n_weeks:
        raise ValueError(
            f"validation_weeks must be between 1 and {n_weeks - 1} for {n_weeks} weeks "
            f"of data, got {validation_weeks}"
        )


def plan_time_split(
    data_uri: str,
    files: Sequence[WeekFile],
    catalogue_sha256: Mapping[str, str],
    validation_weeks: int = 1,
    window: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Builds the manifest: the last ``validation_weeks`` weeks validate, the rest train.

    A random split of a time series would leak the future into training, so whole weeks
    are held out.

    Args:
        data_uri: The dataset folder, kept as given.
        files: Every transactions file with its week, rows and digest.
        catalogue_sha256: Digest of :data:`DRINKS_FILE` and :data:`STORES_FILE`, by path.
        validation_weeks: Final weeks held out.
        window: The run's data window (``as_of``, first and last transaction, what was left
            out), recorded under ``"window"``; the files given are already the window's.

    Returns:
        The manifest (see the module docstring).

    Raises:
        ValueError: ``validation_weeks`` leaves no training week or no validation week.
    """
    weeks = sorted({f.week for f in files})
    check_validation_weeks(validation_weeks, len(weeks))
    cut = weeks[len(weeks) - validation_weeks]
    ordered = sorted(files, key=lambda f: (f.week, f.path))

    def part(chosen: list[WeekFile]) -> dict[str, Any]:
        return {
            "weeks": sorted({f.week for f in chosen}),
            "files": [f.path for f in chosen],
            "rows": sum(f.rows for f in chosen),
        }

    sha256 = {f.path: f.sha256 for f in ordered} | dict(catalogue_sha256)
    manifest = {
        "format": MANIFEST_FORMAT,
        "data_uri": data_uri,
        "schema": TRANSACTIONS.schema(),
        "train": part([f for f in ordered if f.week < cut]),
        "validation": part([f for f in ordered if f.week >= cut]),
        "drinks": DRINKS_FILE,
        "stores": STORES_FILE,
        "sha256": sha256,
        "content_hash": content_hash(sha256),
    }
    if window is not None:
        manifest["window"] = dict(window)
    return manifest

"""The dataset manifest: what ``prepare_dataset`` writes and a training package reads.

The manifest is the whole interface between the split and the model code, so a trainer needs
no library import to read it. ``<prepared dataset folder>/manifest.json`` holds::

    {
      "format": "vertex-retrain-dataset-manifest/v1",
      "data_uri": "gs://bucket/sales",                # the dataset folder, as given
      "declaration": {...},                           # the dataset declaration it was read by
      "period": "day",                                # day | week
      "train":      {"periods": ["2026-01-05", ...], "files": ["sales/2026-01-05.parquet", ...],
                     "rows": 123456},
      "validation": {"periods": ["2026-03-02"], "files": [...], "rows": 2345},
      "dimensions": {"items": "items.parquet"},       # relative to data_uri
      "sha256": {"sales/2026-01-05.parquet": "<hex>", ...},   # every file above
      "content_hash": "<hex>",                        # see content_hash()
      "window": {"as_of": "2026-03-09", ...}          # the run's data window
    }

A period is named by its first day (ISO date). File paths are relative to ``data_uri``, which
keeps the URI as given (``gs://`` stays ``gs://``), so a job resolves the same files wherever
it runs. Readers ignore keys they do not know. This module is pure.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vertex_retrain.contracts.dataset import DatasetDeclaration

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "PeriodFile",
    "check_validation_periods",
    "content_hash",
    "plan_time_split",
]

MANIFEST_FORMAT = "vertex-retrain-dataset-manifest/v1"
"""The ``format`` value of a manifest of this shape."""

MANIFEST_NAME = "manifest.json"
"""The manifest's file name inside the prepared dataset folder."""


@dataclass(frozen=True)
class PeriodFile:
    """One file of the fact table, as the split sees it.

    Attributes:
        path: Relative to the dataset folder (``sales/2026-01-05.parquet``).
        period: The first day of the period its rows belong to.
        rows: Its row count.
        sha256: Hex digest of its bytes.
    """

    path: str
    period: dt.date
    rows: int
    sha256: str


def content_hash(sha256_by_path: Mapping[str, str]) -> str:
    """One digest over every file: SHA-256 of ``"<path>:<sha256>\\n"`` lines sorted by path.

    Equal hashes mean byte-identical data, so a registered model can name the exact data it
    was trained on.
    """
    lines = "".join(f"{path}:{digest}\n" for path, digest in sorted(sha256_by_path.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def check_validation_periods(validation_periods: int, n_periods: int) -> None:
    """Raises ValueError unless ``validation_periods`` leaves a training and a validation period.

    Args:
        validation_periods: Final periods asked to be held out.
        n_periods: Periods in the window.
    """
    if not 1 <= validation_periods < n_periods:
        raise ValueError(
            f"validation_periods must be between 1 and {n_periods - 1} for the {n_periods} "
            f"period(s) in the window, got {validation_periods}"
            + ("; the window needs at least 2 periods" if n_periods < 2 else "")
        )


def plan_time_split(
    data_uri: str,
    declaration: DatasetDeclaration,
    files: Sequence[PeriodFile],
    dimension_sha256: Mapping[str, str],
    validation_periods: int = 1,
    window: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Builds the manifest: the last ``validation_periods`` periods validate, the rest train.

    A random split of a time series would leak the future into training, so whole periods
    are held out.

    Args:
        data_uri: The dataset folder, kept as given.
        declaration: The dataset declaration the files were read by.
        files: Every fact-table file in the window with its period, rows and digest.
        dimension_sha256: Digest of each dimension's file, by path.
        validation_periods: Final periods held out.
        window: The run's data window, recorded under ``"window"``.

    Returns:
        The manifest (see the module docstring).

    Raises:
        ValueError: ``validation_periods`` leaves no training or no validation period.
    """
    periods = sorted({f.period for f in files})
    check_validation_periods(validation_periods, len(periods))
    cut = periods[len(periods) - validation_periods]
    ordered = sorted(files, key=lambda f: (f.period, f.path))

    def part(chosen: list[PeriodFile]) -> dict[str, Any]:
        return {
            "periods": sorted({f.period.isoformat() for f in chosen}),
            "files": [f.path for f in chosen],
            "rows": sum(f.rows for f in chosen),
        }

    sha256 = {f.path: f.sha256 for f in ordered} | dict(dimension_sha256)
    manifest = {
        "format": MANIFEST_FORMAT,
        "data_uri": data_uri,
        "declaration": declaration.to_dict(),
        "period": declaration.table.period,
        "train": part([f for f in ordered if f.period < cut]),
        "validation": part([f for f in ordered if f.period >= cut]),
        "dimensions": {name: d.file for name, d in declaration.dimensions.items()},
        "sha256": sha256,
        "content_hash": content_hash(sha256),
    }
    if window is not None:
        manifest["window"] = dict(window)
    return manifest

"""The dataset manifest: what ``prepare_dataset`` writes and a training package reads.

The manifest is the whole interface between the split and the model code, so a trainer needs
no library import to read it. ``<prepared dataset folder>/manifest.json`` holds::

    {
      "format": "vertex-retrain-dataset-manifest/v2",
      "data_uri": "gs://bucket/sales",                # the dataset folder, as given
      "declaration": {...},                           # the dataset declaration it was read by
      "period": "day",                                # day | week
      "train":     {"periods": ["2026-01-05", ...], "files": ["sales/2026-01-05.parquet", ...],
                    "rows": 123456},
      "selection": {"periods": ["2026-02-23"], "files": [...], "rows": 2345},
      "gate":      {"periods": ["2026-03-02"], "files": [...], "rows": 2345},
      "dimensions": {"items": "items.parquet"},       # relative to data_uri
      "sha256": {"sales/2026-01-05.parquet": "<hex>", ...},   # every file above
      "content_hash": "<hex>",                        # see content_hash()
      "window": {"as_of": "2026-03-09", ...}          # the run's data window
    }

Three parts, in time order: ``train`` (what the model learns from), ``selection`` (the periods
after it, for what training chooses: early stopping, the tuning objective) and ``gate`` (the
newest periods, on which the candidate is judged against the champion and the references,
untouched by anything training chooses). ``selection`` may be empty. The training and tuning
jobs get a copy that withholds the gate part (:func:`training_manifest`): no ``gate`` key, its
files out of ``sha256`` and ``content_hash``, and ``"withheld": {"gate": [periods]}``.

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
    "PARTS",
    "PeriodFile",
    "check_split",
    "content_hash",
    "plan_time_split",
    "training_manifest",
]

MANIFEST_FORMAT = "vertex-retrain-dataset-manifest/v2"
"""The ``format`` value of a manifest of this shape (v1 had ``train`` and ``validation``)."""

PARTS = ("train", "selection", "gate")
"""The manifest's parts, oldest periods first."""

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


def check_split(selection_periods: int, gate_periods: int, n_periods: int) -> None:
    """Raises ValueError unless the counts leave a training period and a gate period.

    Args:
        selection_periods: Periods for selection, before the gate (0 or more).
        gate_periods: The newest periods, held out for the gate (1 or more).
        n_periods: Periods in the window.
    """
    if gate_periods < 1:
        raise ValueError(
            f"gate_periods must be at least 1 (the newest periods judge the candidate), got "
            f"{gate_periods}"
        )
    if selection_periods < 0:
        raise ValueError(f"selection_periods must be 0 or more, got {selection_periods}")
    if selection_periods + gate_periods >= n_periods:
        raise ValueError(
            f"selection_periods ({selection_periods}) + gate_periods ({gate_periods}) must "
            f"leave a training period of the {n_periods} period(s) in the window: at most "
            f"{max(n_periods - 1, 0)} together"
            + ("; the window needs at least 2 periods" if n_periods < 2 else "")
        )


def plan_time_split(
    data_uri: str,
    declaration: DatasetDeclaration,
    files: Sequence[PeriodFile],
    dimension_sha256: Mapping[str, str],
    selection_periods: int = 1,
    gate_periods: int = 1,
    window: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Builds the manifest: the last ``gate_periods`` periods are the gate, the
    ``selection_periods`` before them selection, the rest train.

    A random split of a time series would leak the future into training, so whole periods
    are held out.

    Args:
        data_uri: The dataset folder, kept as given.
        declaration: The dataset declaration the files were read by.
        files: Every fact-table file in the window with its period, rows and digest.
        dimension_sha256: Digest of each dimension's file, by path.
        selection_periods: Periods before the gate for selection (0 or more).
        gate_periods: The newest periods, for the gate.
        window: The run's data window, recorded under ``"window"``.

    Returns:
        The manifest (see the module docstring).

    Raises:
        ValueError: The counts leave no training or no gate period.
    """
    periods = sorted({f.period for f in files})
    check_split(selection_periods, gate_periods, len(periods))
    gate_cut = periods[len(periods) - gate_periods]
    cut = periods[len(periods) - gate_periods - selection_periods]
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
        "selection": part([f for f in ordered if cut <= f.period < gate_cut]),
        "gate": part([f for f in ordered if f.period >= gate_cut]),
        "dimensions": {name: d.file for name, d in declaration.dimensions.items()},
        "sha256": sha256,
        "content_hash": content_hash(sha256),
    }
    if window is not None:
        manifest["window"] = dict(window)
    return manifest


def training_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest a training or tuning job gets: the same, with the gate part withheld.

    The ``gate`` key goes, its files leave ``sha256`` and ``content_hash`` covers what is
    left; ``withheld`` names the gate's periods, so a reader knows what it cannot see.
    """
    gate = manifest["gate"]
    held = set(gate["files"])
    sha256 = {path: digest for path, digest in manifest["sha256"].items() if path not in held}
    out = {key: value for key, value in manifest.items() if key != "gate"}
    out.update(
        sha256=sha256,
        content_hash=content_hash(sha256),
        withheld={"gate": list(gate["periods"])},
    )
    return out

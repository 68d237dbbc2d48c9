"""One PNG per benchmark, from the ``plot`` part of its result (matplotlib, Agg backend)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.figures import PLOT_KINDS


def check_plot(plot: Mapping[str, Any]) -> None:
    """Refuse a plot description the renderer cannot draw, saying what is wrong.

    Raises:
        ValueError: Unknown kind, no series, a series that is not numbers, or bar values
            that do not match the categories.
    """
    kind = plot.get("kind")
    if kind not in PLOT_KINDS:
        raise ValueError(f"plot kind must be one of {PLOT_KINDS}, got {kind!r}")
    series = plot.get("series")
    if not isinstance(series, Mapping) or not series:
        raise ValueError(f"plot series must be a non-empty {{label: [numbers]}}, got {series!r}")
    for label, values in series.items():
        if not isinstance(values, list | tuple) or not values:
            raise ValueError(f"plot series {label!r} must be a non-empty list, got {values!r}")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise ValueError(f"plot series {label!r} holds a non-number: {values!r}")
    reference = plot.get("reference")
    if reference is not None and not (
        isinstance(reference, Mapping) and isinstance(reference.get("value"), int | float)
    ):
        raise ValueError(f"plot reference must be {{'label', 'value': number}}, got {reference!r}")
    x = plot.get("x")
    if x is not None and (
        kind != "line" or any(len(values) != len(x) for values in series.values())
    ):
        raise ValueError(f"plot x is for line plots, one value per point; got {x!r}")
    if kind == "bar":
        categories = plot.get("categories") or [""]
        lengths = {len(values) for values in series.values()}
        if lengths != {len(categories)}:
            raise ValueError(
                f"bar plot: every series needs one value per category ({len(categories)}), "
                f"got lengths {sorted(lengths)}"
            )


def draw_plot(plot: Mapping[str, Any], title: str, path: Path) -> None:
    """Draw `plot` to the PNG `path`, atomically (a temp file, then a rename).

    Raises:
        ValueError: See :func:`check_plot`.
    """
    check_plot(plot)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: Mapping[str, list[float]] = plot["series"]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    try:
        if plot["kind"] == "box":
            labels = list(series)
            ax.boxplot([series[k] for k in labels], showfliers=False)
            for i, label in enumerate(labels, start=1):
                ax.plot([i] * len(series[label]), series[label], "o", alpha=0.5, markersize=4)
            ax.set_xticks(range(1, len(labels) + 1), labels)
        elif plot["kind"] == "line":
            for label, values in series.items():
                xs = plot.get("x") or range(1, len(values) + 1)
                ax.plot(xs, values, marker=".", label=label)
            ax.legend()
            if plot.get("log"):
                ax.set_xscale("log")
                ax.set_yscale("log")
        else:
            categories = list(plot.get("categories") or [""])
            width = 0.8 / len(series)
            for n, (label, values) in enumerate(series.items()):
                xs = [i + (n - (len(series) - 1) / 2) * width for i in range(len(categories))]
                ax.bar(xs, values, width=width, label=label)
            ax.set_xticks(range(len(categories)), categories)
            if len(categories) > 3:  # long task names would overlap side by side
                plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
            ax.legend()
        reference = plot.get("reference")
        if reference:
            ax.axhline(reference["value"], linestyle="--", color="red", label=reference["label"])
            ax.legend()
        ax.set_title(title)
        ax.set_xlabel(plot.get("xlabel", ""))
        ax.set_ylabel(plot.get("ylabel", ""))
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
        os.close(handle)
        try:
            fig.savefig(temp, format="png")
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    finally:
        plt.close(fig)

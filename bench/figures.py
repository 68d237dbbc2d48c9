"""The shape every benchmark returns, and the small helpers the benchmarks share.

A benchmark module `bench/bench_<name>.py` defines `run(quick: bool) -> dict`; the dict made by
:func:`figure` is what `bench.report` turns into a section of `docs/benchmarks.md`:

- ``name``, ``what``: a title and what exactly was measured, and how;
- ``baseline`` and ``measured``: ``{"label", "value"}``, both measured in the same run;
- ``ratio``: measured / baseline unless ``ratio_meaning`` says otherwise; ``unit`` of the values;
- ``target`` (text, or None where the issue states none) and ``met`` (bool, or None);
- ``notes``: why a target was missed and what would fix it, caveats, definitions;
- ``rows``: further absolute numbers as ``[label, value, unit]``;
- ``plot``: ``{"kind": "box" | "line" | "bar", "series": {label: [numbers]}, "xlabel", "ylabel"}``;
  a bar plot also takes ``categories`` (one value per category in each series), a line plot
  ``x`` (one x value per point) and ``log`` (both axes logarithmic), and any plot an optional
  ``reference`` line ``{"label", "value"}`` (e.g. a target).
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REQUIRED_KEYS = ("name", "baseline", "measured", "ratio", "unit", "target", "met", "notes")
PLOT_KINDS = ("box", "line", "bar")


def figure(
    *,
    name: str,
    what: str,
    baseline: tuple[str, float],
    measured: tuple[str, float],
    unit: str,
    ratio: float | None = None,
    ratio_meaning: str = "measured / baseline",
    target: str | None = None,
    met: bool | None = None,
    notes: str = "",
    rows: Sequence[tuple[str, float | int | str, str]] = (),
    plot: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a benchmark's result in the report's shape.

    Args:
        name: Title of the benchmark.
        what: What was measured and how (one paragraph).
        baseline: (label, value) of the baseline measured in the same run.
        measured: (label, value) of the thing under test.
        unit: Unit of both values (e.g. "s", "trials").
        ratio: Defaults to measured / baseline (None when the baseline is 0).
        ratio_meaning: How to read the ratio.
        target: The issue's target as text, or None when it states none.
        met: Whether the target was met (None without a target).
        notes: Why a target was missed and what would fix it; definitions and caveats.
        rows: Further absolute numbers as (label, value, unit).
        plot: Plot description (see the module docstring).

    Returns:
        A JSON-serialisable dict.

    Raises:
        ValueError: A target without a verdict, or a verdict without a target.
    """
    if (target is None) != (met is None):
        raise ValueError(f"target and met go together; got target={target!r}, met={met!r}")
    if ratio is None:
        ratio = measured[1] / baseline[1] if baseline[1] else None
    return {
        "name": name,
        "what": what,
        "baseline": {"label": baseline[0], "value": float(baseline[1])},
        "measured": {"label": measured[0], "value": float(measured[1])},
        "ratio": ratio,
        "ratio_meaning": ratio_meaning,
        "unit": unit,
        "target": target,
        "met": met,
        "notes": notes,
        "rows": [list(row) for row in rows],
        "plot": dict(plot) if plot else None,
    }


def median(values: Sequence[float]) -> float:
    """The median; a clear error instead of statistics' bare one for an empty list."""
    if not values:
        raise ValueError("median of no samples: the benchmark produced no measurement")
    return float(statistics.median(values))


def time_command(argv: Sequence[str], *, cwd: Path, repeats: int) -> list[float]:
    """Wall seconds of `repeats` runs of a command (each must exit 0).

    Raises:
        RuntimeError: The command failed; its stderr tail is in the message.
    """
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True)
        samples.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-800:]}"
            )
    return samples


def print_figure(result: Mapping[str, Any]) -> None:
    """Print a result's headline and rows (what `python -m bench.bench_x` shows)."""
    base, meas = result["baseline"], result["measured"]
    unit = result["unit"]
    print(f"== {result['name']}")
    print(f"baseline  {base['label']}: {base['value']:.4g} {unit}")
    print(f"measured  {meas['label']}: {meas['value']:.4g} {unit}")
    if result["ratio"] is not None:
        print(f"ratio     {result['ratio']:.3f} ({result['ratio_meaning']})")
    if result["target"]:
        print(f"target    {result['target']}: {'met' if result['met'] else 'MISSED'}")
    for label, value, row_unit in result["rows"]:
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"  {label}: {shown} {row_unit}")
    if result["notes"]:
        print(result["notes"])


def check_figure(result: Mapping[str, Any]) -> None:
    """Check that a benchmark's result has the report's shape and consistent values.

    Raises:
        ValueError: A missing key, a non-numeric baseline or measurement, a ratio that is
            not a number or None, or a verdict without a target (or the other way round).
    """
    missing = [
        key for key in (*REQUIRED_KEYS, "what", "ratio_meaning", "rows") if key not in result
    ]
    if missing:
        raise ValueError(f"benchmark result lacks {missing}; build it with bench.figures.figure")
    for side in ("baseline", "measured"):
        value = result[side].get("value") if isinstance(result[side], Mapping) else None
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ValueError(f"{side} must be {{'label', 'value': number}}, got {result[side]!r}")
    if result["ratio"] is not None and not isinstance(result["ratio"], int | float):
        raise ValueError(f"ratio must be a number or None, got {result['ratio']!r}")
    if (result["target"] is None) != (result["met"] is None):
        raise ValueError(f"target {result['target']!r} and met {result['met']!r} disagree")
    for row in result["rows"]:
        if len(row) != 3:
            raise ValueError(f"each row is [label, value, unit], got {row!r}")

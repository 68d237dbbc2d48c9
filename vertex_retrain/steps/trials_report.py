"""The tuning study's HTML report: the metric of every trial plotted, then the trials table."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_WIDTH, _HEIGHT, _PAD = 640, 260, 40


@dataclass(frozen=True)
class TrialRow:
    """One trial as the report shows it."""

    trial_id: str
    state: str
    parameters: Mapping[str, Any]
    metric: float | None
    message: str = ""


def render_trials_report(
    rows: Sequence[TrialRow], *, metric_id: str, goal: str, best_trial_id: str
) -> str:
    """Renders a self-contained HTML page (inline SVG, no scripts) for KFP's HTML viewer.

    Args:
        rows: The trials, in trial order.
        metric_id: The study's metric.
        goal: ``MAXIMIZE`` or ``MINIMIZE``.
        best_trial_id: The trial to highlight.

    Returns:
        The HTML text.
    """
    title = f"Tuning study: {html.escape(metric_id)} ({html.escape(goal.lower())})"
    return "\n".join(
        [
            "<!doctype html>",
            f"<html><head><meta charset='utf-8'><title>{title}</title>",
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px}.best{background:#e6ffe6}"
            ".failed{color:#a00}</style></head><body>",
            f"<h2>{title}</h2>",
            _plot(rows, metric_id, best_trial_id),
            _table(rows, metric_id, best_trial_id),
            "</body></html>",
        ]
    )


def _plot(rows: Sequence[TrialRow], metric_id: str, best_trial_id: str) -> str:
    points = [
        (index, row)
        for index, row in enumerate(rows)
        if row.metric is not None and math.isfinite(row.metric)
    ]
    if not points:
        return "<p>No trial reported the metric, so there is nothing to plot.</p>"
    values = [row.metric for _, row in points if row.metric is not None]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    count = max(len(rows) - 1, 1)

    def x_of(index: int) -> float:
        return _PAD + (_WIDTH - 2 * _PAD) * index / count

    def y_of(value: float) -> float:
        return _HEIGHT - _PAD - (_HEIGHT - 2 * _PAD) * (value - low) / span

    marks = []
    for index, row in points:
        assert row.metric is not None
        colour = "#2a2" if row.trial_id == best_trial_id else "#36c"
        marks.append(
            f"<circle cx='{x_of(index):.1f}' cy='{y_of(row.metric):.1f}' r='5' "
            f"fill='{colour}'><title>trial {html.escape(row.trial_id)}: "
            f"{row.metric:.6g}</title></circle>"
        )
    axis = (
        f"<line x1='{_PAD}' y1='{_HEIGHT - _PAD}' x2='{_WIDTH - _PAD}' "
        f"y2='{_HEIGHT - _PAD}' stroke='#999'/>"
        f"<line x1='{_PAD}' y1='{_PAD}' x2='{_PAD}' y2='{_HEIGHT - _PAD}' stroke='#999'/>"
        f"<text x='{_WIDTH / 2}' y='{_HEIGHT - 8}' text-anchor='middle'>trial</text>"
        f"<text x='4' y='{_PAD - 10}'>{html.escape(metric_id)}</text>"
        f"<text x='4' y='{_PAD + 4}' font-size='10'>{high:.4g}</text>"
        f"<text x='4' y='{_HEIGHT - _PAD}' font-size='10'>{low:.4g}</text>"
    )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{_WIDTH}' height='{_HEIGHT}' "
        f"role='img' aria-label='{html.escape(metric_id)} per trial'>{axis}"
        + "".join(marks)
        + "</svg>"
    )


def _table(rows: Sequence[TrialRow], metric_id: str, best_trial_id: str) -> str:
    parameter_names = sorted({name for row in rows for name in row.parameters})
    header = "".join(
        f"<th>{html.escape(name)}</th>"
        for name in ["trial", "state", metric_id, *parameter_names, "message"]
    )
    lines = [f"<table><tr>{header}</tr>"]
    for row in rows:
        css = "best" if row.trial_id == best_trial_id else ""
        if row.state != "SUCCEEDED":
            css = "failed"
        metric = "" if row.metric is None else f"{row.metric:.6g}"
        cells = [row.trial_id, row.state, metric]
        cells += [_cell(row.parameters.get(name, "")) for name in parameter_names]
        cells.append(row.message)
        tds = "".join(f"<td>{html.escape(str(cell))}</td>" for cell in cells)
        lines.append(f"<tr class='{css}'>{tds}</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)

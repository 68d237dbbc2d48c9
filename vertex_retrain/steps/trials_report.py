"""The tuning study's HTML report: Optuna's plots of the study, then the trials table.

The plots are Optuna's own visualisation (:mod:`vertex_retrain.steps.tuning_plots`); the page
is a KFP ``HTML`` artifact, which the Vertex console renders.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vertex_retrain.steps.tuning_plots import study_plots_html


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
    """Renders a self-contained HTML page (plotly's script inlined) for KFP's HTML viewer.

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
            study_plots_html(rows, metric_id=metric_id, goal=goal),
            _table(rows, metric_id, best_trial_id),
            "</body></html>",
        ]
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

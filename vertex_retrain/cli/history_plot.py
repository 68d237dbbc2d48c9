"""The history's plot: each metric over the weeks, for the candidate, champion and references.

One panel per metric the candidate reports, the run's primary metric first, one point per
recorded run, in the order of the history (oldest week first), labelled with the run's
``as_of``. matplotlib draws off-screen (Agg).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vertex_retrain.atomic_files import atomic_write_bytes
from vertex_retrain.run_record import ROLES, RunRecord

_STYLES = {"candidate": "o-", "champion": "s--"}
_REFERENCE_STYLES = ("^:", "v:", "d:", "x:")
_MAX_PANELS = 4


def plotted_metrics(records: Sequence[RunRecord]) -> list[str]:
    """The metrics the plot shows: the runs' primary and declared metrics, then the
    candidate's others (at most four panels)."""
    declared = [
        str(name)
        for r in records
        for name in [r.decision.get("primary_metric"), *(r.decision.get("metrics") or [])]
        if name
    ]
    names = sorted({name for r in records for name in r.candidate})
    ordered = list(dict.fromkeys([*declared, *names]))
    return [name for name in ordered if any(name in r.candidate for r in records)][:_MAX_PANELS]


def _series(records: Sequence[RunRecord]) -> list[tuple[str, str, list[dict[str, float]]]]:
    """(label, style, each run's metrics) for the candidate, the champion and each reference."""
    series = [(role, _STYLES[role], [getattr(r, role) for r in records]) for role in ROLES]
    names = sorted({name for r in records for name in r.references})
    for index, name in enumerate(names):
        style = _REFERENCE_STYLES[index % len(_REFERENCE_STYLES)]
        series.append((name, style, [r.references.get(name, {}) for r in records]))
    return series


def plot_history(records: Sequence[RunRecord], path: Path, *, title: str) -> list[str]:
    """Writes the PNG plot of ``records`` to ``path`` (atomically); returns the metrics shown.

    Args:
        records: The runs, in the history's order.
        path: The PNG file; its folder is created.
        title: The figure's title (the model's name).

    Raises:
        ValueError: No run recorded any metric (nothing to plot).
    """
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    metrics = plotted_metrics(records)
    if not metrics:
        raise ValueError(
            f"no recorded run of {title} has evaluation metrics (every run stopped before "
            "evaluating); nothing to plot"
        )
    labels = [r.as_of or r.run[-19:] for r in records]
    figure, axes = pyplot.subplots(
        len(metrics), 1, figsize=(8, 2.6 * len(metrics) + 0.6), squeeze=False, sharex=True
    )
    for axis, metric in zip(axes[:, 0], metrics, strict=True):
        for label, style, per_run in _series(records):
            values = [metrics.get(metric, float("nan")) for metrics in per_run]
            if any(v == v for v in values):  # NaN != NaN: a series no run reported is left out
                axis.plot(range(len(records)), values, style, label=label)
        axis.set_ylabel(metric)
        axis.grid(True, alpha=0.3)
        axis.legend(loc="best", fontsize="small")
    last = axes[-1, 0]
    last.set_xticks(range(len(records)))
    last.set_xticklabels(labels, rotation=30, ha="right", fontsize="small")
    last.set_xlabel("week (as_of)")
    figure.suptitle(f"{title}: metrics over the weeks")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    pyplot.close(figure)
    atomic_write_bytes(path, buffer.getvalue())
    return metrics

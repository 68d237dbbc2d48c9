"""``vertex-retrain history [MODEL]``: the weeks on record, as a table, JSON and a PNG plot.

Each local run's exit handler records its week in the registry database
(:mod:`vertex_retrain.backends.local.model_registry.weeks_on_record`): window, data gate,
candidate, champion and reference metrics, decision, cost, goodput and any Spot fallback.
This prints them oldest week first, each week as the run that decided it with a note for each
later re-run (:mod:`vertex_retrain.cli.history_weeks`; ``--all-runs``: every run), and plots
the metrics over the weeks (``<local root>/history/<model>.png`` unless ``--plot PATH``). Bad
input (an unknown model, an unreadable database, a plot path that is not
a ``.png``) is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from vertex_retrain.cli.console import Column, print_json, printable, render_table
from vertex_retrain.cli.history_weeks import LATER_MARK, WeekRow, later_run_note, rows_of_weeks
from vertex_retrain.run_record import RunRecord, decision_word

COLUMNS = (
    Column("as_of", "AS OF"),
    Column("outcome", "OUTCOME"),
    Column("rows", "ROWS"),
    Column("candidate", "CAND"),
    Column("champion", "CHAMP"),
    Column("reference", "REF"),
    Column("interval", "CI-LOW"),
    Column("goodput", "GOODPUT"),
    Column("cost", "COST"),
    Column("training", "TRAIN"),
)
"""The table fits 80 columns; ``--json`` has every field of every run (its name included)."""


NO_WINDOW = "no window"
"""The week of a run that stopped before its data window was set and was given no ``as_of``."""


def shown_columns(records: Sequence[RunRecord]) -> tuple[Column, ...]:
    """The columns of a model's table: ``TRAIN`` only when a run planned its training kind
    (a pipeline without warm starts keeps the table it had)."""
    if any(record.training_kind for record in records):
        return COLUMNS
    return tuple(column for column in COLUMNS if column.key != "training")


class HistoryInputError(ValueError):
    """Bad input to ``history`` (exit 2)."""


def shown_metric(record: RunRecord, metric: str | None) -> str:
    """The metric a row shows: ``metric`` when given, else the run's primary metric."""
    if metric:
        return metric
    primary = record.decision.get("primary_metric")
    return str(primary) if primary else min(record.candidate, default="")


def history_row(record: RunRecord, metric: str | None = None) -> dict[str, Any]:
    """One table row: the week, its outcome and data, the metric per role, goodput, cost.

    The metric is ``metric``, else the one the run's decision was made on; the reference
    column is the value of it of the reference the candidate had to beat (the strongest
    declared). ``CI-LOW`` is the worst gain the primary metric's bootstrap interval (95% or as
    declared) allows, in the metric's better direction, over the champion (``c``), or over that
    reference (``r``) when no champion was compared: ``+0.004c`` is a sure gain, a negative
    value an interval that includes no gain; ``--json`` has the whole interval.

    A run without a week (stopped before its data window, given no ``as_of``) shows
    :data:`NO_WINDOW` as its week.

    ``ROWS`` is the rows of the newest period in the window, the one the data gate judged
    (its ``rows`` statistic); none when no gate measured a period.

    ``TRAIN`` is the kind of training the week ran: ``warm`` (from the champion), ``full``,
    or ``warm+full`` (the gate refused the warm start, and the week retrained fully);
    ``--json`` says why.

    The outcome is the decision (``champion``, ``challenger``, or ``unchanged`` when the
    candidate was the champion itself), marked ``!`` when a person forced it (``--json`` has
    the reason) and ``~`` when the champion could not be judged on the gate period (a
    replay), ``gate`` when the data gate stopped the run, else the run's state. The cost is
    the plan of the job's scheduling strategy (Spot's for ``SPOT``, on-demand's otherwise),
    after a fallback the Spot attempts and on-demand training together, marked ``*``, and
    none for a run that trained nothing.
    """
    statistics = record.data.get("statistics") or {}
    fallback = record.spot_fallback
    cost: str | None
    if fallback.get("total_cost") is not None:
        cost = f"{_money(fallback['total_cost'], fallback.get('currency', ''))}*"
    elif record.cost.get("trained") is False:
        cost = None
    else:
        plan = "on_demand_plan" if _pays_on_demand(record.cost) else "spot_plan"
        cost = _money(record.cost.get(plan), record.cost.get("currency", ""))
    name = shown_metric(record, metric)
    reference = str(record.decision.get("reference") or "")
    return {
        "as_of": record.as_of or NO_WINDOW,
        "outcome": _outcome(record),
        "training": record.training_kind.get("kind") or None,
        "rows": statistics.get("rows"),
        "metric": name,
        "candidate": _metric(record.candidate.get(name)),
        "champion": _metric(record.champion.get(name)),
        "reference": _metric(record.references.get(reference, {}).get(name)),
        "interval": _interval(record),
        "goodput": record.goodput,
        "cost": cost,
    }


def _metric(value: float | None) -> str | None:
    """A metric with four decimals, as the run summary and CI-LOW show it (0.5960, not 0.596)."""
    return None if value is None else f"{value:.4f}"


def _pays_on_demand(cost: dict[str, Any]) -> bool:
    # Records written before the strategy was kept have none: they show the Spot plan, as
    # they always did.
    strategy = cost.get("scheduling_strategy") or "SPOT"
    return strategy != "SPOT"


def _interval(record: RunRecord) -> str | None:
    """The interval's worst gain in the primary metric's better direction: its lower bound
    for a higher-is-better metric, minus its upper bound for a lower-is-better one (records
    from before directions were kept read as higher-is-better)."""
    intervals = record.decision.get("intervals") or {}
    lower_is_better = record.decision.get("primary_direction") == "lower"
    for key, mark in (("champion", "c"), (f"reference:{record.decision.get('reference')}", "r")):
        found = intervals.get(key)
        if found:
            worst = -float(found["high"]) if lower_is_better else float(found["low"])
            return f"{worst:+.4f}{mark}"
    return None


def _outcome(record: RunRecord) -> str:
    word = decision_word(record.decision)
    if word:
        if record.decision.get("override"):
            word += "!"
        if str(record.decision.get("champion_comparison", "")).startswith("not comparable"):
            word += "~"
        return word
    if record.data.get("passed") is False:
        return "gate"
    return record.state or "-"


def _money(value: Any, currency: str) -> str | None:
    from vertex_retrain.specs.cost import format_money

    return None if value is None else format_money(value, currency)


def _plot_paths(models: Sequence[str], plot: str | None, root: Path) -> dict[str, Path]:
    if plot is not None:
        if len(models) > 1:
            raise HistoryInputError(
                f"--plot names one file but {len(models)} models have runs "
                f"({', '.join(models)}); name a MODEL, or leave --plot out to get one plot each "
                f"under {root / 'history'}"
            )
        path = Path(plot).expanduser()
        if path.suffix.lower() != ".png":
            raise HistoryInputError(f"--plot must name a .png file; got {plot!r}")
        return {models[0]: path} if models else {}
    return {model: root / "history" / f"{_file_name(model)}.png" for model in models}


def _file_name(model: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-.") or "model"


def _load(model: str | None, db: str | None) -> list[RunRecord]:
    from vertex_retrain.backends.local.model_registry.registry_db import (
        RegistryError,
        RegistryInputError,
        RegistryNotFoundError,
    )
    from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
    from vertex_retrain.cli.db_option import DbOptionError, checked_db

    try:
        checked_db(db, can_create=False)  # never makes a registry of the file it is given
        return RunHistory(db).weeks(model)
    except (DbOptionError, RegistryNotFoundError, RegistryInputError, RegistryError) as error:
        raise HistoryInputError(str(error)) from error


def cli_history(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``history [MODEL] [--json] [--wide] [--metric NAME] [--plot PATH | --no-plot]
    [--all-runs] [--db]``.

    Returns:
        0, or 2 on bad input (one line on stderr).
    """
    from vertex_retrain.backends.local.storage import local_root

    out = out or sys.stdout  # read now: a test (or a caller) may have replaced it
    model = getattr(args, "model", None)
    metric = getattr(args, "metric", None)
    all_runs = getattr(args, "all_runs", False)
    try:
        every_run = _load(model, getattr(args, "db", None))
        rows = [WeekRow(r) for r in every_run] if all_runs else rows_of_weeks(every_run)
        records = [row.record for row in rows]
        if metric:
            check_metric(metric, records)
        models = sorted({r.model for r in records})
        plots = (
            {}
            if getattr(args, "no_plot", False)
            else _plot_paths(models, getattr(args, "plot", None), local_root())
        )
        written = _write_plots(records, plots)
        notes = _serving_notes(models, getattr(args, "db", None))
    except HistoryInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print_json(out, [_json_row(row) for row in rows])
        for line in [*notes.values(), *written]:
            print(line, file=sys.stderr)
        return 0
    for name in models or [""]:
        shown = [row for row in rows if row.record.model == name]
        if name:
            _write_heading(out, name, shown, metric)
        table = []
        for row in shown:
            cells = history_row(row.record, metric)
            if row.later:
                cells["outcome"] += LATER_MARK
            table.append(cells)
        render_table(
            out,
            shown_columns([row.record for row in shown]),
            table,
            wide=getattr(args, "wide", False),
            empty="(no run recorded yet: each local run records its week when it ends)",
        )
        for row in shown:
            for later in row.later:
                out.write(printable(f"{row.record.as_of or '-'}: {later_run_note(later)}") + "\n")
        if name in notes:
            out.write(printable(notes[name]) + "\n")
    for line in written:
        out.write(line + "\n")
    return 0


def recorded_metrics(records: Sequence[RunRecord]) -> set[str]:
    """Every metric name the records hold, for any role (candidate, champion, reference)."""
    names: set[str] = set()
    for record in records:
        names |= set(record.candidate) | set(record.champion)
        for metrics in record.references.values():
            names |= set(metrics)
    return names


def check_metric(metric: str, records: Sequence[RunRecord]) -> None:
    """Refuses a ``--metric`` no shown run recorded (a typo would print a column of ``-``).

    Raises:
        HistoryInputError: Runs are shown and none has ``metric``; names the close matches and
            the metrics recorded.
    """
    known = sorted(recorded_metrics(records))
    if not records or metric in known:
        return
    close = difflib.get_close_matches(metric, known, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
    raise HistoryInputError(
        f"--metric {metric!r}: no run shown recorded it{hint}; "
        f"the runs' metrics: {', '.join(known) or '(none)'}"
    )


def _write_heading(out: TextIO, name: str, rows: Sequence[WeekRow], metric: str | None) -> None:
    """The model's line above its table (metric and marks), and how many runs are left out."""
    shown_metrics = sorted({shown_metric(row.record, metric) for row in rows} - {""})
    what = ", ".join(shown_metrics) or "no metric"
    heading = (
        f"{name}: {what} of each model; CI-LOW = worst gain the interval allows "
        "over the champion (c) or the reference (r); ROWS = the newest period's; COST = Vertex's "
        "price of the training at the hours assumed for its TRAIN kind (full: "
        "expected_training_hours, warm: expected_warm_training_hours); "
        "! = decision forced, ~ = champion "
        "not comparable (a replay), * = Spot fell back to on-demand"
    )
    if any(row.later for row in rows):
        heading += f", {LATER_MARK} = re-run since, promoting nothing (below)"
    out.write(printable(heading) + "\n")
    hidden = sum(row.earlier for row in rows)
    if hidden:
        out.write(
            f"({hidden} earlier run(s) of a week re-run are not shown; --all-runs shows them)\n"
        )


def _json_row(row: WeekRow) -> dict[str, Any]:
    """A shown run's record whole; with ``later_runs`` (run, state, note) when the week was
    re-run after it, promoting nothing."""
    shown = row.record.to_dict()
    if row.later:
        shown["later_runs"] = [
            {"run": r.run, "state": r.state, "note": later_run_note(r)} for r in row.later
        ]
    return shown


def _serving_notes(models: Sequence[str], db: str | None) -> dict[str, str]:
    """Model -> the line saying its champion is not what its endpoint serves, where it is
    not (:mod:`vertex_retrain.backends.local.serving.champion_serving`)."""
    from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
    from vertex_retrain.backends.local.model_registry.registry_db import RegistryError
    from vertex_retrain.backends.local.serving.champion_serving import champion_not_serving
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    notes = {}
    try:
        registry, endpoints = ModelRegistry(db), LocalEndpoints(db)
        for model in models:
            found = champion_not_serving(model, registry=registry, endpoints=endpoints)
            if found is not None:
                notes[model] = found.line()
    except RegistryError as error:
        raise HistoryInputError(str(error)) from error
    return notes


def _write_plots(records: Sequence[RunRecord], plots: dict[str, Path]) -> list[str]:
    from vertex_retrain.cli.history_plot import plot_history

    written = []
    for name, path in plots.items():
        try:
            shown = plot_history([r for r in records if r.model == name], path, title=name)
        except ValueError as nothing:
            written.append(f"plot of {name}: not written: {nothing}")
            continue
        except OSError as error:
            raise HistoryInputError(f"cannot write the plot to {path}: {error}") from error
        written.append(f"plot of {name} ({', '.join(shown)}): {path}")
    return written

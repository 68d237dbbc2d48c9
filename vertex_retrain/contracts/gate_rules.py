"""How the data gate judges a period: each check of :data:`~.data_gate.CHECKS`, and the
statistics recorded with the verdict. Pure: the numbers arrive as
:class:`~.data_gate.PeriodStatistics`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from vertex_retrain.contracts.dataset import DatasetDeclaration
from vertex_retrain.contracts.gate_report import (
    Breach,
    GateReport,
    GateThresholds,
    PeriodStatistics,
    SchemaProblem,
)

__all__ = ["evaluate_gate", "largest_mix_shift"]


def evaluate_gate(
    *,
    declaration: DatasetDeclaration,
    as_of: dt.date,
    current: PeriodStatistics | None,
    previous: PeriodStatistics | None,
    schema_problems: Iterable[SchemaProblem] = (),
    empty_files: Iterable[str] = (),
    thresholds: GateThresholds | None = None,
    accept: Iterable[str] = (),
) -> GateReport:
    """Judges the period (``current``) against the declaration and the period before.

    Args:
        declaration: The dataset declaration (period, group and dimension names).
        as_of: The window end.
        current: The newest period in the window (None: none to measure).
        previous: The period before it in the window (None: comparisons are skipped).
        schema_problems: Columns of any file in the window that differ from the declaration.
        empty_files: Files in the window with no rows.
        thresholds: What is tolerated (defaults when None).
        accept: Check names whose breaches do not stop the run.

    Returns:
        The report; ``passed`` is False when a breach was not accepted.
    """
    limits = (thresholds or GateThresholds()).for_period(declaration.table.period_days)
    found: list[Breach] = []
    found += _schema_breaches(schema_problems)
    found += [
        Breach("empty_file", f"{path} holds no rows", "0 rows", "> 0 rows") for path in empty_files
    ]
    if current is not None:
        found += _period_breaches(declaration, as_of, current, previous, limits)
        if previous is not None:
            found += _comparison_breaches(declaration, current, previous, limits)
    allowed = set(accept)
    breaches = [
        Breach(b.check, b.detail, b.value, b.threshold, accepted=b.check in allowed) for b in found
    ]
    return GateReport(
        as_of=as_of,
        period=current.period if current is not None else None,
        breaches=breaches,
        statistics=_statistics(as_of, current, previous, limits),
    )


def _schema_breaches(problems: Iterable[SchemaProblem]) -> list[Breach]:
    """One breach per column and type found, however many files share it."""
    by_kind: dict[tuple[str, str, str], list[str]] = {}
    for problem in problems:
        by_kind.setdefault((problem.column, problem.found, problem.expected), []).append(
            problem.path
        )
    found = []
    for (column, kind, expected), paths in by_kind.items():
        where = paths[0] if len(paths) == 1 else f"{len(paths)} files, first {paths[0]}"
        found.append(
            Breach(
                "schema",
                f"column {column!r} is {kind} in {where}; the declaration says {expected}",
                kind,
                f"{expected} (the declaration)",
            )
        )
    return found


def _age_days(as_of: dt.date, last: dt.datetime) -> float:
    return (dt.datetime.combine(as_of, dt.time()) - last).total_seconds() / 86400


def _share(count: int, rows: int) -> float:
    return count / rows if rows else 0.0


def _period_breaches(
    declaration: DatasetDeclaration,
    as_of: dt.date,
    period: PeriodStatistics,
    previous: PeriodStatistics | None,
    limits: GateThresholds,
) -> list[Breach]:
    found = []
    name = f"the period starting {period.period.isoformat()}"
    age = _age_days(as_of, period.last)
    max_age = float(limits.max_data_age_days or 0)
    if age > max_age:
        found.append(
            Breach(
                "data_age",
                f"the newest row ({period.last.isoformat(sep=' ')}, in {name}) is {age:.1f} "
                "days before as_of: the latest period is missing or empty",
                f"{age:.1f} days",
                f"<= {max_age:g} days (max_data_age_days)",
            )
        )
    # Unset, a period must cover the days the one before covered: a table with one row date a
    # period (weekly snapshots) is whole on one day, a daily table on seven.
    if limits.min_days_covered is None:
        min_days = previous.days_covered if previous is not None else 1
        threshold = f">= {min_days} (the period before's days; min_days_covered sets it)"
    else:
        min_days = limits.min_days_covered
        threshold = f">= {min_days} (min_days_covered)"
    if period.days_covered < min_days:
        found.append(
            Breach(
                "days_covered",
                f"{name} has rows on {period.days_covered} day(s) "
                f"({period.first.date().isoformat()} .. {period.last.date().isoformat()}): "
                "a half-loaded period?",
                f"{period.days_covered} days",
                threshold,
            )
        )
    length = declaration.table.period_days
    span = (period.last - period.first).total_seconds() / 86400
    if span >= length:
        found.append(
            Breach(
                "time_range",
                f"{name} spans {span:.1f} days",
                f"{span:.1f} days",
                f"< {length} days",
            )
        )
    for column, nulls in period.nulls.items():
        share = _share(nulls, period.rows)
        if share > limits.max_null_share:
            found.append(
                Breach(
                    "nulls",
                    f"column {column!r} holds {nulls} null(s) in {period.rows} rows",
                    f"{share:.4f}",
                    f"<= {limits.max_null_share:g} (max_null_share)",
                )
            )
    duplicates = _share(period.duplicate_rows, period.rows)
    if duplicates > limits.max_duplicate_share:
        found.append(
            Breach(
                "duplicates",
                f"{period.duplicate_rows} of {period.rows} rows repeat another row exactly",
                f"{duplicates:.4f}",
                f"<= {limits.max_duplicate_share:g} (max_duplicate_share)",
            )
        )
    for dimension, unknown in sorted(period.unknown_rows.items()):
        share = _share(unknown, period.rows)
        if share > limits.max_unknown_share:
            spec = declaration.dimensions[dimension]
            found.append(
                Breach(
                    "unknown_keys",
                    f"{unknown} row(s) name a {spec.key} missing from {spec.file} "
                    f"(dimension {dimension})",
                    f"{share:.4f}",
                    f"<= {limits.max_unknown_share:g} (max_unknown_share)",
                )
            )
    return found


def _ratio_breach(
    check: str, what: str, now: int, before: int, low: float, high: float | None, names: str
) -> Breach | None:
    if before <= 0:
        return None
    ratio = now / before
    if ratio >= low and (high is None or ratio <= high):
        return None
    bounds = f">= {low:g}" + (f" and <= {high:g}" if high is not None else "")
    return Breach(
        check,
        f"{now:,} {what} in this period against {before:,} the period before",
        f"{ratio:.2f}",
        f"{bounds} ({names})",
    )


def _comparison_breaches(
    declaration: DatasetDeclaration,
    period: PeriodStatistics,
    before: PeriodStatistics,
    limits: GateThresholds,
) -> list[Breach]:
    rows = _ratio_breach(
        "rows", "rows", period.rows, before.rows, limits.min_row_ratio, limits.max_row_ratio,
        "min_row_ratio, max_row_ratio",
    )  # fmt: skip
    found = [rows] if rows is not None else []
    for column, count in period.distinct.items():
        breach = _ratio_breach(
            "distinct", f"distinct {column!r} values", count, before.distinct.get(column, 0),
            limits.min_distinct_ratio, None, "min_distinct_ratio",
        )  # fmt: skip
        if breach is not None:
            found.append(breach)
    group = declaration.table.group_column or "group"
    vanished = sorted(set(before.group_rows) - {g for g, n in period.group_rows.items() if n > 0})
    if len(vanished) > limits.max_vanished_groups:
        shown = ", ".join(f"{g} ({before.group_rows[g]} rows)" for g in vanished[:10])
        more = f" and {len(vanished) - 10} more" if len(vanished) > 10 else ""
        found.append(
            Breach(
                "groups_vanished",
                f"{group} {shown}{more} had rows the period before and none in this one",
                f"{len(vanished)} group(s)",
                f"<= {limits.max_vanished_groups} (max_vanished_groups)",
            )
        )
    if period.first <= before.last:
        found.append(
            Breach(
                "time_range",
                f"the period starting {period.period.isoformat()} has a row at "
                f"{period.first.isoformat(sep=' ')}, before the period before ends "
                f"({before.last.isoformat(sep=' ')})",
                period.first.isoformat(sep=" "),
                f"> {before.last.isoformat(sep=' ')}",
            )
        )
    worst, shift = largest_mix_shift(period, before, limits.min_group_rows_for_mix)
    if worst is not None and shift > limits.max_mix_shift:
        category = declaration.mix.category_column if declaration.mix else "category"
        found.append(
            Breach(
                "mix_shift",
                f"{group} {worst}'s {category} mix moved by {shift:.2f} from the period before",
                f"{shift:.2f}",
                f"<= {limits.max_mix_shift:g} (max_mix_shift)",
            )
        )
    return found


def largest_mix_shift(
    period: PeriodStatistics, before: PeriodStatistics, min_rows: int
) -> tuple[str | None, float]:
    """The group whose category mix moved most, and by how much (total variation).

    Only groups with at least ``min_rows`` rows in both periods are compared.
    """
    worst: tuple[str | None, float] = (None, 0.0)
    for group, mix in sorted(period.category_mix.items()):
        earlier = before.category_mix.get(group, {})
        now_total, then_total = sum(mix.values()), sum(earlier.values())
        if now_total < min_rows or then_total < min_rows:
            continue
        categories = set(mix) | set(earlier)
        distance = 0.5 * sum(
            abs(mix.get(c, 0) / now_total - earlier.get(c, 0) / then_total) for c in categories
        )
        if distance > worst[1]:
            worst = (group, distance)
    return worst


def _statistics(
    as_of: dt.date,
    period: PeriodStatistics | None,
    before: PeriodStatistics | None,
    limits: GateThresholds,
) -> dict[str, float]:
    if period is None:
        return {}
    stats: dict[str, float] = {
        "rows": period.rows,
        "days_covered": period.days_covered,
        "data_age_days": round(_age_days(as_of, period.last), 3),
        "null_share": _share(sum(period.nulls.values()), period.rows),
        "duplicate_share": _share(period.duplicate_rows, period.rows),
    }
    if period.group_rows:
        stats["groups"] = sum(1 for n in period.group_rows.values() if n > 0)
    stats.update({f"distinct_{column}": count for column, count in period.distinct.items()})
    stats.update(
        {f"unknown_{name}_share": _share(n, period.rows) for name, n in period.unknown_rows.items()}
    )
    if before is not None:
        stats["previous_rows"] = before.rows
        stats["row_ratio"] = round(period.rows / before.rows, 4) if before.rows else 0.0
        if before.group_rows:
            stats["previous_groups"] = sum(1 for n in before.group_rows.values() if n > 0)
        stats.update(
            {f"previous_distinct_{column}": count for column, count in before.distinct.items()}
        )
        if period.category_mix:
            stats["max_mix_shift"] = round(
                largest_mix_shift(period, before, limits.min_group_rows_for_mix)[1], 4
            )
    return stats

"""The data gate: the week's transactions against the contract and the week before.

``check_data`` runs before any training is paid for. It measures the newest week in the run's
window and the week before it (:class:`WeekStatistics`, computed with pyarrow by
:mod:`vertex_retrain.steps.data_gate`) and this module judges them against
:class:`GateThresholds`. Each check has a name (:data:`CHECKS`); a breach names the check, the
value and the threshold. ``accept`` names checks a person has looked at and accepts for this
run (a store that really closed, a promotion week): their breaches are still reported, marked
accepted, and do not stop the run. This module is pure.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = [
    "CHECKS",
    "Breach",
    "DataGateInputError",
    "GateReport",
    "GateThresholds",
    "SchemaProblem",
    "WeekStatistics",
    "evaluate_gate",
    "parse_accept",
    "thresholds_from",
]

CHECKS: dict[str, str] = {
    "schema": "a file's columns and types against the transactions contract",
    "empty_file": "a transactions file in the window holds no rows",
    "data_age": "days from the newest transaction to as_of (a missing latest week)",
    "days_covered": "days of the week with any transaction (a half-loaded week)",
    "rows": "rows against the week before",
    "members": "distinct members against the week before",
    "drinks": "distinct drinks sold against the week before",
    "stores_vanished": "shops that sold the week before and not this week",
    "nulls": "share of nulls in a column",
    "time_range": "the week spans more than 7 days or overlaps the week before",
    "duplicates": "share of rows identical to another row",
    "unknown_ids": "share of rows whose store or drink is not in stores/drinks.parquet",
    "drink_mix": "largest shift of a shop's drink-category mix (total variation distance)",
}
"""Every check, by the name ``accept`` uses."""


class DataGateInputError(ValueError):
    """A threshold or an accepted check name is wrong; the message lists what is allowed."""


@dataclass(frozen=True)
class GateThresholds:
    """What the gate tolerates; every field is a key of the ``data_gate_thresholds`` parameter.

    Attributes:
        min_row_ratio: Rows this week / rows the week before, at least.
        max_row_ratio: The same ratio, at most.
        min_member_ratio: Distinct members this week / the week before, at least.
        min_drink_ratio: Distinct drinks sold this week / the week before, at least.
        max_vanished_stores: Shops that sold the week before and sold nothing this week.
        min_days_covered: Days of the week with at least one transaction.
        max_data_age_days: Days from the newest transaction to ``as_of``; more means the
            latest week is missing.
        max_null_share: Nulls / rows in any contract column.
        max_duplicate_share: Rows identical to another row / rows.
        max_unknown_share: Rows whose store (or drink) is not in the catalogue / rows.
        max_mix_shift: Total variation distance between a shop's drink-category mix this
            week and the week before (0: same mix, 1: nothing in common).
        min_store_rows_for_mix: Rows a shop needs in both weeks for its mix to be compared
            (a small sample's mix moves by chance alone).
    """

    min_row_ratio: float = 0.7
    max_row_ratio: float = 1.5
    min_member_ratio: float = 0.7
    min_drink_ratio: float = 0.7
    max_vanished_stores: int = 0
    min_days_covered: int = 7
    max_data_age_days: float = 7.0
    max_null_share: float = 0.0
    max_duplicate_share: float = 0.001
    max_unknown_share: float = 0.0
    max_mix_shift: float = 0.35
    min_store_rows_for_mix: int = 100

    def as_dict(self) -> dict[str, float | int]:
        """The thresholds as the pipeline parameter's value."""
        return asdict(self)


def thresholds_from(values: Mapping[str, Any] | None) -> GateThresholds:
    """Thresholds from a (partial) mapping; keys not given keep their defaults.

    Raises:
        DataGateInputError: An unknown key, or a value that is not a finite number >= 0
            (an integer for the integer thresholds).
    """
    known = {f.name: f for f in fields(GateThresholds)}
    chosen: dict[str, Any] = {}
    for key, value in (values or {}).items():
        if key not in known:
            raise DataGateInputError(
                f"data_gate_thresholds has no key {key!r}; known keys: {', '.join(known)}"
            )
        # bool is an int subclass; True as a threshold is a mistake, not a 1.
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number) or number < 0:
            raise DataGateInputError(
                f"data_gate_thresholds[{key!r}] is {value!r}; expected a finite number >= 0"
            )
        if known[key].type in ("int", int):
            if number != int(number):
                raise DataGateInputError(
                    f"data_gate_thresholds[{key!r}] is {value!r}; expected a whole number"
                )
            number = int(number)
        chosen[key] = number
    return GateThresholds(**chosen)


def parse_accept(text: str) -> frozenset[str]:
    """The checks a person accepts for this run, from ``"rows, stores_vanished"``.

    Raises:
        DataGateInputError: A name that is not a check (the message lists them).
    """
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(names - set(CHECKS))
    if unknown:
        raise DataGateInputError(
            f"data_gate_accept names unknown check(s) {', '.join(unknown)}; known checks: "
            f"{', '.join(CHECKS)}"
        )
    return names


@dataclass(frozen=True)
class SchemaProblem:
    """One column of one file that differs from the contract (``found`` "missing" if absent)."""

    path: str
    column: str
    found: str
    expected: str


@dataclass(frozen=True)
class WeekStatistics:
    """What the gate measures of one week.

    Attributes:
        week: The week index (the contract's ``week`` column).
        rows: Transactions.
        members: Distinct members.
        drinks: Distinct drinks sold.
        store_rows: Rows per shop.
        nulls: Nulls per contract column.
        first: Oldest transaction.
        last: Newest transaction.
        days_covered: Distinct days with a transaction.
        duplicate_rows: Rows identical to an earlier row.
        unknown_store_rows: Rows whose shop is not in ``stores.parquet``.
        unknown_drink_rows: Rows whose drink is not in ``drinks.parquet``.
        category_mix: Shop -> drink category -> rows.
    """

    week: int
    rows: int
    members: int
    drinks: int
    store_rows: dict[int, int]
    nulls: dict[str, int]
    first: dt.datetime
    last: dt.datetime
    days_covered: int
    duplicate_rows: int
    unknown_store_rows: int
    unknown_drink_rows: int
    category_mix: dict[int, dict[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Breach:
    """One check the week failed.

    Attributes:
        check: A key of :data:`CHECKS`.
        detail: What was found, in words.
        value: The measured value.
        threshold: The threshold it broke.
        accepted: A person accepted it for this run (``data_gate_accept``).
    """

    check: str
    detail: str
    value: str
    threshold: str
    accepted: bool = False

    def line(self) -> str:
        """``check: detail (value V, threshold T)``, marked when accepted."""
        mark = " [accepted]" if self.accepted else ""
        return f"{self.check}: {self.detail} (value {self.value}, threshold {self.threshold}){mark}"


@dataclass(frozen=True)
class GateReport:
    """The gate's verdict on one week.

    Attributes:
        as_of: The window end.
        week: The week checked (None when the window holds no week to measure).
        breaches: Every breach, accepted ones included.
        statistics: Numbers of the week and of the week before, for the run's record.
    """

    as_of: dt.date
    week: int | None
    breaches: list[Breach]
    statistics: dict[str, float]

    @property
    def passed(self) -> bool:
        """True when every breach (if any) was accepted."""
        return all(b.accepted for b in self.breaches)

    def verdict(self) -> str:
        """One line: passed, or each breach that stops the run and how to accept it."""
        week = f"week {self.week}" if self.week is not None else "the window"
        stopping = [b for b in self.breaches if not b.accepted]
        accepted = [b.check for b in self.breaches if b.accepted]
        if not stopping:
            tail = f" ({len(accepted)} accepted: {', '.join(accepted)})" if accepted else ""
            return f"data gate passed for {week} before {self.as_of.isoformat()}{tail}"
        checks = ",".join(dict.fromkeys(b.check for b in stopping))
        return (
            f"data gate stopped the run before training: {len(stopping)} breach(es) in {week} "
            f"before {self.as_of.isoformat()}: "
            + "; ".join(b.line() for b in stopping)
            + f". If this change is known and fine, re-run with --param data_gate_accept={checks}"
        )

    def markdown(self) -> str:
        """The report for the pipeline UI."""
        lines = [f"# Data gate: {'passed' if self.passed else 'STOPPED'}", "", self.verdict(), ""]
        if self.breaches:
            lines += [
                "| check | detail | value | threshold | accepted |",
                "| --- | --- | --- | --- | --- |",
            ]
            lines += [
                f"| {b.check} | {b.detail} | {b.value} | {b.threshold} | "
                f"{'yes' if b.accepted else 'no'} |"
                for b in self.breaches
            ]
            lines.append("")
        lines += ["| statistic | value |", "| --- | --- |"]
        lines += [f"| {name} | {_number(value)} |" for name, value in self.statistics.items()]
        return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return (
        f"{value:,.4g}" if isinstance(value, float) and not value.is_integer() else f"{value:,.0f}"
    )


def evaluate_gate(
    *,
    as_of: dt.date,
    current: WeekStatistics | None,
    previous: WeekStatistics | None,
    schema_problems: Iterable[SchemaProblem] = (),
    empty_files: Iterable[str] = (),
    thresholds: GateThresholds | None = None,
    accept: Iterable[str] = (),
) -> GateReport:
    """Judges the week (``current``) against the contract and the week before.

    Args:
        as_of: The window end.
        current: The newest week in the window (None: none to measure).
        previous: The week before it in the window (None: comparisons are skipped).
        schema_problems: Columns of any file in the window that differ from the contract.
        empty_files: Files in the window with no rows.
        thresholds: What is tolerated (defaults when None).
        accept: Check names whose breaches do not stop the run.

    Returns:
        The report; ``passed`` is False when a breach was not accepted.
    """
    limits = thresholds or GateThresholds()
    found: list[Breach] = []
    found += [
        Breach("schema", f"{p.path}: column {p.column!r} is {p.found}", p.found, p.expected)
        for p in schema_problems
    ]
    found += [
        Breach("empty_file", f"{path} holds no rows", "0 rows", "> 0 rows") for path in empty_files
    ]
    if current is not None:
        found += _week_breaches(as_of, current, limits)
        if previous is not None:
            found += _comparison_breaches(current, previous, limits)
    allowed = set(accept)
    breaches = [
        Breach(b.check, b.detail, b.value, b.threshold, accepted=b.check in allowed) for b in found
    ]
    return GateReport(
        as_of=as_of,
        week=current.week if current is not None else None,
        breaches=breaches,
        statistics=_statistics(as_of, current, previous, limits),
    )


def _age_days(as_of: dt.date, last: dt.datetime) -> float:
    return (dt.datetime.combine(as_of, dt.time()) - last).total_seconds() / 86400


def _week_breaches(as_of: dt.date, week: WeekStatistics, limits: GateThresholds) -> list[Breach]:
    found = []
    age = _age_days(as_of, week.last)
    if age > limits.max_data_age_days:
        found.append(
            Breach(
                "data_age",
                f"the newest transaction ({week.last.isoformat(sep=' ')}, week {week.week}) is "
                f"{age:.1f} days before as_of: the latest week is missing or empty",
                f"{age:.1f} days",
                f"<= {limits.max_data_age_days:g} days (max_data_age_days)",
            )
        )
    if week.days_covered < limits.min_days_covered:
        found.append(
            Breach(
                "days_covered",
                f"week {week.week} has transactions on {week.days_covered} day(s) "
                f"({week.first.date().isoformat()} .. {week.last.date().isoformat()}): "
                "a half-loaded week?",
                f"{week.days_covered} days",
                f">= {limits.min_days_covered} (min_days_covered)",
            )
        )
    span = (week.last - week.first).total_seconds() / 86400
    if span >= 7:
        found.append(
            Breach(
                "time_range",
                f"week {week.week} spans {span:.1f} days",
                f"{span:.1f} days",
                "< 7 days",
            )
        )
    for column, nulls in week.nulls.items():
        share = nulls / week.rows if week.rows else 0.0
        if share > limits.max_null_share:
            found.append(
                Breach(
                    "nulls",
                    f"column {column!r} holds {nulls} null(s) in {week.rows} rows",
                    f"{share:.4f}",
                    f"<= {limits.max_null_share:g} (max_null_share)",
                )
            )
    duplicates = week.duplicate_rows / week.rows if week.rows else 0.0
    if duplicates > limits.max_duplicate_share:
        found.append(
            Breach(
                "duplicates",
                f"{week.duplicate_rows} of {week.rows} rows repeat another row exactly",
                f"{duplicates:.4f}",
                f"<= {limits.max_duplicate_share:g} (max_duplicate_share)",
            )
        )
    for kind, unknown in (("store", week.unknown_store_rows), ("drink", week.unknown_drink_rows)):
        share = unknown / week.rows if week.rows else 0.0
        if share > limits.max_unknown_share:
            found.append(
                Breach(
                    "unknown_ids",
                    f"{unknown} row(s) name a {kind} missing from {kind}s.parquet",
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
        f"{now:,} {what} this week against {before:,} the week before",
        f"{ratio:.2f}",
        f"{bounds} ({names})",
    )


def _comparison_breaches(
    week: WeekStatistics, before: WeekStatistics, limits: GateThresholds
) -> list[Breach]:
    candidates = [
        _ratio_breach(
            "rows", "rows", week.rows, before.rows, limits.min_row_ratio, limits.max_row_ratio,
            "min_row_ratio, max_row_ratio",
        ),
        _ratio_breach(
            "members", "members", week.members, before.members, limits.min_member_ratio, None,
            "min_member_ratio",
        ),
        _ratio_breach(
            "drinks", "drinks", week.drinks, before.drinks, limits.min_drink_ratio, None,
            "min_drink_ratio",
        ),
    ]  # fmt: skip
    found = [b for b in candidates if b is not None]
    vanished = sorted(set(before.store_rows) - {s for s, n in week.store_rows.items() if n > 0})
    if len(vanished) > limits.max_vanished_stores:
        shown = ", ".join(f"{s} ({before.store_rows[s]} rows)" for s in vanished[:10])
        more = f" and {len(vanished) - 10} more" if len(vanished) > 10 else ""
        found.append(
            Breach(
                "stores_vanished",
                f"store(s) {shown}{more} sold the week before and nothing this week",
                f"{len(vanished)} store(s)",
                f"<= {limits.max_vanished_stores} (max_vanished_stores)",
            )
        )
    if week.first <= before.last:
        found.append(
            Breach(
                "time_range",
                f"week {week.week} starts {week.first.isoformat(sep=' ')}, before week "
                f"{before.week} ends ({before.last.isoformat(sep=' ')})",
                week.first.isoformat(sep=" "),
                f"> {before.last.isoformat(sep=' ')}",
            )
        )
    store, shift = largest_mix_shift(week, before, limits.min_store_rows_for_mix)
    if store is not None and shift > limits.max_mix_shift:
        found.append(
            Breach(
                "drink_mix",
                f"store {store}'s drink-category mix moved by {shift:.2f} from the week before",
                f"{shift:.2f}",
                f"<= {limits.max_mix_shift:g} (max_mix_shift)",
            )
        )
    return found


def largest_mix_shift(
    week: WeekStatistics, before: WeekStatistics, min_rows: int
) -> tuple[int | None, float]:
    """The shop whose drink-category mix moved most, and by how much (total variation).

    Only shops with at least ``min_rows`` rows in both weeks are compared.
    """
    worst: tuple[int | None, float] = (None, 0.0)
    for store, mix in week.category_mix.items():
        earlier = before.category_mix.get(store, {})
        now_total, then_total = sum(mix.values()), sum(earlier.values())
        if now_total < min_rows or then_total < min_rows:
            continue
        categories = set(mix) | set(earlier)
        distance = 0.5 * sum(
            abs(mix.get(c, 0) / now_total - earlier.get(c, 0) / then_total) for c in categories
        )
        if distance > worst[1]:
            worst = (store, distance)
    return worst


def _statistics(
    as_of: dt.date,
    week: WeekStatistics | None,
    before: WeekStatistics | None,
    limits: GateThresholds,
) -> dict[str, float]:
    if week is None:
        return {}
    stats: dict[str, float] = {
        "week": week.week,
        "rows": week.rows,
        "members": week.members,
        "stores": sum(1 for n in week.store_rows.values() if n > 0),
        "drinks": week.drinks,
        "days_covered": week.days_covered,
        "data_age_days": round(_age_days(as_of, week.last), 3),
        "null_share": sum(week.nulls.values()) / week.rows if week.rows else 0.0,
        "duplicate_share": week.duplicate_rows / week.rows if week.rows else 0.0,
        "unknown_store_share": week.unknown_store_rows / week.rows if week.rows else 0.0,
        "unknown_drink_share": week.unknown_drink_rows / week.rows if week.rows else 0.0,
    }
    if before is not None:
        stats["previous_rows"] = before.rows
        stats["row_ratio"] = round(week.rows / before.rows, 4) if before.rows else 0.0
        stats["previous_members"] = before.members
        stats["previous_stores"] = sum(1 for n in before.store_rows.values() if n > 0)
        stats["previous_drinks"] = before.drinks
        stats["max_mix_shift"] = round(
            largest_mix_shift(week, before, limits.min_store_rows_for_mix)[1], 4
        )
    return stats

"""The data gate: the newest period of the declared table against the declaration and the
period before.

``check_data`` runs before any training is paid for. It measures the newest complete period in
the run's window and the period before it (:class:`PeriodStatistics`, computed with pyarrow by
:mod:`vertex_retrain.steps.data_gate`), and :func:`vertex_retrain.contracts.gate_rules.
evaluate_gate` judges them against :class:`GateThresholds`. This module holds what the gate
is made of. Each check has a name (:data:`CHECKS`); a breach names the check, the value and
the threshold. ``accept`` names checks a person has looked at and accepts for this
run (a group that really closed, a promotion period): their breaches are still reported,
marked accepted, and do not stop the run. This module is pure.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

__all__ = [
    "CHECKS",
    "Breach",
    "DataGateInputError",
    "GateReport",
    "GateThresholds",
    "PeriodStatistics",
    "SchemaProblem",
    "parse_accept",
    "thresholds_from",
]

CHECKS: dict[str, str] = {
    "schema": "a file's columns and types against the dataset declaration",
    "empty_file": "a file of the window holds no rows",
    "data_age": "days from the newest row to as_of (a missing latest period)",
    "days_covered": "days of the period with any row (a half-loaded period)",
    "rows": "rows against the period before",
    "distinct": "distinct values of each declared distinct column against the period before",
    "groups_vanished": "groups with rows the period before and none in this one",
    "nulls": "share of nulls in a declared column",
    "time_range": "the period spans more than its length or overlaps the period before",
    "duplicates": "share of rows identical to another row",
    "unknown_keys": "share of rows whose key is missing from a dimension",
    "mix_shift": "largest shift of a group's category mix (total variation distance)",
}
"""Every check, by the name ``accept`` uses."""

NOT_ACCEPTABLE: dict[str, str] = {
    "schema": "prepare_dataset reads every file with the declared types, so a file of other "
    "types would only fail there, after the gate; correct the files or the declaration's "
    "columns",
}
"""Checks a person cannot accept for a run, with why: a later step would fail on them anyway."""


class DataGateInputError(ValueError):
    """A threshold or an accepted check name is wrong; the message lists what is allowed."""


@dataclass(frozen=True)
class GateThresholds:
    """What the gate tolerates; every field is a key of the ``data_gate_thresholds`` parameter.

    Attributes:
        min_row_ratio: Rows this period / rows the period before, at least.
        max_row_ratio: The same ratio, at most.
        min_distinct_ratio: Distinct values of each distinct column / the period before's.
        max_vanished_groups: Groups with rows the period before and none in this one.
        min_days_covered: Days of the period with at least one row (None: as many as the
            period before had, so tables with one row date a period pass and a half-loaded
            daily table does not).
        max_data_age_days: Days from the newest row to ``as_of`` (None: one period's length);
            more means the latest period is missing.
        max_null_share: Nulls / rows in any declared column.
        max_duplicate_share: Rows identical to another row / rows.
        max_unknown_share: Rows whose key is missing from a dimension / rows.
        max_mix_shift: Total variation distance between a group's category mix in this
            period and the one before (0: the same mix, 1: nothing in common).
        min_group_rows_for_mix: Rows a group needs in both periods for its mix to be
            compared (a small sample's mix moves by chance alone).
    """

    min_row_ratio: float = 0.7
    max_row_ratio: float = 1.5
    min_distinct_ratio: float = 0.7
    max_vanished_groups: int = 0
    min_days_covered: int | None = None
    max_data_age_days: float | None = None
    max_null_share: float = 0.0
    max_duplicate_share: float = 0.001
    max_unknown_share: float = 0.0
    max_mix_shift: float = 0.35
    min_group_rows_for_mix: int = 100

    def as_dict(self) -> dict[str, Any]:
        """The thresholds as the pipeline parameter's value."""
        return asdict(self)

    def for_period(self, period_days: int) -> GateThresholds:
        """The thresholds with the period-dependent defaults filled in."""
        return replace(
            self,
            max_data_age_days=(
                float(period_days) if self.max_data_age_days is None else self.max_data_age_days
            ),
        )


_INTEGER_THRESHOLDS = frozenset(
    {"max_vanished_groups", "min_days_covered", "min_group_rows_for_mix"}
)


def thresholds_from(values: Mapping[str, Any] | None) -> GateThresholds:
    """Thresholds from a (partial) mapping; keys not given keep their defaults.

    Raises:
        DataGateInputError: An unknown key, or a value that is not a finite number >= 0
            (a whole number for the integer thresholds).
    """
    known = [f.name for f in fields(GateThresholds)]
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
        if key in _INTEGER_THRESHOLDS:
            if number != int(number):
                raise DataGateInputError(
                    f"data_gate_thresholds[{key!r}] is {value!r}; expected a whole number"
                )
            number = int(number)
        chosen[key] = number
    return GateThresholds(**chosen)


def parse_accept(text: str) -> frozenset[str]:
    """The checks a person accepts for this run, from ``"rows, groups_vanished"``.

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
    refused = sorted(names & set(NOT_ACCEPTABLE))
    if refused:
        acceptable = ", ".join(check for check in CHECKS if check not in NOT_ACCEPTABLE)
        raise DataGateInputError(
            f"data_gate_accept cannot accept {refused[0]!r}: {NOT_ACCEPTABLE[refused[0]]}; "
            f"checks a run can accept: {acceptable}"
        )
    return names


@dataclass(frozen=True)
class SchemaProblem:
    """One column of one file that differs from the declaration (``found`` "missing")."""

    path: str
    column: str
    found: str
    expected: str


@dataclass(frozen=True)
class PeriodStatistics:
    """What the gate measures of one period.

    Attributes:
        period: Its first day.
        rows: Rows.
        first: Oldest row's time.
        last: Newest row's time.
        days_covered: Distinct days with a row.
        nulls: Nulls per declared column.
        duplicate_rows: Rows identical to an earlier row.
        distinct: Distinct values per declared distinct column.
        group_rows: Rows per group (group values as text).
        unknown_rows: Rows whose key is missing from each dimension, by dimension.
        category_mix: Group -> category -> rows (both as text).
    """

    period: dt.date
    rows: int
    first: dt.datetime
    last: dt.datetime
    days_covered: int
    nulls: dict[str, int]
    duplicate_rows: int
    distinct: dict[str, int] = field(default_factory=dict)
    group_rows: dict[str, int] = field(default_factory=dict)
    unknown_rows: dict[str, int] = field(default_factory=dict)
    category_mix: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Breach:
    """One check the period failed.

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
        """``check: detail (value V, threshold T)``, marked when accepted; a check whose
        detail already states what was found and what was expected
        (:data:`SELF_DESCRIBED`) has no ``(value, threshold)``."""
        mark = " [accepted]" if self.accepted else ""
        if self.check in SELF_DESCRIBED:
            return f"{self.check}: {self.detail}{mark}"
        return f"{self.check}: {self.detail} (value {self.value}, threshold {self.threshold}){mark}"


SELF_DESCRIBED = frozenset({"schema", "empty_file"})
"""Checks whose detail names the value and the expectation ("column 'x' is int64 in ...; the
declaration says double"): "(value int64, threshold double)" after it repeated it in words a
type check does not have."""


@dataclass(frozen=True)
class GateReport:
    """The gate's verdict on one period.

    Attributes:
        as_of: The window end.
        period: The first day of the period checked (None when the window holds none).
        breaches: Every breach, accepted ones included.
        statistics: Numbers of the period and of the one before, for the run's record.
        window_digest: ``sha256:<hex>`` of what the window's files are (each one's path,
            size and modification time, the dimensions' too): the cache key of the data steps
            after the gate, so a file rewritten in place is read again.
    """

    as_of: dt.date
    period: dt.date | None
    breaches: list[Breach]
    statistics: dict[str, float]
    window_digest: str = ""

    @property
    def passed(self) -> bool:
        """True when every breach (if any) was accepted."""
        return all(b.accepted for b in self.breaches)

    def stopping_checks(self) -> list[str]:
        """The checks of the breaches not accepted, each once, in the breaches' order."""
        return list(dict.fromkeys(b.check for b in self.breaches if not b.accepted))

    def breach_notice(self) -> str:
        """What a run's progress shows under the gate's step when the gate will stop the run
        (the task itself succeeds, so its step reads "done"): "" when it passed."""
        stopping = self.stopping_checks()
        if not stopping:
            return ""
        return (
            f"data gate: breached ({', '.join(stopping)}); the run stops before training, "
            "at the next step, which says why"
        )

    def verdict(self) -> str:
        """One line: passed, or each breach that stops the run and how to accept it."""
        where = (
            f"the period starting {self.period.isoformat()}"
            if self.period is not None
            else "the window"
        )
        stopping = [b for b in self.breaches if not b.accepted]
        accepted = [b.check for b in self.breaches if b.accepted]
        if not stopping:
            tail = f" ({len(accepted)} accepted: {', '.join(accepted)})" if accepted else ""
            return f"data gate passed for {where} before {self.as_of.isoformat()}{tail}"
        kinds = self.stopping_checks()
        acceptable = [kind for kind in kinds if kind not in NOT_ACCEPTABLE]
        advice = (
            [
                "If this change is known and fine, re-run with --param "
                f"data_gate_accept={','.join(acceptable)}"
            ]
            if acceptable
            else []
        )
        if acceptable:
            advice.append(
                "if your data always looks like this, set the threshold named above in the "
                "data_gate_thresholds parameter (configure() or the schedule), not per run"
            )
        if "schema" in kinds:
            advice.append(
                "schema cannot be accepted for a run: correct the files, or the declaration's "
                "columns if the files hold the right types"
            )
        return (
            f"data gate stopped the run before training: {len(stopping)} breach(es) in {where} "
            f"before {self.as_of.isoformat()}: "
            + "; ".join(b.line() for b in stopping)
            + ". "
            + "; ".join(advice)
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

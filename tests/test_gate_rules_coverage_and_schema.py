"""The gate's judgement on measured statistics (pure): days covered against the period before,
schema breaches grouped by column, and the advice line that says how to change the gate for
good as well as for one run."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import replace
from typing import Any

import pytest

from tests.declarations import DATASET
from vertex_retrain.contracts.dataset import parse_dataset_declaration
from vertex_retrain.contracts.gate_report import (
    Breach,
    DataGateInputError,
    GateReport,
    GateThresholds,
    PeriodStatistics,
    SchemaProblem,
    parse_accept,
)
from vertex_retrain.contracts.gate_rules import evaluate_gate

WEEK_START = dt.date(2026, 8, 10)


def _weekly() -> Any:
    raw = copy.deepcopy(DATASET)
    raw["table"]["period"] = "week"
    return parse_dataset_declaration(raw)


def _period(start: dt.date, days: int, rows: int = 100) -> PeriodStatistics:
    first = dt.datetime.combine(start, dt.time())
    return PeriodStatistics(
        period=start,
        rows=rows,
        first=first,
        last=first + dt.timedelta(days=days - 1, hours=1),
        days_covered=days,
        nulls={},
        duplicate_rows=0,
    )


def _judge(
    current_days: int,
    previous_days: int | None,
    thresholds: GateThresholds | None = None,
) -> GateReport:
    current_start = WEEK_START + dt.timedelta(days=7)
    previous = _period(WEEK_START, previous_days) if previous_days is not None else None
    return evaluate_gate(
        declaration=_weekly(),
        as_of=current_start + dt.timedelta(days=7),
        current=_period(current_start, current_days),
        previous=previous,
        thresholds=thresholds,
    )


def _checks(report: GateReport) -> list[str]:
    return [b.check for b in report.breaches]


def test_gate_rules_days_covered_passes_one_row_date_a_period_by_default() -> None:
    # Weekly snapshots (every row dated the period's first day): whole on one day.
    report = _judge(current_days=1, previous_days=1)
    assert "days_covered" not in _checks(report), report.verdict()


def test_gate_rules_days_covered_defaults_to_the_period_befores_days_on_both_sides() -> None:
    assert "days_covered" not in _checks(_judge(current_days=7, previous_days=7))
    stopped = _judge(current_days=6, previous_days=7)
    (days,) = [b for b in stopped.breaches if b.check == "days_covered"]
    assert days.value == "6 days"
    assert days.threshold == ">= 7 (the period before's days; min_days_covered sets it)"


def test_gate_rules_days_covered_without_a_period_before_needs_one_day() -> None:
    assert "days_covered" not in _checks(_judge(current_days=1, previous_days=None))


def test_gate_rules_days_covered_explicit_threshold_wins_over_the_period_before() -> None:
    limits = GateThresholds(min_days_covered=3)
    assert "days_covered" not in _checks(_judge(3, previous_days=7, thresholds=limits))
    (days,) = [
        b
        for b in _judge(2, previous_days=1, thresholds=limits).breaches
        if b.check == "days_covered"
    ]
    assert days.threshold == ">= 3 (min_days_covered)"


def test_gate_rules_schema_breaches_are_one_per_column_and_type_however_many_files() -> None:
    problems = [
        SchemaProblem(f"sales/2026-08-{day:02d}.parquet", "units", "int32", "double")
        for day in range(10, 24)
    ] + [SchemaProblem("sales/2026-08-23.parquet", "item", "missing", "string")]
    report = evaluate_gate(
        declaration=_weekly(),
        as_of=WEEK_START + dt.timedelta(days=14),
        current=None,
        previous=None,
        schema_problems=problems,
    )
    units, item = report.breaches
    assert units.detail == (
        "column 'units' is int32 in 14 files, first sales/2026-08-10.parquet; "
        "the declaration says double"
    )
    assert (units.value, units.threshold) == ("int32", "double (the declaration)")
    assert units.line() == f"schema: {units.detail}"  # no "(value int32, threshold double...)"
    assert "[accepted]" in replace(units, accepted=True).line()
    assert report.breach_notice() == (
        "data gate: breached (schema); the run stops before training, at the next step, which "
        "says why"
    )
    accepted = replace(report, breaches=[replace(b, accepted=True) for b in report.breaches])
    assert accepted.breach_notice() == ""  # nothing stops the run: nothing to say
    counted = Breach("rows", "3 rows", "3", ">= 10")
    assert counted.line() == "rows: 3 rows (value 3, threshold >= 10)"
    assert item.detail == (
        "column 'item' is missing in sales/2026-08-23.parquet; the declaration says string"
    )


def test_gate_rules_verdict_advises_the_lasting_fix_beside_the_one_run_fix() -> None:
    threshold = _judge(current_days=2, previous_days=7).verdict()
    assert "re-run with --param data_gate_accept=days_covered;" in threshold
    assert "set the threshold named above in the data_gate_thresholds parameter" in threshold
    assert "declaration's columns" not in threshold
    schema = evaluate_gate(
        declaration=_weekly(),
        as_of=WEEK_START,
        current=None,
        previous=None,
        schema_problems=[SchemaProblem("sales/a.parquet", "units", "int32", "double")],
    ).verdict()
    assert "the declaration's columns if the files hold the right types" in schema
    assert "data_gate_thresholds" not in schema
    assert "data_gate_accept" not in schema  # a later step would fail on it anyway
    assert "\n" not in threshold and "\n" not in schema


def test_gate_report_accept_refuses_schema_and_takes_the_others() -> None:
    assert parse_accept("rows, days_covered") == {"rows", "days_covered"}
    with pytest.raises(DataGateInputError) as refused:
        parse_accept("rows,schema")
    message = str(refused.value)
    assert message.startswith("data_gate_accept cannot accept 'schema': prepare_dataset reads")
    assert "checks a run can accept: empty_file, data_age" in message
    assert "schema," not in message.split("can accept:")[1]


def test_gate_report_verdict_of_schema_and_rows_offers_to_accept_rows_only() -> None:
    report = evaluate_gate(
        declaration=_weekly(),
        as_of=WEEK_START + dt.timedelta(days=14),
        current=_period(WEEK_START + dt.timedelta(days=7), 7, rows=10),
        previous=_period(WEEK_START, 7, rows=1000),
        schema_problems=[SchemaProblem("sales/a.parquet", "units", "int32", "double")],
    )
    assert set(_checks(report)) >= {"schema", "rows"}
    verdict = report.verdict()
    assert "--param data_gate_accept=rows" in verdict
    assert "data_gate_accept=schema" not in verdict and ",schema" not in verdict

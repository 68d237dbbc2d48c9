"""Schedule declarations: cron and time-zone validation, next run times, Vertex cron strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from vertex_retrain.schedules import (
    ScheduleDeclaration,
    ScheduleError,
    load_declarations,
    next_run_times,
    parse_vertex_cron,
    validate_cron,
    validate_time_zone,
    vertex_cron,
)

REPO = Path(__file__).resolve().parent.parent


def _declare(**overrides: object) -> ScheduleDeclaration:
    fields: dict = {
        "display_name": "nightly",
        "pipeline_name": "train-only",
        "cron": "0 1 * * *",
        "time_zone": "UTC",
    }
    fields.update(overrides)
    return ScheduleDeclaration(**fields)


def test_drink_shops_example_schedule_runs_mondays_at_three_in_taipei() -> None:
    (weekly,) = load_declarations(REPO / "examples" / "drink_shops" / "schedules.yaml")
    assert weekly.display_name == "drink-shops-weekly-retraining"
    assert (weekly.max_concurrent_run_count, weekly.paused) == (1, False)
    assert weekly.parameter_values == {}
    assert weekly.vertex_cron == "TZ=Asia/Taipei 0 3 * * 1"
    # Sunday 2026-11-29 20:00 UTC is Monday 04:00 in Taipei: this week's run has passed.
    runs = weekly.next_run_times(after=datetime(2026, 11, 29, 20, 0, tzinfo=UTC))
    assert [run.strftime("%Y-%m-%d %H:%M %a %z") for run in runs] == [
        f"2026-12-{day:02d} 03:00 Mon +0800" for day in (7, 14, 21, 28)
    ] + ["2027-01-04 03:00 Mon +0800"]


def test_next_run_times_are_strictly_after_the_reference_instant() -> None:
    monday_three = datetime(2026, 11, 30, 3, 0, tzinfo=validate_time_zone("Asia/Taipei"))
    runs = next_run_times("0 3 * * 1", "Asia/Taipei", count=2, after=monday_three)
    assert runs[0] == monday_three + timedelta(weeks=1)
    assert runs[1] - runs[0] == timedelta(weeks=1)


def test_next_run_times_skips_wall_clock_times_in_the_spring_forward_gap() -> None:
    # New York moves from 02:00 EST to 03:00 EDT on 2026-03-08: 02:30 does not exist that day.
    runs = next_run_times(
        "30 2 * * *", "America/New_York", count=3, after=datetime(2026, 3, 7, 12, tzinfo=UTC)
    )
    assert [run.isoformat() for run in runs] == [
        "2026-03-09T02:30:00-04:00",
        "2026-03-10T02:30:00-04:00",
        "2026-03-11T02:30:00-04:00",
    ]


def test_next_run_times_runs_a_repeated_wall_clock_time_once_at_its_first_occurrence() -> None:
    # 01:30 happens twice on 2026-11-01 in New York (EDT, then EST).
    runs = next_run_times(
        "30 1 * * *", "America/New_York", count=3, after=datetime(2026, 10, 31, 12, tzinfo=UTC)
    )
    assert [run.isoformat() for run in runs] == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
        "2026-11-03T01:30:00-05:00",
    ]
    # The day of the change is 25 hours long.
    assert runs[1].astimezone(UTC) - runs[0].astimezone(UTC) == timedelta(hours=25)


def test_next_run_times_compares_instants_not_wall_clocks_within_the_zone() -> None:
    zone = validate_time_zone("America/New_York")
    # 01:45 EST, the second 01:45 of 2026-11-01: the first 01:50 (EDT) is already past.
    after = datetime(2026, 11, 1, 1, 45, tzinfo=zone, fold=1)
    runs = next_run_times("50 1 * * *", "America/New_York", count=1, after=after)
    assert runs[0].isoformat() == "2026-11-02T01:50:00-05:00"


def test_next_run_times_refuses_a_naive_reference_time() -> None:
    with pytest.raises(ScheduleError, match="timezone-aware"):
        next_run_times("0 3 * * 1", "UTC", after=datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("0 3 * *", "expected 5 fields"),
        ("0 0 3 * * 1", "expected 5 fields"),
        ("@weekly", "expected 5 fields"),
        ("TZ=Asia/Taipei 0 3 * * 1", "put the time zone in time_zone"),
        ("61 3 * * 1", "not a valid cron expression"),
        ("0 25 * * *", "not a valid cron expression"),
        ("H 3 * * 1", "outside standard cron"),
        ("0 3 L * *", "outside standard cron"),
        ("0 0 30 2 *", "never fires"),
    ],
)
def test_validate_cron_rejects_what_vertex_cannot_run(cron: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        validate_cron(cron)


def test_validate_cron_normalises_spacing_and_accepts_names() -> None:
    assert validate_cron("  0  3 * *   MON-FRI ") == "0 3 * * MON-FRI"


@pytest.mark.parametrize(
    ("zone", "suggestion"),
    [("Asia/Taipie", "Asia/Taipei"), ("asia/taipei", "Asia/Taipei"), ("Mars/Olympus", None)],
)
def test_validate_time_zone_rejects_non_iana_names_with_suggestions(
    zone: str, suggestion: str | None
) -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_time_zone(zone)
    assert "IANA" in str(caught.value)
    if suggestion:
        assert f"did you mean '{suggestion}'" in str(caught.value)


def test_declaration_errors_name_the_schedule_and_the_problem() -> None:
    with pytest.raises(ScheduleError, match="nightly: time zone 'Taipei'"):
        _declare(time_zone="Taipei")
    with pytest.raises(ScheduleError, match="nightly: cron"):
        _declare(cron="every monday")
    with pytest.raises(ScheduleError, match="max_concurrent_run_count must be an integer >= 1"):
        _declare(max_concurrent_run_count=0)
    with pytest.raises(ScheduleError, match="parameter_values must be JSON values"):
        _declare(parameter_values={"when": datetime(2026, 1, 1)})
    with pytest.raises(ScheduleError, match="pipeline_name 'Weekly Retraining'"):
        _declare(pipeline_name="Weekly Retraining")
    with pytest.raises(ScheduleError, match="display_name"):
        _declare(display_name="x" * 129)


def test_declaration_copies_parameter_values_so_later_edits_do_not_leak_in() -> None:
    values = {"epochs": 3, "shops": ["taipei"]}
    declaration = _declare(parameter_values=values)
    values["shops"].append("tainan")
    assert declaration.parameter_values == {"epochs": 3, "shops": ["taipei"]}


def test_vertex_cron_and_parse_vertex_cron_agree_on_both_prefixes() -> None:
    rendered = vertex_cron("0  3 * * 1", "Europe/London")
    assert rendered == "TZ=Europe/London 0 3 * * 1"
    assert parse_vertex_cron(rendered) == ("Europe/London", "0 3 * * 1")
    assert parse_vertex_cron("CRON_TZ=Europe/London  0 3 * * 1") == ("Europe/London", "0 3 * * 1")
    assert parse_vertex_cron("0 3 * * 1") == (None, "0 3 * * 1")

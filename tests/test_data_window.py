"""The run's data window: where ``as_of`` comes from, what it refuses, which files it keeps."""

from __future__ import annotations

import datetime as dt

import pytest

from vertex_retrain.contracts.as_of import (
    DataWindowError,
    FileSpan,
    check_as_of,
    parse_as_of,
    resolve_as_of,
    run_time,
    select_before,
    window_labels,
)
from vertex_retrain.steps.window import resolve_window, window_end

NOW = dt.datetime(2026, 11, 25, 9, 30, tzinfo=dt.UTC)


def test_parse_as_of_reads_dates_and_converts_times_to_the_data_zone() -> None:
    assert parse_as_of("2026-11-23") == dt.date(2026, 11, 23)
    # Monday 03:00 in Taipei is Sunday 19:00 UTC: the week is Taipei's Monday.
    assert parse_as_of("2026-11-22T19:00:00Z", time_zone="Asia/Taipei") == dt.date(2026, 11, 23)
    assert parse_as_of("2026-11-22T19:00:00.123456Z", time_zone="UTC") == dt.date(2026, 11, 22)
    assert parse_as_of("2026-11-23T02:00:00") == dt.date(2026, 11, 23)


@pytest.mark.parametrize("text", ["23/11/2026", "2026-13-01", "next monday", "2026-11-23T25:00"])
def test_parse_as_of_refuses_malformed_values_in_one_line(text: str) -> None:
    with pytest.raises(DataWindowError) as error:
        parse_as_of(text)
    message = str(error.value)
    assert "\n" not in message and repr(text) in message and "YYYY-MM-DD" in message


def test_run_time_ignores_unresolved_empty_and_epoch_values() -> None:
    assert run_time("") is None
    assert run_time("{{$.pipeline_job_schedule_time_utc}}") is None
    assert run_time("1970-01-01T00:00:00Z") is None
    assert run_time("2026-11-22T19:00:00Z") == dt.datetime(2026, 11, 22, 19, tzinfo=dt.UTC)


def test_resolve_as_of_prefers_parameter_then_schedule_then_creation_then_clock() -> None:
    scheduled, created = "2026-11-22T19:00:00Z", "2026-11-24T10:00:00Z"
    zone = "Asia/Taipei"
    given = resolve_as_of("2026-11-16", scheduled_time=scheduled, created_time=created, now=NOW)
    assert (given.iso(), given.source) == ("2026-11-16", "parameter")
    on_schedule = resolve_as_of(
        "", scheduled_time=scheduled, created_time=created, now=NOW, time_zone=zone
    )
    assert (on_schedule.iso(), on_schedule.source) == ("2026-11-23", "schedule")
    manual = resolve_as_of(
        "", scheduled_time="1970-01-01T00:00:00Z", created_time=created, now=NOW, time_zone=zone
    )
    assert (manual.iso(), manual.source) == ("2026-11-24", "creation")
    alone = resolve_as_of("", now=NOW, time_zone=zone)
    assert (alone.iso(), alone.source) == ("2026-11-25", "clock")


def test_run_time_unparseable_value_is_refused_not_replaced_by_the_clock() -> None:
    with pytest.raises(DataWindowError, match="not an ISO 8601 time"):
        run_time("next monday")


def test_resolve_window_refuses_the_future_and_an_unknown_zone() -> None:
    with pytest.raises(DataWindowError, match=r"as_of 2026-11-26 is in the future"):
        resolve_window(as_of="2026-11-26", now=NOW)
    # Today is allowed: the window ends at today's midnight, which has passed.
    assert resolve_window(as_of="2026-11-25", now=NOW).iso() == "2026-11-25"
    with pytest.raises(DataWindowError, match=r"'Mars/Olympus' is not an IANA time zone"):
        resolve_window(time_zone="Mars/Olympus", now=NOW)


def test_window_end_refuses_only_dates_in_the_future_everywhere() -> None:
    # At 11:00 UTC it is already 2026-11-26 at UTC+14, and nowhere 2026-11-27 yet.
    late = dt.datetime(2026, 11, 25, 11, 0, tzinfo=dt.UTC)
    assert window_end("2026-11-26", now=late) == dt.date(2026, 11, 26)
    with pytest.raises(DataWindowError, match="2026-11-27 is in the future"):
        window_end("2026-11-27", now=late)
    assert window_end("", now=NOW) == dt.date(2026, 11, 25)


def test_check_as_of_refuses_a_date_before_the_data_starts() -> None:
    first = dt.datetime(2023, 1, 2, 7, 24)
    with pytest.raises(DataWindowError, match=r"before the data starts \(first row 2023"):
        check_as_of(dt.date(2023, 1, 2), today=dt.date(2026, 1, 1), first_row=first)
    check_as_of(dt.date(2023, 1, 3), today=dt.date(2026, 1, 1), first_row=first)


def test_select_before_keeps_whole_weeks_strictly_before_the_cut() -> None:
    def span(path: str, first: str | None, last: str | None) -> FileSpan:
        parse = dt.datetime.fromisoformat
        return FileSpan(
            path, 0 if first is None else 9, first and parse(first), last and parse(last)
        )

    files = [
        span("w0", "2023-01-02T07:00", "2023-01-08T21:00"),
        span("w1", "2023-01-09T07:00", "2023-01-15T23:59"),
        span("w2", "2023-01-16T07:00", "2023-01-22T21:00"),  # in progress at the cut
        span("w3", "2023-01-23T07:00", "2023-01-29T21:00"),
        span("empty", None, None),
    ]
    chosen = select_before(files, dt.datetime(2023, 1, 18))
    assert [f.path for f in chosen.included] == ["w0", "w1"]
    assert [f.path for f in chosen.partial] == ["w2"]
    assert [f.path for f in chosen.after] == ["w3"]
    assert [f.path for f in chosen.empty] == ["empty"]
    assert chosen.last == dt.datetime(2023, 1, 15, 23, 59)
    assert window_labels(dt.date(2023, 1, 18), chosen.first) == {
        "data_as_of": "2023-01-18",
        "data_from": "2023-01-02",
    }

"""``as_of`` at the command line: a bad one is one line and exit 2 before anything runs; a
local run without one replays the newest week of its data."""

from __future__ import annotations

import datetime as dt
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.examples import DRINK_SHOPS, example_module
from trainer.data import generate
from trainer.world import WorldConfig
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.cli.main import main
from vertex_retrain.cli.run_window import as_of_problem, local_data_span, with_local_as_of

CHAIN = example_module(DRINK_SHOPS, "pipelines")
WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"

REPO = Path(__file__).resolve().parent.parent
NOW = dt.datetime(2026, 11, 25, 9, 30, tzinfo=dt.UTC)


@pytest.fixture
def local_data(root: Path) -> Path:
    """The sample dataset where the example's default data_uri points, locally."""
    folder = to_local_path(CHAIN.DATA_URI)
    generate(WorldConfig(members=60, stores=5, weeks=3, seed=2), folder)
    return folder


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["run", WEEKLY, *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("as_of", "expected"),
    [
        ("2026-02-30", "error: as_of must be a date YYYY-MM-DD or an RFC 3339 time"),
        ("next-week", "error: as_of must be a date YYYY-MM-DD"),
        ("2999-01-04", "error: as_of 2999-01-04 is in the future (today is"),
    ],
)
def test_run_refuses_a_malformed_or_future_as_of_before_submitting(
    root: Path, capsys: pytest.CaptureFixture[str], as_of: str, expected: str
) -> None:
    # No --project: the as_of is refused before the Vertex flags are even looked at.
    code, err = _run(capsys, "--param", f"as_of={as_of}")
    assert code == 2
    assert err.startswith(expected) and err.count("\n") == 1, err


def test_run_local_refuses_an_as_of_before_the_local_data_starts(
    local_data: Path, root: Path
) -> None:
    # A process of its own: the local run prints its progress to the real stdout.
    done = subprocess.run(
        [sys.executable, str(REPO / "compile.py"), "run", WEEKLY, "--local",
         "--param", "as_of=2022-06-01", "--param", f"source_uri={DRINK_SHOPS / 'trainer'}"],
        capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "VERTEX_LOCAL_ROOT": str(root)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "error: as_of 2022-06-01 is before the data starts (first row 2023-01-02"
    )
    assert done.stderr.count("\n") == 1, done.stderr
    assert not (root / "pipeline-root").exists()


def test_as_of_problem_checks_the_future_in_the_data_time_zone() -> None:
    # 2026-11-26 has begun in Taipei at 17:30 on the 25th, UTC.
    late = dt.datetime(2026, 11, 25, 17, 30, tzinfo=dt.UTC)
    assert as_of_problem({"as_of": "2026-11-26", "data_time_zone": "Asia/Taipei"}, now=late) is None
    problem = as_of_problem({"as_of": "2026-11-26", "data_time_zone": "UTC"}, now=late)
    assert problem is not None and "is in the future" in problem
    assert as_of_problem({"as_of": ""}, now=late) is None


def test_with_local_as_of_replays_the_newest_week_and_says_so(local_data: Path) -> None:
    declaration = CHAIN.COMMON["dataset_declaration"]
    arguments = {"as_of": "", "data_uri": CHAIN.DATA_URI, "dataset_declaration": declaration}
    out = io.StringIO()
    chosen = with_local_as_of(arguments, out, now=NOW)
    span = local_data_span(arguments)
    assert span is not None
    assert chosen["as_of"] == (span[1].date() + dt.timedelta(days=1)).isoformat() == "2023-01-23"
    assert out.getvalue().startswith("as_of not given: this local run replays the newest period")
    given = {**arguments, "as_of": "2023-01-16"}
    assert with_local_as_of(given, io.StringIO(), now=NOW) == given
    nowhere = {"data_uri": "gs://nowhere/t", "dataset_declaration": declaration, "as_of": ""}
    assert with_local_as_of(nowhere, out) == nowhere


@pytest.mark.parametrize(
    ("now", "future"),
    [
        # The sample's newest row is in the day of 2023-01-22 (Asia/Taipei, the example's).
        (dt.datetime(2023, 1, 23, 0, 0, tzinfo=dt.UTC), False),
        (dt.datetime(2023, 1, 21, 0, 0, tzinfo=dt.UTC), True),
    ],
)
def test_with_local_as_of_says_when_rows_are_dated_after_now(
    local_data: Path, now: dt.datetime, future: bool
) -> None:
    declaration = CHAIN.COMMON["dataset_declaration"]
    arguments = {"as_of": "", "data_uri": CHAIN.DATA_URI, "dataset_declaration": declaration,
                 "data_time_zone": "Asia/Taipei"}  # fmt: skip
    out = io.StringIO()
    with_local_as_of(arguments, out, now=now)
    said = out.getvalue()
    assert ("rows dated in the future are in no week" in said) is future, said
    if future:
        assert "after now (2023-01-21 08:00 Asia/Taipei, data_time_zone)" in said


def test_with_local_as_of_ends_a_weekly_snapshot_table_at_the_next_period_start(
    tmp_path: Path,
) -> None:
    # Every row dated the week's Monday (2026-08-31): a schedule on Mondays runs with
    # as_of 2026-09-07; newest row + 1 day (a Tuesday) would name the week differently.
    import copy

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.declarations import DATASET

    declaration = copy.deepcopy(DATASET)
    declaration["table"]["period"] = "week"
    (tmp_path / "sales").mkdir()
    pq.write_table(pa.table({"item": ["a"], "family": ["tea"]}), tmp_path / "items.parquet")
    for monday in (dt.date(2026, 8, 24), dt.date(2026, 8, 31)):
        table = pa.table(
            {
                "day": pa.array([monday], pa.date32()),
                "store": ["s1"],
                "item": ["a"],
                "units": [1.0],
            }
        )
        pq.write_table(table, tmp_path / "sales" / f"{monday.isoformat()}.parquet")
    arguments = {"as_of": "", "data_uri": str(tmp_path), "dataset_declaration": declaration}
    chosen = with_local_as_of(arguments, io.StringIO(), now=NOW)
    assert chosen["as_of"] == "2026-09-07"
    daily = {**arguments, "dataset_declaration": DATASET}
    assert with_local_as_of(daily, io.StringIO(), now=NOW)["as_of"] == "2026-09-01"


@pytest.mark.parametrize(
    ("now", "as_of", "in_progress"),
    [
        # The data's newest row is in the week of Monday 2023-01-16 (it ends on the 22nd).
        (dt.datetime(2023, 1, 22, 23, 59, tzinfo=dt.UTC), "2023-01-16", True),
        (dt.datetime(2023, 1, 23, 0, 30, tzinfo=dt.UTC), "2023-01-23", False),
        # Rows past today (a file dated ahead): the week before today's, never today's date.
        (dt.datetime(2023, 1, 11, 12, 0, tzinfo=dt.UTC), "2023-01-09", True),
    ],
)
def test_with_local_as_of_leaves_out_a_week_still_in_progress(
    local_data: Path, now: dt.datetime, as_of: str, in_progress: bool
) -> None:
    declaration = CHAIN.COMMON["dataset_declaration"]
    arguments = {"as_of": "", "data_uri": CHAIN.DATA_URI, "dataset_declaration": declaration}
    out = io.StringIO()
    assert with_local_as_of(arguments, out, now=now)["as_of"] == as_of
    said = out.getvalue()
    left_out = f"the period from {as_of} is still in progress and left out"
    assert (left_out in said) is in_progress
    assert ("replays the newest complete period" in said) is in_progress

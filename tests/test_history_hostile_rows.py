"""``history`` against what a registry database may hold: a bad row is listed as
``UNREADABLE`` with its reason and the other weeks still shown; a NaN metric is null in strict
``--json``; a ``--db`` that is no registry (empty, a link, another file) is refused, untouched."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.model_registry.registry_db import default_db_path
from vertex_retrain.backends.local.model_registry.weeks_on_record import UNREADABLE, RunHistory
from vertex_retrain.cli.main import main
from vertex_retrain.run_record import RunRecord


def _week(run: str, as_of: str, **changes: Any) -> RunRecord:
    return RunRecord(
        run=run,
        model="m",
        backend="local",
        state="SUCCEEDED",
        recorded_at=f"{as_of}T04:00:00Z",
        as_of=as_of,
        candidate={"rmse": 1.5},
        decision={"primary_metric": "rmse", "is_better": True},
        **changes,
    )


def _three_weeks_with_a_bad_middle(stored: str) -> None:
    history = RunHistory()
    for run, as_of in (("w1", "2026-11-09"), ("w2", "2026-11-16"), ("w3", "2026-11-23")):
        history.record(_week(run, as_of))
    with sqlite3.connect(default_db_path()) as connection:
        connection.execute(
            "UPDATE pipeline_runs SET record_json = ? WHERE run_name = 'w2'", (stored,)
        )


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


BAD_ROWS = {
    "invalid-json": ("{not json", "not valid JSON"),
    "null": ("null", "the record is NoneType, not a JSON object"),
    "list": ("[1, 2]", "the record is list, not a JSON object"),
    "deep": ("[" * 100_000 + "]" * 100_000, "not valid JSON (nested too deeply)"),
    "nested-40": (
        json.dumps(
            {**_week("w2", "2026-11-16").to_dict(), "window": json.loads("[" * 40 + "]" * 40)}
        ),
        "nested more than 16 deep",
    ),
    "wrong-type": (
        json.dumps({**_week("w2", "2026-11-16").to_dict(), "references": {"x": [1]}}),
        "the record holds a metric that is not a number",
    ),
}


@pytest.mark.parametrize("stored", BAD_ROWS.values(), ids=BAD_ROWS.keys())
def test_history_lists_a_bad_row_as_unreadable_and_the_others_whole(
    root: Path, capsys: pytest.CaptureFixture[str], stored: tuple[str, str]
) -> None:
    _three_weeks_with_a_bad_middle(stored[0])
    assert main(["history", "--json", "--no-plot"]) == 0
    records = _strict(capsys.readouterr().out)
    assert [(r["run"], r["state"]) for r in records] == [
        ("w1", "SUCCEEDED"), ("w2", UNREADABLE), ("w3", "SUCCEEDED"),
    ]  # fmt: skip
    assert stored[1] in records[1]["error"] and records[1]["as_of"] == "2026-11-16"
    assert main(["history", "--no-plot"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in table[2:5]] == [
        ["2026-11-09", "champion"], ["2026-11-16", UNREADABLE], ["2026-11-23", "champion"],
    ]  # fmt: skip


def test_history_json_gives_a_nan_metric_as_null(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    RunHistory().record(_week("w1", "2026-11-09", champion={"rmse": float("nan")}))
    assert main(["history", "--json", "--no-plot"]) == 0
    records = _strict(capsys.readouterr().out)  # NaN would be refused here
    assert records[0]["champion"] == {"rmse": None} and records[0]["state"] == "SUCCEEDED"


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _link(path: Path) -> None:
    RunHistory(path.with_name("real.db")).record(_week("w1", "2026-11-09"))
    path.symlink_to(path.with_name("real.db"))


def _text(path: Path) -> None:
    path.write_text("root:x:0:0:root:/root:/bin/bash\n")


def _other_database(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (body TEXT)")


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (_empty, "is an empty file, not a registry database"),
        (_link, "is a symbolic link, not followed"),
        (_text, "is not a registry database"),
        (_other_database, "is not a registry database"),
    ],
    ids=["empty", "link", "text", "another-database"],
)
def test_history_refuses_a_db_that_is_no_registry_and_leaves_it_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plant: Any, message: str
) -> None:
    db = tmp_path / "history.db"
    plant(db)
    before = sorted(p.name for p in tmp_path.iterdir())
    content = db.read_bytes()
    assert main(["history", "--db", str(db), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --db {db}: {err.split(': ', 2)[2]}" and message in err
    assert err.count("\n") == 1 and "--create" not in err
    assert db.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no journal, no WAL


def test_history_plots_the_readable_weeks_beside_a_bad_row(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _three_weeks_with_a_bad_middle("null")
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    plot = root / "history" / "m.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"plot of m (rmse): {plot}" in out

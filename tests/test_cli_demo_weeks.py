"""``make demo``'s weeks: the next week's arguments, the cache report, the appended data."""

from __future__ import annotations

import io
import json
from pathlib import Path

from trainer.data import generate
from trainer.world import WorldConfig
from vertex_retrain.backends.local.task_cache import CACHED_FROM_FILE
from vertex_retrain.cli.demo_weeks import (
    DemoWeek,
    append_week,
    cached_tasks,
    next_week,
    print_weeks,
)
from vertex_retrain.cli.local_run import LocalRunOutcome


def test_next_week_moves_as_of_by_seven_days_and_keeps_the_rest() -> None:
    assert next_week({"as_of": "2023-07-03", "epochs": 1}) == {"as_of": "2023-07-10", "epochs": 1}


def test_cached_tasks_reads_where_each_reused_task_came_from(tmp_path: Path) -> None:
    (tmp_path / "build-container").mkdir()
    (tmp_path / "build-container" / CACHED_FROM_FILE).write_text(
        json.dumps({"run": "weekly-retraining-1", "task": "build-container"})
    )
    (tmp_path / "prepare-dataset").mkdir()
    assert cached_tasks(tmp_path) == {"build-container": "weekly-retraining-1"}
    assert cached_tasks(None) == {}


def test_append_week_runs_the_generator_and_says_what_it_wrote(tmp_path: Path) -> None:
    generate(WorldConfig(members=30, stores=5, weeks=2, seed=1), tmp_path / "data")
    out = io.StringIO()
    assert append_week(str(tmp_path / "data"), out)
    assert "appended week 2" in out.getvalue()
    missing = io.StringIO()
    assert not append_week(str(tmp_path / "nothing"), missing)
    assert "week 2 skipped:" in missing.getvalue() and "generation.json" in missing.getvalue()


def test_print_weeks_shows_window_gate_cache_and_decision(tmp_path: Path) -> None:
    summary = {
        "data_window": {
            "first_transaction": "2023-01-02T07:01:00",
            "last_transaction": "2023-07-09T21:59:00",
            "train_weeks": [0, 25],
            "validation_weeks": [26],
            "validation_rows": 13576,
            "content_hash": "15313d1c77e1aaaa",
        },
        "data_gate": {
            "verdict": "data gate passed for week 26 before 2023-07-10",
            "statistics": {"rows": 13576, "row_ratio": 1.0243, "stores": 50, "days_covered": 7},
        },
        "decision": {"is_better": False, "reason": "ndcg_at_10 did not improve"},
    }
    outcome = LocalRunOutcome(True, tmp_path, tmp_path / "log", 3.0, summary)
    week = DemoWeek(2, {"as_of": "2023-07-10"}, outcome, {"build-container": "weekly-1"})
    out = io.StringIO()
    print_weeks([week], out)
    text = out.getvalue()
    assert "week 2 (as_of 2023-07-10): succeeded" in text
    assert "validation weeks [26] (13576 rows); content 15313d1c77e1" in text
    assert "gate statistics: rows 13576, x last week 1.0243, shops 50, days 7" in text
    assert "cached from an earlier run: build-container" in text
    assert "decision: challenger: ndcg_at_10 did not improve" in text

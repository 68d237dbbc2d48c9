"""``python -m trainer.data append``: the next week of a synthetic dataset, from the same world."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trainer.data import append_week, generate, sample_week, week_file
from trainer.split import part_weeks, plan_time_split
from trainer.world import WorldConfig, build_world

CONFIG = WorldConfig(members=80, stores=5, weeks=3, seed=4)


def test_append_week_writes_the_next_week_from_the_same_world(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    generate(CONFIG, folder)
    entry = append_week(folder)
    assert entry["week"] == 3 and entry["path"] == week_file(3)
    written = pq.read_table(folder / week_file(3))
    assert written.equals(sample_week(build_world(CONFIG), 3))
    info = json.loads((folder / "generation.json").read_text())
    assert [w["week"] for w in info["weeks"]] == [0, 1, 2, 3]
    assert info["config"]["weeks"] == 3  # the world's, unchanged
    assert info["rows"] == sum(w["rows"] for w in info["weeks"])
    # The trainer's own split sees the new week as the gate week.
    assert part_weeks(plan_time_split(str(folder)), "gate") == [3]
    assert append_week(folder)["week"] == 4


def test_append_cli_refuses_a_folder_without_a_dataset(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trainer.data", "append", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "has no generation.json; write the dataset first" in done.stderr


@pytest.mark.parametrize("weeks", [1, 2])
def test_append_cli_reports_the_week_written(tmp_path: Path, weeks: int) -> None:
    generate(WorldConfig(members=30, stores=5, weeks=weeks, seed=1), tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "trainer.data", "append", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith(
        f"appended transactions/week-{weeks:04d}.parquet (week {weeks + 1} of the data, "
    )

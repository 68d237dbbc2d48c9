"""The daily demand example's own code (examples/daily_demand/demand_forecast), in-process:
the generator, the storage mapping, the features and the seasonal naive reference, the
training and evaluation entry points against the library's contracts (the server's answers
are in test_example_daily_demand_serve.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from demand_forecast import data, evaluate, task
from demand_forecast.dataset import Item, Sales
from demand_forecast.features import Profile, build_profile, history_of, lag_7
from demand_forecast.model import METADATA_FILE, load_model
from demand_forecast.paths import mounted, sample_path
from demand_forecast.reference import error_metrics, seasonal_naive
from demand_forecast.synthetic import WorldConfig
from tests.examples import (
    DAILY_DEMAND,
    example_module,
    prepared_demand_dataset,
    trained_demand_model,
)
from vertex_retrain.contracts.evaluation import parse_metrics
from vertex_retrain.schedules import load_declarations

SMALL = WorldConfig(stores=3, items=8, seed=5)


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*.parquet"))
    }


def _sales(rows: list[tuple[str, str, str, float]]) -> Sales:
    return Sales(
        day=np.array([r[2] for r in rows], dtype="datetime64[D]"),
        store=np.array([r[0] for r in rows]),
        item=np.array([r[1] for r in rows]),
        units=np.array([r[3] for r in rows], dtype=np.float64),
        price=np.ones(len(rows)),
        on_promo=np.zeros(len(rows), dtype=bool),
    )


def _cli(module: str, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_demand_data_generate_is_deterministic(tmp_path: Path) -> None:
    data.generate(str(tmp_path / "a"), SMALL, days=5)
    data.generate(str(tmp_path / "b"), SMALL, days=5)
    data.generate(str(tmp_path / "c"), WorldConfig(stores=3, items=8, seed=6), days=5)
    first = _digests(tmp_path / "a")
    assert len(first) == 6 and first == _digests(tmp_path / "b")
    assert first["sales/2025-01-06.parquet"] != _digests(tmp_path / "c")["sales/2025-01-06.parquet"]


def test_demand_data_append_gives_the_days_a_longer_generation_gives(tmp_path: Path) -> None:
    data.generate(str(tmp_path / "short"), SMALL, days=4)
    done = data.append(str(tmp_path / "short"), days=3)
    data.generate(str(tmp_path / "long"), SMALL, days=7)
    assert done["first_day"] == "2025-01-10" and done["last_day"] == "2025-01-12"
    assert _digests(tmp_path / "short") == _digests(tmp_path / "long")
    record = json.loads((tmp_path / "short" / data.GENERATION_FILE).read_text())
    assert record["last_day"] == "2025-01-12"
    for days in (0, data.MAX_DAYS + 1):  # the functions check what the command line checks
        with pytest.raises(ValueError, match="--days must be between 1 and"):
            data.append(str(tmp_path / "short"), days=days)
        with pytest.raises(ValueError, match="--days must be between 1 and"):
            data.generate(str(tmp_path / f"none-{days}"), SMALL, days=days)
    assert json.loads((tmp_path / "short" / data.GENERATION_FILE).read_text()) == record


def test_demand_data_command_line_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "sample")
    assert data.main(["generate", f"--out={out}", "--days=2"]) == 0
    assert json.loads(capsys.readouterr().out)["last_day"] == "2025-01-07"
    for args, words in [
        (["generate", f"--out={out}"], "already holds sample data"),
        (["append", f"--out={tmp_path / 'none'}"], "run `generate` first"),
        (["append", f"--out={out}", "--days=0"], "expected 1 to 3660 days, got 0"),
        (["generate", f"--out={tmp_path / 'x'}", "--stores=0"], "--stores must be between"),
    ]:
        with pytest.raises(SystemExit) as stopped:
            data.main(args)
        error = capsys.readouterr().err
        assert stopped.value.code == 2 and words in error, (args, error)
        assert len(error.strip().splitlines()) == 1


def test_demand_paths_gs_uris_map_to_the_mount_or_the_local_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GCS_FUSE_ROOT", raising=False)
    assert mounted("gs://b/runs/model/") == Path("/gcs/b/runs/model")
    assert mounted("/gcs/b/x") == Path("/gcs/b/x") and mounted("rel/x") == Path("rel/x")
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path / "fuse"))
    assert mounted("gs://b/x") == tmp_path / "fuse" / "b" / "x"
    assert mounted("/gcs/b/x") == tmp_path / "fuse" / "b" / "x"
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    assert sample_path("gs://b/data") == tmp_path / "root" / "gcs" / "b" / "data"
    for bad in ("gs://b/../../etc", "gs://", "/gcs//x"):
        with pytest.raises(ValueError):
            mounted(bad)


def test_demand_reference_seasonal_naive_is_the_same_weekday_a_week_before() -> None:
    history = history_of(_sales([("S1", "I1", "2025-01-06", 4.0), ("S1", "I2", "2025-01-07", 9.0)]))
    week_later = _sales(
        [("S1", "I1", "2025-01-13", 5.0), ("S1", "I2", "2025-01-13", 3.0)]  # I2: none on the 6th
    )
    assert seasonal_naive(week_later, history).tolist() == [4.0, 0.0]
    scores = error_metrics(week_later.units, seasonal_naive(week_later, history))
    assert scores == {"rmse": pytest.approx(math.sqrt((1 + 9) / 2)), "mae": 2.0}


def test_demand_features_lag_7_reads_training_days_then_the_last_training_week() -> None:
    train = _sales(
        [("S1", "I1", f"2025-01-{day:02d}", float(day)) for day in range(6, 20)]  # Mon 6..Sun 19
    )
    profile = build_profile(train, {"I1": Item("dairy", 2.0)})
    stats = profile.pairs["S1"]["I1"]
    history = history_of(train)

    def lag(day: str, known: Any = history) -> float:
        return lag_7(profile, known, "S1", "I1", dt.date.fromisoformat(day), stats)

    assert lag("2025-01-15") == 8.0  # a training day a week before
    assert lag("2025-01-21") == 14.0  # after the training days: Monday of the last week
    assert lag("2025-01-28", {}) == 14.0  # two weeks on, the newest Monday known
    assert math.isnan(lag("2025-01-08"))  # before the data
    assert Profile.from_json(json.loads(json.dumps(profile.to_json()))) == profile


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prepared dataset (the library's own split) of three weeks: train, selection, gate."""
    return prepared_demand_dataset(tmp_path_factory.mktemp("demand-code"))


@pytest.fixture(scope="module")
def model_dir(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model trained by the entry point, written through AIP_MODEL_DIR under GCS_FUSE_ROOT."""
    return trained_demand_model(prepared, tmp_path_factory.mktemp("fuse"))


def test_demand_task_trains_on_the_flags_and_writes_the_model_dir(model_dir: Path) -> None:
    model = load_model(model_dir)
    assert model.regressor.n_iter_ == 25 and model.regressor.max_leaf_nodes == 7
    assert model.metadata["hyperparameters"]["max_iter"] == 25
    assert model.metadata["trained_on"]["days"][0] == "2025-01-06"
    assert model.metadata["selection"]["days"][-1] == "2025-01-19"
    assert model.profile.last_day == dt.date(2025, 1, 12)
    metric = json.loads((model_dir.parent.parent.parent / "hypertune.json").read_text())
    assert float(metric["rmse"]) == pytest.approx(model.metadata["selection"]["rmse"])


def test_demand_task_refuses_bad_flags_and_data_with_exit_2(
    prepared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for flags in (["--max_iter=2.5"], ["--learning_rate=0"], ["--min_samples_leaf=0"]):
        with pytest.raises(SystemExit) as stopped:
            task.main([f"--data={prepared}", *flags])
        assert stopped.value.code == 2
    assert task.main([f"--data={tmp_path}", f"--output_dir={tmp_path / 'm'}"]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def test_demand_evaluate_writes_the_contract_metrics_file(
    model_dir: Path, prepared: Path, tmp_path: Path
) -> None:
    out = tmp_path / "metrics.json"
    flags = [f"--candidate-model-dir={model_dir}", f"--data={prepared}", f"--metrics-output={out}"]
    assert evaluate.main([*flags, f"--champion-model-dir={model_dir}"]) == 0
    report = parse_metrics(json.loads(out.read_text()), expect_champion=True, source=str(out))
    assert report.candidate == report.champion and set(report.candidate) == {"rmse", "mae"}
    assert report.candidate["rmse"] < report.references["seasonal_naive"]["rmse"]
    assert evaluate.main(flags) == 0
    alone = parse_metrics(json.loads(out.read_text()), expect_champion=False, source=str(out))
    assert alone.champion is None and alone.candidate == report.candidate
    assert evaluate.main([*flags, f"--champion-model-dir={tmp_path / 'gone'}"]) == 2


def test_demand_model_refuses_a_model_of_another_scikit_learn_minor(
    model_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "model"
    copy.mkdir()
    for path in model_dir.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    metadata = json.loads((copy / METADATA_FILE).read_text())
    (copy / METADATA_FILE).write_text(json.dumps({**metadata, "sklearn_version": "1.5.2"}))
    with pytest.raises(ValueError, match=r"written by scikit-learn 1\.5\.2"):
        load_model(copy)


def test_demand_schedules_run_the_configured_weekly_pipeline_on_monday_mornings() -> None:
    (schedule,) = load_declarations(DAILY_DEMAND / "schedules.yaml")
    module, attribute = schedule.pipeline.split(":")
    pipeline = getattr(example_module(DAILY_DEMAND, module.removesuffix(".py")), attribute)
    assert schedule.pipeline_name == pipeline.name == "daily-demand-weekly"
    runs = schedule.next_run_times(3, after=dt.datetime(2026, 3, 1, tzinfo=dt.UTC))
    assert [(r.weekday(), r.hour, str(r.tzinfo)) for r in runs] == [(0, 6, "America/Chicago")] * 3
    assert schedule.max_concurrent_run_count == 1 and schedule.parameter_values == {}

"""bench_warm_start: the per-week means over seeds, the two verdicts (time, quality), and the
kept steps a stopped seed resumes from."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_warm_start as bws  # noqa: E402


def _kind(cpu: float, ndcg: float, wall: float | None = None) -> dict[str, float]:
    return {"wall_seconds": cpu if wall is None else wall, "cpu_seconds": cpu,
            "loop_seconds": cpu / 2, "peak_rss_gib": 1.0, "ndcg_at_10": ndcg,
            "load_at_start": cpu / 10}  # fmt: skip


def _seed(warm_cpu: float, warm_ndcg: float, warm_wall: float | None = None) -> dict[str, Any]:
    weeks = [
        {"week": week, "full": _kind(10.0, 0.60), "warm": _kind(warm_cpu, warm_ndcg, warm_wall)}
        for week in (1, 2)
    ]
    return {"seed": 0, "weeks": weeks}


def test_summarize_means_each_week_over_seeds() -> None:
    summary = bws.summarize([_seed(1.0, 0.60), _seed(3.0, 0.602)])
    week = summary["weeks"][0]
    assert week["warm_wall_seconds"] == pytest.approx(2.0)
    assert week["cpu_ratio"] == pytest.approx(0.2)
    assert week["ndcg_gap"] == pytest.approx(0.001)
    assert week["warm_load_at_start"] == pytest.approx(0.2)
    assert summary["time_met"] and summary["quality_met"]


@pytest.mark.parametrize(
    ("warm_cpu", "warm_ndcg", "time_met", "quality_met"),
    [(2.0, 0.6049, True, True), (2.1, 0.60, False, True), (1.0, 0.5949, True, False)],
)
def test_summarize_verdicts_at_their_bounds(
    warm_cpu: float, warm_ndcg: float, time_met: bool, quality_met: bool
) -> None:
    summary = bws.summarize([_seed(warm_cpu, warm_ndcg)])
    assert (summary["time_met"], summary["quality_met"]) == (time_met, quality_met)


@pytest.mark.parametrize(("warm_cpu", "warm_wall", "met"), [(2.0, 9.0, True), (2.1, 1.0, False)])
def test_summarize_time_verdict_reads_cpu_time_not_wall(
    warm_cpu: float, warm_wall: float, met: bool
) -> None:
    # A loaded machine stretches the wall time of a one-thread training, not its CPU time.
    assert bws.summarize([_seed(warm_cpu, 0.60, warm_wall)])["time_met"] is met


def test_kept_reuses_a_kept_step_without_running_it(tmp_path: Path) -> None:
    path = tmp_path / "step.json"
    assert bws.kept_step(path, lambda: {"ndcg_at_10": 0.5}) == {"ndcg_at_10": 0.5}

    def again() -> dict[str, Any]:
        raise AssertionError("a kept step ran again")

    assert bws.kept_step(path, again) == {"ndcg_at_10": 0.5}


def test_kept_keeps_nothing_from_a_step_that_stopped(tmp_path: Path) -> None:
    path = tmp_path / "step.json"

    def stopped() -> dict[str, Any]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bws.kept_step(path, stopped)
    assert not path.exists()


def _weeks(data: Path) -> int:
    return len(json.loads((data / "generation.json").read_text())["weeks"])


def test_week_split_appends_a_week_once_across_a_stop(tmp_path: Path) -> None:
    from trainer.data import generate
    from trainer.world import WorldConfig

    scale = {"members": 60, "stores": 5, "weeks": 6}
    data = tmp_path / "data"
    generate(WorldConfig(**scale, seed=2), data)
    manifest = tmp_path / "week1" / "manifest.json"
    bws._week_split(data, scale, 1, manifest)
    assert _weeks(data) == 7 and manifest.is_file()
    # Stopped after the append, before the split was written: the rerun splits, appends nothing.
    manifest.unlink()
    bws._week_split(data, scale, 1, manifest)
    assert _weeks(data) == 7 and manifest.is_file()
    bws._week_split(data, scale, 2, tmp_path / "week2" / "manifest.json")
    assert _weeks(data) == 8


def test_week_split_appends_every_week_up_to_the_one_asked(tmp_path: Path) -> None:
    from trainer.data import generate
    from trainer.world import WorldConfig

    scale = {"members": 60, "stores": 5, "weeks": 6}
    data = tmp_path / "data"
    generate(WorldConfig(**scale, seed=2), data)
    # A later run whose warm line is kept regenerates the world and goes straight to week +2.
    bws._week_split(data, scale, 2, tmp_path / "week2" / "manifest.json")
    assert _weeks(data) == 8
    manifest = json.loads((tmp_path / "week2" / "manifest.json").read_text())
    assert manifest["gate"]["files"] == [json.loads((data / "generation.json").read_text())[
        "weeks"][-1]["path"]]  # fmt: skip


def test_week_split_refuses_data_past_the_week_without_its_split(tmp_path: Path) -> None:
    from trainer.data import generate
    from trainer.world import WorldConfig

    scale = {"members": 60, "stores": 5, "weeks": 6}
    data = tmp_path / "data"
    generate(WorldConfig(**scale, seed=2), data)
    bws._week_split(data, scale, 2, tmp_path / "week2" / "manifest.json")
    with pytest.raises(RuntimeError, match=r"already holds week \+2 but the split as of week \+1"):
        bws._week_split(data, scale, 1, tmp_path / "week1" / "manifest.json")
    assert _weeks(data) == 8


SMALL = {"members": 60, "stores": 5, "weeks": 6}


class FakeTrainings:
    """Stands in for the trainer processes: records each training (its folder and the model
    it warm-starts from), writes the model's marker, and can stop at a chosen training."""

    def __init__(self, stop_at: str | None = None) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.stop_at = stop_at

    def train(self, manifest: Path, out: Path, cache: Path, *extra: str) -> dict[str, Any]:
        warm_from = next((e.split("=", 1)[1] for e in extra if e.startswith("--warm_start")), None)
        source = Path(warm_from).parent.name if warm_from else None
        if out.name == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append((out.name, source))
        (out / "model").mkdir(parents=True)
        (out / "model" / "metrics.json").write_text("{}")
        return _kind(10.0 if source is None else 1.0, 0.6)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeTrainings:
    monkeypatch.setenv("VERTEX_RETRAIN_BENCH_DATA", str(tmp_path / "cache"))
    trainings = FakeTrainings()
    monkeypatch.setattr(bws, "_world", lambda scale, seed, state: state / "data")
    monkeypatch.setattr(bws, "_week_split", lambda data, scale, week, manifest: None)
    monkeypatch.setattr(bws, "_prime", lambda manifest, cache: None)
    monkeypatch.setattr(bws, "_gate_ndcg", lambda model, manifest, out: 0.6)
    monkeypatch.setattr(bws, "_train", lambda *a: trainings.train(*a))
    return trainings


def test_run_seed_trains_the_warm_line_before_the_full_retrains(fake: FakeTrainings) -> None:
    result = bws.run_seed(SMALL, 0, 3)
    warm_line = [("full0", None), ("warm1", "full0"), ("warm2", "warm1"), ("warm3", "warm2")]
    assert fake.calls == [*warm_line, ("full1", None), ("full2", None), ("full3", None)]
    assert [w["week"] for w in result["weeks"]] == [1, 2, 3]
    assert result["weeks"][0]["warm"]["cpu_seconds"] == 1.0
    # Only the figures outlive the seed: data, encoded rows and models are removed.
    assert not bws.state_folder(SMALL, 0).exists()
    assert (bws.steps_folder(SMALL, 0) / "week3-full.json").is_file()


def _rerun(fake: FakeTrainings, stop_at: str, *, models_lost: bool) -> list[Any]:
    """The trainings of a second run of seed 0, after a first stopped at `stop_at` (and, with
    `models_lost`, the bench cache gone: another machine, where only the repository's kept
    figures came along)."""
    fake.stop_at = stop_at
    with pytest.raises(KeyboardInterrupt):
        bws.run_seed(SMALL, 0, 3)
    if models_lost:
        shutil.rmtree(bws.state_folder(SMALL, 0))
    fake.stop_at, fake.calls = None, []
    bws.run_seed(SMALL, 0, 3)
    return fake.calls


def test_run_seed_resumes_the_warm_line_from_the_last_kept_model(fake: FakeTrainings) -> None:
    calls = _rerun(fake, "warm3", models_lost=False)
    assert calls == [("warm3", "warm2"), ("full1", None), ("full2", None), ("full3", None)]


def test_run_seed_trains_the_warm_line_again_when_its_model_is_gone(fake: FakeTrainings) -> None:
    calls = _rerun(fake, "warm3", models_lost=True)
    assert [name for name, _ in calls] == ["full0", "warm1", "warm2", "warm3",
                                           "full1", "full2", "full3"]  # fmt: skip


def test_run_seed_needs_no_model_for_full_retrains_once_the_warm_line_is_kept(
    fake: FakeTrainings,
) -> None:
    assert _rerun(fake, "full2", models_lost=True) == [("full2", None), ("full3", None)]


def test_steps_folder_is_in_the_repository_only_at_the_seeds_scale(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("VERTEX_RETRAIN_BENCH_DATA", str(tmp_path))
    seed_scale = {k: v for k, v in bws.SEED_SCALE.items() if k != "seed"}
    assert bws.steps_folder(seed_scale, 1).parent == bws.RESULTS_ROOT
    near = dict(seed_scale, weeks=seed_scale["weeks"] - 1)
    assert bws.steps_folder(near, 1).is_relative_to(tmp_path)


def test_common_weeks_keeps_the_weeks_every_seed_has() -> None:
    weeks = [{"week": w} for w in (1, 2, 3)]
    trimmed = bws.common_weeks([{"seed": 0, "weeks": weeks}, {"seed": 1, "weeks": weeks[:2]}])
    assert [[w["week"] for w in r["weeks"]] for r in trimmed] == [[1, 2], [1, 2]]


def test_run_kept_only_reports_the_weeks_kept_for_every_seed(fake: FakeTrainings) -> None:
    bws.run_seed(SMALL, 0, 2)
    fake.stop_at = "full2"
    with pytest.raises(KeyboardInterrupt):
        bws.run_seed(SMALL, 1, 2)
    fake.calls = []
    result = bws.run(False, SMALL, (0, 1), 2, kept_only=True)
    assert fake.calls == []  # trains nothing
    assert "over 1 weeks" in result["name"] and "PARTIAL: weeks +1 of 2" in result["notes"]
    assert result["met"] is False  # a partial run meets nothing, whatever its weeks show
    complete = bws.run(False, SMALL, (0,), 2, kept_only=True)
    assert complete["met"] is True and "PARTIAL" not in complete["notes"]


def test_main_kept_with_nothing_kept_exits_2_with_one_line(
    fake: FakeTrainings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench_warm_start", "--members", "60", "--stores", "5", "--weeks", "6", "--kept"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stopped:
        bws.main()
    assert stopped.value.code == 2 and fake.calls == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no week is kept for every one of seeds 0,1,2" in err


def test_main_quick_kept_trains_nothing(
    fake: FakeTrainings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_warm_start", "--quick", "--kept"])
    with pytest.raises(SystemExit) as stopped:
        bws.main()
    assert stopped.value.code == 2 and fake.calls == []
    assert "no week is kept for every one of seeds 0 " in capsys.readouterr().err

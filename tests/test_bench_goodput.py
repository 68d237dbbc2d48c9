"""bench_goodput: the periodic-only trainer really skips the SIGTERM checkpoint; the verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts, not an installed package
    sys.path.insert(0, str(ROOT))

from bench import bench_goodput as bg  # noqa: E402
from bench.figures import check_figure  # noqa: E402
from bench.report_plots import check_plot  # noqa: E402
from trainer.faults import faults_env  # noqa: E402

FLAGS = ["--epochs", "50", "--batch_size", "64", "--checkpoint_every_steps", "5",
         "--log_every_steps", "1", "--num_threads", "1", "--max_steps", "40"]  # fmt: skip


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from trainer.data import generate
    from trainer.world import WorldConfig

    out = tmp_path_factory.mktemp("goodput") / "data"
    generate(WorldConfig(members=300, stores=10, weeks=4, seed=3), str(out))
    return out


def _train(program: list[str], data: Path, out: Path) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench")]),
           **faults_env(sigterm_at_step=7)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, *program, "--data", str(data), "--output_dir", str(out), *FLAGS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.returncode


@pytest.mark.slow
def test_periodic_only_trainer_dies_on_sigterm_without_checkpointing(
    dataset: Path, tmp_path: Path
) -> None:
    shipped = _train(["-m", "trainer.task"], dataset, tmp_path / "shipped")
    periodic = _train([str(ROOT / "bench" / "periodic_only_trainer.py")], dataset, tmp_path / "p")
    progress = json.loads((tmp_path / "shipped" / "checkpoints" / "progress.json").read_text())
    assert shipped == 143 and progress["checkpoint_step"] == 7  # checkpoint on SIGTERM
    assert periodic == -15  # SIGTERM's default action: terminated at once
    kept = json.loads((tmp_path / "p" / "checkpoints" / "progress.json").read_text())
    assert kept["checkpoint_step"] == 5  # only the periodic checkpoint survived


def _arm(
    wall: float, restarts: int, step_goodput: float | None, finished: bool = True
) -> dict[str, float | int | bool | None]:
    return {"wall": wall, "restarts": restarts, "step_goodput": step_goodput, "time_lost": 0.0,
            "steps": 100 if finished else None, "ndcg": 0.4 if finished else None,
            "finished": finished}  # fmt: skip


def test_figures_runtime_goodput_is_useful_steps_with_wall_efficiency_beside() -> None:
    arms = {
        "uninterrupted": _arm(60.0, 0, None),
        "SIGTERM checkpoints": _arm(62.0, 2, 1.0),
        "periodic only": _arm(80.0, 3, 0.8),
    }
    result = bg._figures(arms, interval=30.0, steps=100, every=10, rate=50.0, quick=False)
    check_figure(result)
    check_plot(result["plot"])
    assert result["measured"]["value"] == pytest.approx(1.0)
    assert result["baseline"]["value"] == pytest.approx(0.8)
    assert result["met"] is True
    rows = {row[0]: row[1] for row in result["rows"]}
    assert rows["wall-clock efficiency, SIGTERM checkpoints"] == pytest.approx(60 / 62)
    assert rows["wall-clock efficiency, periodic only"] == pytest.approx(60 / 80)


def test_figures_explain_a_missed_target() -> None:
    arms = {
        "uninterrupted": _arm(16.0, 0, None),
        "SIGTERM checkpoints": _arm(24.0, 2, 0.9),
        "periodic only": _arm(38.0, 4, 0.86),
    }
    result = bg._figures(arms, interval=8.0, steps=100, every=10, rate=50.0, quick=True)
    assert result["met"] is False
    assert "misses the target" in result["notes"] and "would raise it" in result["notes"]
    assert "quick pass" in result["notes"]


def test_figures_count_an_arm_that_ran_out_of_restarts_as_zero_goodput() -> None:
    arms = {
        "uninterrupted": _arm(16.0, 0, None),
        "SIGTERM checkpoints": _arm(20.0, 1, 1.0),
        "periodic only": _arm(90.0, 6, 0.5, finished=False),
    }
    result = bg._figures(arms, interval=12.0, steps=100, every=10, rate=50.0, quick=True)
    check_figure(result)
    assert result["baseline"]["value"] == 0.0
    assert "periodic only never finished" in result["notes"] and "STOCKOUT" in result["notes"]


def test_figures_miss_the_target_when_restarts_cost_too_much_wall_time() -> None:
    arms = {
        "uninterrupted": _arm(60.0, 0, None),
        "SIGTERM checkpoints": _arm(80.0, 2, 1.0),  # no step redone, but 10 s per restart
        "periodic only": _arm(90.0, 3, 0.8),
    }
    result = bg._figures(arms, interval=30.0, steps=100, every=10, rate=50.0, quick=False)
    assert result["measured"]["value"] == pytest.approx(1.0)
    assert result["met"] is False
    assert "efficiency >= 0.9" in result["target"]
    assert "(target 0.9: missed)" in result["notes"] and "would raise it" in result["notes"]

"""The reference trainer's warm start: grown tables keep what the champion knew, the rows are
the newest weeks plus a replay, and `python -m trainer.task --warm_start_from` continues from
a model it trained a week earlier (one small process run each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from trainer.data import append_week, generate
from trainer.encoded import EncodedPart
from trainer.export import Artifact
from trainer.features import Catalogue
from trainer.model import DrinkRecommender, ModelConfig
from trainer.split import make_time_split
from trainer.task import build_parser
from trainer.warm_start import WarmStartError, grown_state, warm_rows
from trainer.world import WorldConfig

ROOT = Path(__file__).resolve().parent.parent


def _catalogue(drinks: list[int], stores: list[int]) -> Catalogue:
    n = len(drinks)
    zeros = np.zeros(n, dtype=np.int64)
    return Catalogue(
        drink_names=[f"d{d}" for d in drinks],
        drink_ids=np.asarray(drinks, dtype=np.int64),
        drink_category=zeros,
        drink_cold=zeros,
        drink_region=zeros - 1,
        drink_launch_day=zeros,
        drink_season=zeros - 1,
        store_ids=np.asarray(stores, dtype=np.int64),
        store_region=np.zeros(len(stores), dtype=np.int64),
    )


def _model(members: int, drinks: int, stores: int, dim: int = 4, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = ModelConfig(
        n_members=members,
        n_stores=stores,
        n_drinks=drinks,
        n_categories=1,
        embedding_dim=dim,
        hidden_dim=8,
        history_hidden=0,
        history_half_life_days=0,
    )
    return DrinkRecommender(config)


def _champion(dim: int = 4) -> Artifact:
    model = _model(2, 2, 1, dim=dim, seed=1)
    return Artifact(
        model,
        _catalogue([1, 2], [7]),
        np.asarray([10, 20], dtype=np.int64),
        np.zeros((1, 2)),
        None,
    )


def test_warm_start_grown_state_keeps_known_rows_and_adds_new_members_and_drinks() -> None:
    champion = _champion()
    old = champion.model.state_dict()
    model = _model(3, 3, 1)  # member 30 and drink 3 are new; member 10 left
    fresh = {k: v.clone() for k, v in model.state_dict().items()}
    state, report = grown_state(
        model, champion, np.asarray([20, 25, 30]), _catalogue([1, 2, 3], [7])
    )
    # Member 20 was the champion's row 2 (row 0 is the unknown member); it is row 1 now.
    assert torch.equal(state["member.weight"][1], old["member.weight"][2])
    assert torch.equal(state["member.weight"][0], old["member.weight"][0])
    assert torch.equal(state["member.weight"][3], fresh["member.weight"][3])  # member 30: new
    assert torch.equal(state["drink.weight"][:2], old["drink.weight"])
    assert torch.equal(state["drink.weight"][2], fresh["drink.weight"][2])  # drink 3: new
    assert torch.equal(state["context.0.weight"], old["context.0.weight"])
    assert report.kept["member.weight"] == 2 and report.added["member.weight"] == 2
    assert report.added["drink.weight"] == 1


def test_warm_start_grown_state_refuses_a_champion_of_another_size() -> None:
    with pytest.raises(WarmStartError, match="other hyperparameters"):
        grown_state(_model(2, 2, 1, dim=8), _champion(dim=4), np.asarray([10, 20]),
                    _catalogue([1, 2], [7]))  # fmt: skip


def _part(days: list[int]) -> EncodedPart:
    n = len(days)
    columns = {key: np.zeros(n, dtype=np.int32) for key in ("member", "store", "hour",
               "weekday", "season", "drink")}  # fmt: skip
    columns["day"] = np.asarray(days, dtype=np.int32)
    columns["member"] = np.arange(n, dtype=np.int32)  # names each row
    return EncodedPart(columns)


@pytest.mark.parametrize(
    ("weeks", "fraction", "recent", "replayed"),
    [(1, 0.0, 7, 0), (2, 0.0, 14, 0), (1, 1.0, 7, 21)],
)
def test_warm_start_rows_are_the_newest_weeks_plus_the_replay_share(
    weeks: int, fraction: float, recent: int, replayed: int
) -> None:
    part = _part(list(range(100, 128)))  # four weeks, one row a day
    rows, counts = warm_rows(part, weeks, fraction, seed=0)
    assert counts["recent_rows"] == recent and counts["replay_rows"] == replayed
    assert len(rows) == recent + replayed
    days = rows.take(np.arange(len(rows)))["day"]
    assert days.max() == 127 and (days >= 128 - 7 * weeks).sum() == recent


def test_warm_start_replay_is_a_seeded_share_of_the_older_rows() -> None:
    part = _part([0] * 10_000 + [50] * 10)
    rows, counts = warm_rows(part, 1, 0.1, seed=3)
    again, _ = warm_rows(part, 1, 0.1, seed=3)
    chosen = rows.take(np.arange(len(rows)))["member"]
    assert 800 < counts["replay_rows"] < 1200
    assert np.array_equal(chosen, again.take(np.arange(len(again)))["member"])
    assert np.array_equal(chosen, np.sort(chosen))  # in the part's order


@pytest.mark.parametrize(
    "flag",
    [
        "--warm_start_recent_weeks=0",
        "--warm_start_replay_fraction=1.5",
        "--warm_start_epochs=0",
        "--warm_start_learning_rate=0",
    ],
)
def test_warm_start_bad_flag_is_one_line_and_exit_2(flag: str, capsys: Any) -> None:
    from trainer.task import main

    with pytest.raises(SystemExit) as stopped:
        main(["--data", "x", flag])
    assert stopped.value.code == 2
    assert flag.split("=")[0] in capsys.readouterr().err


def test_warm_start_flags_default_to_a_scratch_run() -> None:
    args = build_parser().parse_args(["--data", "x"])
    assert args.warm_start_from == "" and args.warm_start_epochs == 1


def _train(manifest: Path, out: Path, *extra: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIP_", "CLUSTER_SPEC"))}
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env.update(PYTHONPATH=os.pathsep.join(path), CLOUD_ML_HP_METRIC_FILE=str(out / "hypertune"))
    result = subprocess.run(
        [sys.executable, "-m", "trainer.task", "--data", str(manifest), "--output_dir", str(out),
         "--batch_size", "128", "--num_threads", "1", "--epochs", "2", *extra],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "model" / "metrics.json").read_text())["training"]


def test_task_warm_start_continues_the_champion_on_the_next_week(tmp_path: Path) -> None:
    data = tmp_path / "data"
    generate(WorldConfig(members=200, stores=10, weeks=10, seed=2), data)
    make_time_split(str(data), str(tmp_path / "week1"))
    first = _train(tmp_path / "week1" / "manifest.json", tmp_path / "full")
    append_week(data)
    make_time_split(str(data), str(tmp_path / "week2"))
    warm = _train(
        tmp_path / "week2" / "manifest.json",
        tmp_path / "warm",
        f"--warm_start_from={tmp_path / 'full' / 'model'}",
        "--warm_start_epochs=1",
        "--warm_start_replay_fraction=0.1",
        "--warm_start_recent_weeks=1",
        "--warm_start_learning_rate=0.002",
    )
    assert first["warm_start"] == {"used": False}
    assert warm["warm_start"]["used"] is True
    assert warm["warm_start"]["kept"]["member.weight"] > 1
    assert warm["trained_rows"] < warm["train_rows"] / 2
    # The newest training week alone, a tenth of the rest, at the warm start's own rate.
    manifest = json.loads((tmp_path / "week2" / "manifest.json").read_text())
    newest = Path(manifest["data_uri"]) / manifest["train"]["files"][-1]
    assert warm["warm_start"]["recent_rows"] == pq.read_metadata(newest).num_rows
    older = warm["warm_start"]["older_rows"]
    assert 0.05 * older < warm["warm_start"]["replay_rows"] < 0.15 * older
    assert (first["learning_rate"], warm["learning_rate"]) == (0.01, 0.002)
    assert (
        warm["trained_rows"]
        == warm["warm_start"]["recent_rows"] + warm["warm_start"]["replay_rows"]
    )
    assert warm["total_steps"] == warm["trained_rows"] // 128  # one epoch of those rows

"""Synthetic data: determinism, realistic structure, time features and the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trainer.data import (
    MAX_WORKERS,
    SCHEMA,
    default_workers,
    generate,
    main,
    sample_week,
    week_file,
)
from trainer.features import time_features
from trainer.gumbel import gumbel_argmax
from trainer.paths import resolve
from trainer.world import WorldConfig, build_world

SMALL = WorldConfig(members=300, stores=20, weeks=4, seed=3)


def _all_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_generate_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    generate(SMALL, tmp_path / "a")
    generate(SMALL, tmp_path / "b")
    a, b = _all_bytes(tmp_path / "a"), _all_bytes(tmp_path / "b")
    assert set(a) == {
        *(week_file(w) for w in range(4)),
        "drinks.parquet",
        "stores.parquet",
        "generation.json",
    }
    assert a == b


def test_generate_different_seed_gives_different_rows(tmp_path: Path) -> None:
    generate(SMALL, tmp_path / "a")
    generate(WorldConfig(members=300, stores=20, weeks=4, seed=4), tmp_path / "b")
    ta = pq.read_table(tmp_path / "a" / week_file(1))
    tb = pq.read_table(tmp_path / "b" / week_file(1))
    assert not ta.equals(tb)


def test_generate_summary_counts_match_files(tmp_path: Path) -> None:
    summary = generate(SMALL, tmp_path)
    rows = sum(pq.read_metadata(tmp_path / w["path"]).num_rows for w in summary["weeks"])
    assert rows == summary["rows"] > 0
    assert pq.read_schema(tmp_path / week_file(0)).equals(SCHEMA)


def test_sample_week_respects_menus_launches_and_time_features() -> None:
    world = build_world(WorldConfig(members=800, stores=20, weeks=30, seed=5))
    for week in (0, 12, 29):
        table = sample_week(world, week)
        drink = table.column("drink_id").to_numpy()
        region = table.column("region").to_numpy()
        store = table.column("store_id").to_numpy()
        assert (world.drink_launch_week[drink] <= week).all(), "a drink was sold before its launch"
        drink_region = world.drink_region[drink]
        assert ((drink_region == -1) | (drink_region == region)).all(), (
            "a regional drink left its region"
        )
        assert (world.store_region[store] == region).all()
        derived = time_features(
            table.column("timestamp").cast(pa.timestamp("s")).cast(pa.int64()).to_numpy()
        )
        for name in ("hour", "weekday", "season"):
            assert (derived[name] == table.column(name).to_numpy()).all(), name


def test_sample_week_cold_drinks_sell_more_in_summer() -> None:
    world = build_world(WorldConfig(members=1500, stores=20, weeks=40, seed=6))

    def cold_share(weeks: range) -> float:
        drinks = np.concatenate(
            [sample_week(world, w).column("drink_id").to_numpy() for w in weeks]
        )
        return float(world.drink_cold[drinks].mean())

    assert cold_share(range(27, 31)) > cold_share(range(1, 5)) + 0.05  # July vs January


def test_sample_week_members_repeat_their_favourites() -> None:
    world = build_world(WorldConfig(members=1000, stores=20, weeks=10, seed=7))
    table = pa.concat_tables([sample_week(world, w) for w in range(10)])
    member = table.column("member_id").to_numpy()
    drink = table.column("drink_id").to_numpy()
    top_share = []
    for m in np.unique(member)[:300]:
        counts = np.bincount(drink[member == m])
        if counts.sum() >= 8:
            top_share.append(counts.max() / counts.sum())
    # With 96 drinks and no habits the favourite's share would be near 1/20; habits push it up.
    assert np.mean(top_share) > 0.3


def test_world_config_rejects_bad_scale() -> None:
    with pytest.raises(ValueError, match="members must be >= 1"):
        WorldConfig(members=0, stores=20, weeks=4, seed=0)
    with pytest.raises(ValueError, match="stores must be >= 5"):
        WorldConfig(members=10, stores=2, weeks=4, seed=0)


def test_data_cli_writes_dataset_and_rejects_bad_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "generate",
                "--members",
                "50",
                "--stores",
                "5",
                "--weeks",
                "2",
                "--out",
                str(tmp_path / "d"),
            ]
        )
        == 0
    )
    assert (tmp_path / "d" / week_file(1)).is_file()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.data",
            "generate",
            "--members",
            "-1",
            "--stores",
            "5",
            "--weeks",
            "2",
            "--out",
            str(tmp_path / "e"),
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode == 2 and "members must be >= 1" in result.stderr
    assert not (tmp_path / "e").exists()


def test_resolve_maps_gcs_uris_under_fuse_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GCS_FUSE_ROOT", str(tmp_path))
    assert resolve("gs://bucket/a/b") == tmp_path / "bucket" / "a" / "b"
    assert resolve("/gcs/bucket/a") == tmp_path / "bucket" / "a"
    assert resolve("relative/x") == Path("relative/x")
    with pytest.raises(ValueError, match=r"\.\."):
        resolve("gs://bucket/../etc")
    with pytest.raises(ValueError, match="BUCKET"):
        resolve("gs://")
    monkeypatch.delenv("GCS_FUSE_ROOT")
    # No FUSE root and no /gcs mount: the library's local root (tests/test_storage_contract.py).
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    assert resolve("gs://bucket/a") == tmp_path / "root" / "gcs" / "bucket" / "a"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gumbel_argmax_matches_numpy_gumbel_and_generator_state(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.normal(0.0, 3.0, (3000, 40))
    scores[rng.random(scores.shape) < 0.3] = -np.inf  # choices off the menu
    scores[5] = -np.inf  # a row with no choice at all
    scores[6, :2] = scores[6, 2]  # exact ties in the scores
    scores[7] = 0.0  # a row of equal scores: the noise alone decides
    ours, theirs = np.random.default_rng([seed, 1]), np.random.default_rng([seed, 1])
    expected = (scores + theirs.gumbel(size=scores.shape)).argmax(axis=1)
    assert np.array_equal(gumbel_argmax(ours, scores), expected)
    assert ours.random() == theirs.random()  # both generators moved by the same draws


def test_gumbel_argmax_screens_with_approximate_scores_and_stays_exact() -> None:
    rng = np.random.default_rng(4)
    scores = rng.normal(0.0, 2.0, (2000, 30))
    scores[rng.random(scores.shape) < 0.25] = -np.inf
    # Scores off by up to 0.01, in float32: the screen must still keep every contender.
    approx = (scores + rng.uniform(-0.01, 0.01, scores.shape)).astype(np.float32)
    calls = []

    def exact(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        calls.append(rows.size)
        return scores[rows, columns]

    ours, theirs = np.random.default_rng(11), np.random.default_rng(11)
    got = gumbel_argmax(ours, approx, exact, error=0.011)
    assert np.array_equal(got, (scores + theirs.gumbel(size=scores.shape)).argmax(axis=1))
    assert sum(calls) < 3 * len(scores)  # exact scores for a few cells a row, not all 30


class _ZeroFirstDraw:
    """A generator whose next uniform draw is exactly 0 (numpy's Gumbel sampler redraws it)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.bit_generator = rng.bit_generator

    def random(self, shape: tuple[int, ...]) -> np.ndarray:
        out = self.rng.random(shape)
        out.flat[0] = 0.0
        return out

    def gumbel(self, size: tuple[int, ...]) -> np.ndarray:
        return self.rng.gumbel(size=size)


def test_gumbel_argmax_falls_back_to_numpy_on_a_zero_draw() -> None:
    scores = np.zeros((4, 3))
    rng, reference = np.random.default_rng(9), np.random.default_rng(9)
    got = gumbel_argmax(_ZeroFirstDraw(rng), scores)  # type: ignore[arg-type]
    assert np.array_equal(got, (scores + reference.gumbel(size=scores.shape)).argmax(axis=1))
    assert rng.random() == reference.random()  # the state was rewound before numpy's path


def test_generate_in_worker_processes_writes_the_same_bytes(tmp_path: Path) -> None:
    config = WorldConfig(members=400, stores=10, weeks=5, seed=4)
    one = generate(config, tmp_path / "one", workers=1)
    two = generate(config, tmp_path / "two", workers=2)
    assert _all_bytes(tmp_path / "one") == _all_bytes(tmp_path / "two")
    assert one["rows"] == two["rows"] > 0
    with pytest.raises(ValueError, match="workers must be >= 0"):
        generate(config, tmp_path / "three", workers=-1)


def test_default_workers_stay_serial_for_small_data() -> None:
    assert default_workers(WorldConfig(members=300, stores=20, weeks=4, seed=0)) == 1
    big = default_workers(WorldConfig(members=500_000, stores=2000, weeks=156, seed=0))
    assert 1 <= big <= MAX_WORKERS

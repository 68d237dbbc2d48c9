"""The drink shops' world drifts: favourites change, recent launches become habits, seasonal
drinks are sold in their season only; with every drift option at 0 it never does."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow.compute as pc
import pytest

from trainer.drift import RECENT_LAUNCH_WEEKS, favourites_at
from trainer.sampling import sample_week
from trainer.world import ALWAYS_ON_MENU, WorldConfig, build_world

CONFIG = WorldConfig(members=400, stores=6, weeks=60, seed=5)


def _favourites(config: WorldConfig, week: int) -> np.ndarray:
    world = build_world(config)
    members = np.repeat(np.arange(config.members), 3)
    slots = np.tile(np.arange(3), config.members)
    return favourites_at(world, members, slots, week)


def test_drift_defaults_are_on_and_zero_turns_each_off() -> None:
    assert (CONFIG.habit_weeks, CONFIG.launch_boost, CONFIG.seasonal_share) == (26.0, 4.0, 0.1)
    assert CONFIG.drifts
    still = replace(CONFIG, habit_weeks=0.0, launch_boost=0.0, seasonal_share=0.0)
    assert not still.drifts
    # A dataset generated before the options existed reads back as a world without drift.
    old = {k: v for k, v in CONFIG.to_json().items() if k in ("members", "stores", "weeks", "seed")}
    assert not WorldConfig.from_json(old).drifts
    assert WorldConfig.from_json(CONFIG.to_json()) == CONFIG


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("habit_weeks", -1.0, "habit_weeks must be >= 0"),
        ("launch_boost", -0.5, "launch_boost must be >= 0"),
        ("seasonal_share", 1.0, r"seasonal_share must be in \[0, 1\)"),
        ("seasonal_share", -0.1, r"seasonal_share must be in \[0, 1\)"),
    ],
)
def test_drift_options_refuse_out_of_range_values(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replace(CONFIG, **{field: value})


def test_drift_favourites_change_over_time_only_with_habit_weeks() -> None:
    start = _favourites(CONFIG, 0)
    later = _favourites(CONFIG, 52)
    assert np.array_equal(start, build_world(CONFIG).member_favourites.reshape(-1))
    changed = float(np.mean(start != later))
    assert 0.5 < changed < 1.0  # a mean of 26 weeks: most slots moved on within a year
    frozen = replace(CONFIG, habit_weeks=0.0)
    assert np.array_equal(_favourites(frozen, 52), _favourites(frozen, 0))


def test_drift_recent_launches_become_habits_more_often_with_launch_boost() -> None:
    launch = build_world(CONFIG).drink_launch_week.astype(np.int64)

    def launched_later_share(config: WorldConfig) -> float:
        return float(np.mean(launch[_favourites(config, 59)] > 0))

    boosted = launched_later_share(CONFIG)
    plain = launched_later_share(replace(CONFIG, launch_boost=0.0))
    assert boosted > 0.0 and boosted > plain
    assert RECENT_LAUNCH_WEEKS == 6


def test_drift_seasonal_drinks_sell_only_in_their_season() -> None:
    world = build_world(CONFIG)
    seasonal = np.flatnonzero(world.drink_season >= 0)
    assert seasonal.size > 0 and (seasonal >= ALWAYS_ON_MENU).all()
    rows = sample_week(world, 30)
    drink = rows.column("drink_id").to_numpy()
    season = rows.column("season").to_numpy()
    sold = np.isin(drink, seasonal)
    assert sold.any()
    assert (world.drink_season[drink[sold]] == season[sold]).all()
    none = build_world(replace(CONFIG, seasonal_share=0.0))
    assert (none.drink_season == -1).all()
    assert pc.max(rows.column("season")).as_py() < 4

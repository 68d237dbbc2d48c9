"""One week of synthetic transactions, drawn from the world with its own seeded generator.

Visits follow each member's rate, weekday rhythm and preferred daypart; a visit orders one of
the member's favourites of that week (`trainer.drift`) out of habit, or else a drink chosen by
Gumbel-max over a utility of taste, popularity, novelty, weather and time of day among what
the shop sells that day (its region's menu, launched, in season).
`trainer.gumbel` makes that choice exactly as `Generator.gumbel` would, screening cells with
float32 scores and computing the float64 utility only for the few contenders.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa

from trainer.drift import SEASONS, favourites_at
from trainer.gumbel import gumbel_argmax
from trainer.world import (
    REGIONS,
    START_DATE,
    TASTE_DIM,
    World,
    region_price_factor,
    rng_for,
    season_of_month,
    weekly_temperature,
)

SCHEMA = pa.schema(
    [
        ("member_id", pa.int32()),
        ("store_id", pa.int32()),
        ("drink_id", pa.int32()),
        ("timestamp", pa.timestamp("ms")),  # Parquet has no second unit
        ("quantity", pa.int8()),
        ("price", pa.float32()),
        ("hour", pa.int8()),
        ("weekday", pa.int8()),
        ("week", pa.int16()),
        ("season", pa.int8()),
        ("region", pa.int8()),
        ("temperature", pa.float32()),
    ]
)
_DAYPART_HOURS = np.array([[7, 11], [11, 14], [14, 18], [18, 22]])
_WEEKDAY_CDF = np.cumsum(
    [[0.17, 0.17, 0.17, 0.17, 0.18, 0.07, 0.07], [0.1, 0.1, 0.1, 0.1, 0.15, 0.22, 0.23]], axis=1
)
_FAVOURITE_CDF = np.array([0.6, 0.9, 1.0])
_EPOCH_START = np.datetime64(START_DATE.isoformat(), "s").astype(np.int64)
_TASTE_CHUNK = 65_536  # exploring visits per taste matrix product
_BLOCK = 4_096  # visits per cache-sized block of the elementwise passes


def sample_week(world: World, week: int) -> pa.Table:
    """Draw one week of transactions.

    Args:
        world: the world from `build_world`.
        week: week index, 0-based from `START_DATE`.

    Returns:
        A table with `SCHEMA`, sorted by timestamp then member.
    """
    cfg = world.config
    rng = rng_for(cfg.seed, 5, week)
    temps = weekly_temperature(world, week)
    home_region = world.store_region[world.member_home]
    # Warm weeks and a growing member base bring more visits.
    busy = 1.0 + 0.04 * (temps.mean(axis=1)[home_region] - 22.0) + 0.1 * week / 52
    visits = rng.poisson(world.member_rate * np.clip(busy, 0.3, None))
    member = np.repeat(np.arange(cfg.members, dtype=np.int32), visits)
    n = member.size

    # How many CDF entries lie below the draw, per member's rhythm: the day of the week.
    draw, weekend = rng.random(n), world.member_weekend[member]
    weekday = np.where(
        weekend,
        np.searchsorted(_WEEKDAY_CDF[1], draw, side="left"),
        np.searchsorted(_WEEKDAY_CDF[0], draw, side="left"),
    )
    usual = rng.random(n) < 0.7
    daypart = np.where(usual, world.member_daypart[member], rng.integers(0, 4, n))
    lo, hi = _DAYPART_HOURS[daypart, 0], _DAYPART_HOURS[daypart, 1]
    hour = lo + (rng.random(n) * (hi - lo)).astype(np.int64)

    store = _choose_store(world, rng, member)
    region = world.store_region[store]
    temperature = temps[region, weekday]
    day = 7 * week + weekday
    month = (np.datetime64(START_DATE.isoformat(), "D") + day).astype("datetime64[M]")
    season = season_of_month(month.astype(np.int64) % 12 + 1)
    drink = _choose_drink(world, rng, member, store, week, hour, temperature, season)

    u = rng.random(n)
    quantity = (1 + (u < 0.12) + (u < 0.03)).astype(np.int8)
    price = np.round(world.drink_price[drink] * region_price_factor(region)).astype(np.float32)
    seconds = _EPOCH_START + day * 86400 + hour * 3600 + rng.integers(0, 60, n) * 60

    # Members come in ascending order, so a stable sort by minute of the week orders by
    # (time, member), as a lexsort would; 16-bit keys let numpy use a radix sort.
    minute = ((seconds - _EPOCH_START - 7 * week * 86400) // 60).astype(np.int16)
    order = np.argsort(minute, kind="stable")
    columns = {
        "member_id": member,
        "store_id": store.astype(np.int32),
        "drink_id": drink.astype(np.int32),
        "timestamp": seconds.astype("datetime64[s]"),
        "quantity": quantity,
        "price": price,
        "hour": hour.astype(np.int8),
        "weekday": weekday.astype(np.int8),
        "week": np.full(n, week, dtype=np.int16),
        "season": season,
        "region": region.astype(np.int8),
        "temperature": np.round(temperature, 1).astype(np.float32),
    }
    return pa.table({name: values[order] for name, values in columns.items()}, schema=SCHEMA)


def _choose_store(world: World, rng: np.random.Generator, member: np.ndarray) -> np.ndarray:
    """Home store most of the time, otherwise another shop in the same region."""
    home = world.member_home[member]
    by_region = np.argsort(world.store_region, kind="stable")
    counts = np.bincount(world.store_region, minlength=len(REGIONS))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    region = world.store_region[home]
    other = by_region[starts[region] + (rng.random(member.size) * counts[region]).astype(np.int64)]
    return np.where(rng.random(member.size) < 0.85, home, other)


def _choose_drink(
    world: World,
    rng: np.random.Generator,
    member: np.ndarray,
    store: np.ndarray,
    week: int,
    hour: np.ndarray,
    temperature: np.ndarray,
    season: np.ndarray,
) -> np.ndarray:
    """A favourite out of habit, else a choice by taste, weather, time of day and novelty."""
    n = member.size
    slot = np.searchsorted(_FAVOURITE_CDF, rng.random(n), side="left")
    favourite = favourites_at(world, member, slot, week)
    store_region = world.store_region[store]
    fav_region = world.drink_region[favourite]
    fav_season = world.drink_season[favourite]
    fav_on_menu = ((fav_region == -1) | (fav_region == store_region)) & (
        (fav_season == -1) | (fav_season == season)
    )
    habitual = (rng.random(n) < world.member_habit[member]) & fav_on_menu
    drink = favourite.astype(np.int64)

    explore = np.flatnonzero(~habitual)
    category = world.drink_category
    age = week - world.drink_launch_week.astype(np.int64)
    novelty = np.where((age >= 0) & (age < 6), 1.5 * (1 - age / 6), 0.0)
    base = world.drink_popularity + novelty
    sign = np.where(world.drink_cold, 1.0, -1.0)
    # A visit falls in at most one of the three boosted dayparts, so adding its daypart's row
    # adds exactly what three masked additions would (the other two add 0.0, which is exact);
    # the same row adds -inf for drinks off the region's or the season's menu or not launched
    # yet. Rows are (season, daypart, region).
    boost = np.zeros((4, category.size))
    boost[1] = 1.0 * (category == 3)  # before 11:00: coffee
    boost[2] = 0.4 * ((category == 1) | (category == 4))  # 13:00-18:00: fruit tea, smoothies
    boost[3] = 0.3 * (category == 0)  # from 18:00: milk tea
    on_menu = (world.drink_region == -1) | (world.drink_region == np.arange(len(REGIONS))[:, None])
    in_season = (world.drink_season == -1) | (world.drink_season == np.arange(SEASONS)[:, None])
    sold = on_menu[None, :, :] & in_season[:, None, :] & (age >= 0)
    off_menu = np.where(sold, 0.0, -np.inf)
    context = (boost[None, :, None, :] + off_menu[:, None, :, :]).reshape(-1, category.size)
    daypart = np.select([hour < 11, (hour >= 13) & (hour < 18), hour >= 18], [1, 2, 3], 0)
    context_row = (season.astype(np.int64) * len(boost) + daypart) * len(REGIONS) + store_region
    scale = 2.0 / np.sqrt(TASTE_DIM)
    # float32 copies for the approximate scores `gumbel_argmax` screens cells with.
    base32, sign32 = base.astype(np.float32), sign.astype(np.float32)
    context32 = context.astype(np.float32)
    for start in range(0, explore.size, _TASTE_CHUNK):
        rows = explore[start : start + _TASTE_CHUNK]
        # One BLAS call per 65,536 rows, as since v1: other shapes may round differently.
        taste = world.member_taste[member[rows]] @ world.drink_taste.T
        heat = 0.9 * (temperature[rows] - 22.0) / 6.0
        situation = context_row[rows]
        # float32 rounding of |terms| <= `largest` stays far below this bound.
        largest = float(np.abs(taste).max()) * scale + np.abs(base).max() + np.abs(heat).max() + 1
        error = 1e-3 + 1e-6 * largest
        for block in range(0, rows.size, _BLOCK):
            part = slice(block, block + _BLOCK)
            # Built in float32 from the start: float64 temporaries would double the memory
            # traffic of the passes over every (visit, drink) cell.
            approx = taste[part].astype(np.float32)
            approx *= np.float32(scale)
            approx += base32
            approx += sign32 * heat[part, None].astype(np.float32)
            approx += context32[situation[part]]

            exact = partial(
                _exact_utility, taste[part], heat[part], situation[part], base, sign, context, scale
            )
            drink[rows[part]] = gumbel_argmax(rng, approx, exact, error)
    return drink


def _exact_utility(
    taste: np.ndarray,
    heat: np.ndarray,
    situation: np.ndarray,
    base: np.ndarray,
    sign: np.ndarray,
    context: np.ndarray,
    scale: float,
    rows: np.ndarray,
    columns: np.ndarray,
) -> np.ndarray:
    """The float64 utility of the given cells: version 1's operations, in its order."""
    utility = taste[rows, columns] * scale
    utility += base[columns]
    utility += sign[columns] * heat[rows]
    utility += context[situation[rows], columns]
    return np.asarray(utility)

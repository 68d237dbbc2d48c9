"""The synthetic drink-shop world: catalogue, stores and members with hidden tastes.

Everything here is drawn from generators seeded by `(seed, purpose)`, so the world is a pure
function of the seed and the scale, and each week's transactions can be drawn independently.

The world drifts (`WorldConfig`'s drift options, on by default): a member's favourites change
(`habit_weeks`), a drink launched lately becomes a new habit for some members (`launch_boost`),
and some drinks are sold in one season only, every year (`seasonal_share`). With all three at
0 the world is version 1's: favourites drawn once at week 0 and never changed, every drink sold
all year. The drift is drawn by counter-based hashes (`trainer.drift`), not by the generators,
so the generators' streams, and the rows a drift-free world samples, are unchanged.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer import drift

START_DATE = dt.date(2023, 1, 2)  # a Monday, so week w starts on START_DATE + 7w
CATEGORIES = ("milk tea", "fruit tea", "pure tea", "coffee", "smoothie", "cheese foam")
_COLD_SHARE = (0.6, 0.85, 0.5, 0.5, 1.0, 0.75)  # share of drinks in a category served cold
REGIONS = ("north", "central", "south", "east", "islands")
_REGION_BASE_TEMP = np.array([21.0, 23.0, 25.5, 23.5, 22.0], dtype=np.float32)
_REGION_PRICE_FACTOR = np.array([1.08, 1.0, 0.95, 0.97, 1.05], dtype=np.float32)
TASTE_DIM = 8
NEW_DRINK_SHARE = 0.25  # share of the catalogue launched after week 0
REGIONAL_SHARE = 0.3  # share of drinks sold in one region only
ALWAYS_ON_MENU = 4  # drinks 0..3: sold everywhere, all year, from week 0
DRIFT_FIELDS = ("habit_weeks", "launch_boost", "seasonal_share")
"""`WorldConfig`'s drift options; a dataset that predates them was generated without drift."""


@dataclass(frozen=True)
class WorldConfig:
    """Scale and seed of a synthetic world.

    Attributes:
        members: number of loyalty members.
        stores: number of shops.
        weeks: weeks of history.
        seed: the only source of randomness.
        drinks: size of the catalogue over the whole history (including later launches).
        clusters: number of member taste clusters.
        habit_weeks: mean weeks a favourite lasts: each of a member's three favourite slots
            moves on to another drink of the member's taste after an exponentially
            distributed time of this mean (26: about twice a year; 0: favourites never
            change, version 1's world).
        launch_boost: how much likelier a drink launched in the last six weeks is to become
            the new favourite when a slot moves on (4: five times as likely as an older drink
            of the same taste), so new drinks become habits for the members they suit.
        seasonal_share: share of the catalogue sold in one season only, every year (0.1; 0:
            every drink all year). The catalogue's `season_id` says which season.
    """

    members: int
    stores: int
    weeks: int
    seed: int
    drinks: int = 96
    clusters: int = 12
    habit_weeks: float = 26.0
    launch_boost: float = 4.0
    seasonal_share: float = 0.1

    def __post_init__(self) -> None:
        for name in ("members", "stores", "weeks", "drinks", "clusters"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("habit_weeks", "launch_boost"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0 (0: off), got {getattr(self, name)}")
        if not 0 <= self.seasonal_share < 1:
            raise ValueError(
                f"seasonal_share must be in [0, 1) (0: off), got {self.seasonal_share}"
            )
        if self.stores < len(REGIONS):
            raise ValueError(
                f"stores must be >= {len(REGIONS)} (one per region), got {self.stores}"
            )
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")

    @property
    def drifts(self) -> bool:
        """Whether any drift option is on."""
        return any(getattr(self, name) for name in DRIFT_FIELDS)

    def to_json(self) -> dict[str, float | int]:
        """The config as `generation.json` records it."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> WorldConfig:
        """The config `generation.json` recorded; without drift options, a drift-free world
        (the dataset was generated before they existed, and appending must continue it)."""
        return cls(**{**{name: 0 for name in DRIFT_FIELDS}, **payload})


@dataclass(frozen=True)
class World:
    """Arrays describing the world; index i of a drink/store/member array is its id."""

    config: WorldConfig
    drink_category: np.ndarray  # int8
    drink_cold: np.ndarray  # bool
    drink_region: np.ndarray  # int8, -1 = sold nationwide
    drink_launch_week: np.ndarray  # int16
    drink_price: np.ndarray  # float32, base price in NT$
    drink_popularity: np.ndarray  # float32, base utility
    drink_taste: np.ndarray  # float32 (drinks, TASTE_DIM)
    store_region: np.ndarray  # int8
    store_traffic: np.ndarray  # float32, relative footfall
    member_home: np.ndarray  # int32, home store id
    member_taste: np.ndarray  # float32 (members, TASTE_DIM)
    member_rate: np.ndarray  # float32, mean visits per week
    member_weekend: np.ndarray  # bool, weekend-heavy visitor
    member_daypart: np.ndarray  # int8, preferred daypart 0..3
    member_habit: np.ndarray  # float32, probability of ordering a favourite
    member_favourites: np.ndarray  # int32 (members, 3): the favourites at week 0
    drink_season: np.ndarray  # int8, the only season a drink is sold in; -1 = all year
    member_candidates: np.ndarray  # int32 (members, CANDIDATES): drinks a new habit comes from


def rng_for(seed: int, *keys: int) -> np.random.Generator:
    """Independent generator for one purpose (and e.g. one week) of one seed."""
    return np.random.default_rng([seed, *keys])


def build_world(config: WorldConfig) -> World:
    """Draw the catalogue, stores and members for `config`.

    Args:
        config: scale and seed.

    Returns:
        The world; the same config always gives identical arrays.
    """
    d_rng, s_rng, m_rng = (rng_for(config.seed, purpose) for purpose in (1, 2, 3))
    n_drinks = config.drinks
    category = d_rng.integers(0, len(CATEGORIES), n_drinks).astype(np.int8)
    cold = d_rng.random(n_drinks) < np.asarray(_COLD_SHARE)[category]
    regional = d_rng.random(n_drinks) < REGIONAL_SHARE
    region = np.where(regional, d_rng.integers(0, len(REGIONS), n_drinks), -1).astype(np.int8)
    launched_later = d_rng.random(n_drinks) < NEW_DRINK_SHARE
    launch = np.where(launched_later, d_rng.integers(1, max(config.weeks, 2), n_drinks), 0)
    launch_week = launch.astype(np.int16)
    # Keep at least a few nationwide drinks on the menu from day one so every store sells.
    launch_week[:ALWAYS_ON_MENU], region[:ALWAYS_ON_MENU] = 0, -1
    price = (35 + 5 * d_rng.integers(0, 12, n_drinks)).astype(np.float32)
    popularity = d_rng.normal(0.0, 0.7, n_drinks).astype(np.float32)
    centroids_d = d_rng.normal(0.0, 1.0, (len(CATEGORIES), TASTE_DIM))
    taste_d = centroids_d[category] + 0.6 * d_rng.normal(0.0, 1.0, (n_drinks, TASTE_DIM))

    store_region = np.arange(config.stores) % len(REGIONS)
    s_rng.shuffle(store_region)
    traffic = s_rng.lognormal(0.0, 0.5, config.stores).astype(np.float32)

    n = config.members
    home = m_rng.choice(config.stores, size=n, p=traffic / traffic.sum()).astype(np.int32)
    centroids_m = m_rng.normal(0.0, 1.0, (config.clusters, TASTE_DIM))
    cluster = m_rng.integers(0, config.clusters, n)
    taste_m = centroids_m[cluster] + 0.5 * m_rng.normal(0.0, 1.0, (n, TASTE_DIM))
    rate = (0.7 * m_rng.lognormal(0.0, 0.8, n)).astype(np.float32)
    weekend = m_rng.random(n) < 0.3
    daypart = m_rng.integers(0, 4, n).astype(np.int8)
    habit = m_rng.beta(4.0, 3.0, n).astype(np.float32)
    favourites = _pick_favourites(
        m_rng, taste_m, taste_d, popularity, region, launch_week, store_region[home]
    )
    season = drift.seasonal_drinks(config.seed, n_drinks, config.seasonal_share, ALWAYS_ON_MENU)
    candidates = (
        drift.habit_candidates(
            config.seed, taste_m, taste_d, popularity, region, store_region[home], season, TASTE_DIM
        )
        if config.habit_weeks > 0
        else np.zeros((n, 0), dtype=np.int32)
    )
    return World(
        config=config,
        drink_category=category,
        drink_cold=cold,
        drink_region=region,
        drink_launch_week=launch_week,
        drink_price=price,
        drink_popularity=popularity,
        drink_taste=taste_d.astype(np.float32),
        store_region=store_region.astype(np.int8),
        store_traffic=traffic,
        member_home=home,
        member_taste=taste_m.astype(np.float32),
        member_rate=rate,
        member_weekend=weekend,
        member_daypart=daypart,
        member_habit=habit,
        member_favourites=favourites,
        drink_season=season,
        member_candidates=candidates,
    )


def _pick_favourites(
    rng: np.random.Generator,
    taste_m: np.ndarray,
    taste_d: np.ndarray,
    popularity: np.ndarray,
    drink_region: np.ndarray,
    launch_week: np.ndarray,
    member_region: np.ndarray,
) -> np.ndarray:
    """Three favourites per member among drinks on their home menu at week 0 (Gumbel top-3)."""
    favourites = np.empty((taste_m.shape[0], 3), dtype=np.int32)
    for start in range(0, taste_m.shape[0], 65536):
        stop = min(start + 65536, taste_m.shape[0])
        utility = taste_m[start:stop] @ taste_d.T / np.sqrt(TASTE_DIM) * 2.0 + popularity
        on_menu = (launch_week == 0) & (
            (drink_region[None, :] == -1)
            | (drink_region[None, :] == member_region[start:stop, None])
        )
        utility = np.where(on_menu, utility + rng.gumbel(size=utility.shape), -np.inf)
        favourites[start:stop] = np.argsort(-utility, axis=1)[:, :3]
    return favourites


def weekly_temperature(world: World, week: int) -> np.ndarray:
    """Daily mean temperature per region for one week, shape (regions, 7), in °C.

    Args:
        world: the world (its seed makes the weather noise).
        week: week index from START_DATE.
    """
    day = 7 * week + np.arange(7)
    day_of_year = (START_DATE.timetuple().tm_yday - 1 + day) % 365
    # Warmest around late July (day ~205), coolest in late January.
    seasonal = 7.5 * np.sin(2 * np.pi * (day_of_year - 114) / 365)
    noise = rng_for(world.config.seed, 4, week).normal(0.0, 1.5, (len(REGIONS), 7))
    return (_REGION_BASE_TEMP[:, None] + seasonal[None, :] + noise).astype(np.float32)


def season_of_month(month: np.ndarray) -> np.ndarray:
    """Season index: 0 winter (Dec-Feb), 1 spring, 2 summer, 3 autumn.

    Args:
        month: months 1..12.
    """
    return ((np.asarray(month) % 12) // 3).astype(np.int8)


def region_price_factor(region: np.ndarray) -> np.ndarray:
    """Price multiplier of a region (city shops charge a little more)."""
    return _REGION_PRICE_FACTOR[region]

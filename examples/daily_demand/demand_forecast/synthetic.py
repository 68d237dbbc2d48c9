"""The synthetic shops behind the sample data: who sells what, and how much on a given day.

Each store sells every item every day (a row per store, item and day, zero units included).
Units are Poisson around a rate made of the item's base demand, the store's size, the store's
taste for the item, the item family's weekly shape (bakery peaks at the weekend, produce on
Saturday, beverages on hot Fridays...), the price against the item's list price, a promotion
lift, and a slow trend. A day depends only on the seed and its date, so generating 35 days at
once or 28 days and appending 7 gives the same rows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np

FAMILIES = ("produce", "dairy", "bakery", "beverages")

# Units on each weekday (Monday first) relative to the family's average day.
WEEKLY_SHAPE = {
    "produce": (0.9, 0.85, 0.9, 0.95, 1.1, 1.3, 1.0),
    "dairy": (1.05, 1.0, 1.0, 1.0, 1.05, 1.0, 0.9),
    "bakery": (0.8, 0.8, 0.85, 0.9, 1.1, 1.4, 1.35),
    "beverages": (0.85, 0.85, 0.9, 1.0, 1.25, 1.2, 0.95),
}
PRICE_ELASTICITY = 1.2
PROMO_LIFT = 1.3
TREND_PER_DAY = 0.002


@dataclass(frozen=True)
class WorldConfig:
    """The sample's size and randomness.

    Attributes:
        stores: Number of stores (``S01``...).
        items: Number of items (``I01``...), spread over :data:`FAMILIES` in turn.
        seed: Seeds every random draw.
        start: The first day of the sales (the trend counts from it).
    """

    stores: int = 10
    items: int = 24
    seed: int = 7
    start: dt.date = dt.date(2025, 1, 6)

    def __post_init__(self) -> None:
        for name in ("stores", "items"):
            value = getattr(self, name)
            if not 1 <= value <= 999:
                raise ValueError(f"--{name} must be between 1 and 999, got {value}")


@dataclass(frozen=True)
class World:
    """The fixed part of the sample: names, families, prices and demand rates."""

    config: WorldConfig
    stores: tuple[str, ...]
    items: tuple[str, ...]
    families: tuple[str, ...]
    base_price: np.ndarray  # (items,)
    promo_rate: np.ndarray  # (items,)
    rate: np.ndarray  # (stores, items): units on an average day at list price


def build_world(config: WorldConfig) -> World:
    """The stores and items that ``config`` describes (the same for the same config)."""
    rng = np.random.default_rng([config.seed, 0])
    width = max(2, len(str(max(config.stores, config.items))))
    stores = tuple(f"S{n:0{width}d}" for n in range(1, config.stores + 1))
    items = tuple(f"I{n:0{width}d}" for n in range(1, config.items + 1))
    families = tuple(FAMILIES[n % len(FAMILIES)] for n in range(config.items))
    base_price = np.round(rng.uniform(1.0, 8.0, config.items), 2)
    promo_rate = rng.uniform(0.05, 0.2, config.items)
    item_base = rng.uniform(2.0, 12.0, config.items)
    store_scale = rng.uniform(0.6, 1.6, config.stores)
    taste = rng.lognormal(0.0, 0.3, (config.stores, config.items))
    rate = store_scale[:, None] * item_base[None, :] * taste
    return World(config, stores, items, families, base_price, promo_rate, rate)


def items_columns(world: World) -> dict[str, Any]:
    """The items dimension: ``item``, ``family`` and ``base_price`` (the list price)."""
    return {
        "item": list(world.items),
        "family": list(world.families),
        "base_price": world.base_price.astype(np.float64),
    }


def day_columns(world: World, day: dt.date) -> dict[str, Any]:
    """One day's sales, every store and item: ``day``, ``store``, ``item``, ``units``,
    ``price`` and ``on_promo``, store by store.

    The draws are seeded by the config's seed and the date alone.
    """
    config = world.config
    rng = np.random.default_rng([config.seed, 1, day.toordinal()])
    shape = (config.stores, config.items)
    on_promo = rng.random(shape) < world.promo_rate[None, :]
    discount = np.where(on_promo, rng.uniform(0.15, 0.35, shape), 0.0)
    noise = 1.0 + rng.normal(0.0, 0.02, shape)
    price = np.round(world.base_price[None, :] * (1.0 - discount) * noise, 2)
    weekday = np.array([WEEKLY_SHAPE[f][day.weekday()] for f in world.families])
    trend = 1.0 + TREND_PER_DAY * (day - config.start).days
    expected = (
        world.rate
        * weekday[None, :]
        * (price / world.base_price[None, :]) ** -PRICE_ELASTICITY
        * np.where(on_promo, PROMO_LIFT, 1.0)
        * trend
    )
    units = rng.poisson(np.maximum(expected, 0.0))
    return {
        "day": [day] * units.size,
        "store": [s for s in world.stores for _ in world.items],
        "item": list(world.items) * config.stores,
        "units": units.reshape(-1).astype(np.int32),
        "price": price.reshape(-1).astype(np.float64),
        "on_promo": on_promo.reshape(-1),
    }

"""The model's inputs: calendar, price and promotion features, and lags from the training days.

A row (store, item, day, price, on promotion) becomes :data:`FEATURES`:

- ``weekday`` (0 = Monday) and the item's ``family``, both categorical;
- ``on_promo`` and ``price_ratio`` (the day's price over the item's list price);
- ``store_item_mean`` and ``store_item_weekday_mean``: the pair's average units over the
  training days, overall and on that weekday;
- ``lag_7``: the pair's units one week earlier. Where that day is a training day it is read
  from the training rows; where it lies after the training days (the selection and gate
  days, or a forecast served later) it is the pair's units on the same weekday of the last
  training week, the newest the model knows; before that, unknown (NaN, which the regressor
  handles).

Everything a forecast needs is in :class:`Profile`, saved with the model, so serving reads no
data.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from demand_forecast.dataset import Item, Sales

FEATURES = (
    "weekday",
    "family",
    "on_promo",
    "price_ratio",
    "store_item_mean",
    "store_item_weekday_mean",
    "lag_7",
)
CATEGORICAL = (True, True, False, False, False, False, False)
"""Which of :data:`FEATURES` the regressor treats as categories."""

History = Mapping[tuple[str, str, dt.date], float]
"""Known units by (store, item, day)."""


@dataclass(frozen=True)
class PairStats:
    """What the training days say about one store and item.

    Attributes:
        mean: Average units per day.
        weekday_mean: Average units on each weekday (Monday first; NaN: no such day).
        last_week: Units on each weekday of the last training week (NaN: no row).
    """

    mean: float
    weekday_mean: tuple[float, ...]
    last_week: tuple[float, ...]


@dataclass(frozen=True)
class Profile:
    """The lookup tables the features need, learned from the training days.

    Attributes:
        items: Item -> family and list price (the items dimension).
        families: Family names; a family's code is its index.
        pairs: Store -> item -> :class:`PairStats`.
        last_day: The last training day.
    """

    items: dict[str, Item]
    families: tuple[str, ...]
    pairs: dict[str, dict[str, PairStats]]
    last_day: dt.date

    def to_json(self) -> dict[str, Any]:
        """The profile as JSON (NaN written as null)."""

        def numbers(values: tuple[float, ...]) -> list[float | None]:
            return [None if math.isnan(v) else v for v in values]

        return {
            "items": {k: [v.family, v.base_price] for k, v in sorted(self.items.items())},
            "families": list(self.families),
            "pairs": {
                store: {
                    item: {
                        "mean": stats.mean,
                        "weekday_mean": numbers(stats.weekday_mean),
                        "last_week": numbers(stats.last_week),
                    }
                    for item, stats in sorted(by_item.items())
                }
                for store, by_item in sorted(self.pairs.items())
            },
            "last_day": self.last_day.isoformat(),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Profile:
        """The profile :meth:`to_json` wrote."""

        def numbers(values: list[float | None]) -> tuple[float, ...]:
            return tuple(math.nan if v is None else float(v) for v in values)

        return cls(
            items={k: Item(str(v[0]), float(v[1])) for k, v in value["items"].items()},
            families=tuple(value["families"]),
            pairs={
                store: {
                    item: PairStats(
                        float(s["mean"]), numbers(s["weekday_mean"]), numbers(s["last_week"])
                    )
                    for item, s in by_item.items()
                }
                for store, by_item in value["pairs"].items()
            },
            last_day=dt.date.fromisoformat(value["last_day"]),
        )


def as_dates(days: np.ndarray) -> list[dt.date]:
    """``datetime64[D]`` values as dates."""
    return [dt.date.fromisoformat(str(d)) for d in days.astype("datetime64[D]")]


def history_of(sales: Sales) -> dict[tuple[str, str, dt.date], float]:
    """Units by (store, item, day) of the given rows."""
    return {
        (str(s), str(i), d): float(u)
        for s, i, d, u in zip(
            sales.store, sales.item, as_dates(sales.day), sales.units, strict=True
        )
    }


def build_profile(train: Sales, items: Mapping[str, Item]) -> Profile:
    """Learns the lookup tables from the training rows.

    Raises:
        ValueError: No training rows, or a row names an item missing from the dimension.
    """
    if len(train) == 0:
        raise ValueError("no training rows")
    unknown = sorted(set(train.item.tolist()) - set(items))
    if unknown:
        raise ValueError(f"items {unknown[:5]} are sold but missing from the items dimension")
    days = as_dates(train.day)
    last_day = max(days)
    totals: dict[tuple[str, str], list[float]] = {}
    by_weekday: dict[tuple[str, str], list[list[float]]] = {}
    last_week: dict[tuple[str, str], list[float]] = {}
    for store, item, day, units in zip(train.store, train.item, days, train.units, strict=True):
        key = (str(store), str(item))
        total = totals.setdefault(key, [0.0, 0.0])
        total[0] += units
        total[1] += 1
        weekday = by_weekday.setdefault(key, [[0.0, 0.0] for _ in range(7)])[day.weekday()]
        weekday[0] += units
        weekday[1] += 1
        if (last_day - day).days < 7:
            last_week.setdefault(key, [math.nan] * 7)[day.weekday()] = float(units)
    pairs: dict[str, dict[str, PairStats]] = {}
    for (store, item), (units, count) in totals.items():
        pairs.setdefault(store, {})[item] = PairStats(
            mean=units / count,
            weekday_mean=tuple(u / n if n else math.nan for u, n in by_weekday[(store, item)]),
            last_week=tuple(last_week.get((store, item), [math.nan] * 7)),
        )
    families = tuple(sorted({item.family for item in items.values()}))
    return Profile(dict(items), families, pairs, last_day)


def lag_7(
    profile: Profile, history: History, store: str, item: str, day: dt.date, stats: PairStats | None
) -> float:
    """The pair's units a week before ``day`` (see the module docstring)."""
    back = day - dt.timedelta(days=7)
    known = history.get((store, item, back))
    if known is not None:
        return known
    if stats is not None and (profile.last_day - back).days < 7:
        return stats.last_week[day.weekday()]
    return math.nan


def feature_matrix(
    profile: Profile,
    store: list[str],
    item: list[str],
    day: list[dt.date],
    price: list[float],
    on_promo: list[bool],
    history: History,
) -> np.ndarray:
    """The :data:`FEATURES` of each row, as a float matrix (rows x features).

    Raises:
        KeyError: An item missing from the profile's items.
    """
    rows = np.full((len(store), len(FEATURES)), np.nan)
    codes = {family: code for code, family in enumerate(profile.families)}
    for n, (s, i, d, p, promo) in enumerate(zip(store, item, day, price, on_promo, strict=True)):
        known = profile.items[i]
        stats = profile.pairs.get(s, {}).get(i)
        rows[n, 0] = d.weekday()
        rows[n, 1] = codes[known.family]
        rows[n, 2] = 1.0 if promo else 0.0
        rows[n, 3] = p / known.base_price if known.base_price > 0 else math.nan
        if stats is not None:
            rows[n, 4] = stats.mean
            rows[n, 5] = stats.weekday_mean[d.weekday()]
        rows[n, 6] = lag_7(profile, history, s, i, d, stats)
    return rows


def sales_features(profile: Profile, sales: Sales, history: History) -> np.ndarray:
    """:func:`feature_matrix` of a table's rows."""
    return feature_matrix(
        profile,
        sales.store.tolist(),
        sales.item.tolist(),
        as_dates(sales.day),
        sales.price.tolist(),
        sales.on_promo.tolist(),
        history,
    )

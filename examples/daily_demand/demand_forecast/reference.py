"""The reference a candidate must beat, and the metrics everything is scored with.

The seasonal naive forecast says each store sells of each item what it sold on the same
weekday one week earlier. It needs no training, so a model that cannot beat it has learned
nothing worth deploying (``reference: seasonal_naive`` in evaluation.yaml). A pair with no
row a week earlier sold nothing that day, as far as the data knows: the forecast is 0.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np

from demand_forecast.dataset import Sales
from demand_forecast.features import History, as_dates

SEASON_DAYS = 7


def seasonal_naive(sales: Sales, history: History) -> np.ndarray:
    """Units a week before each row of ``sales``, from ``history`` (0 where it has none)."""
    week = dt.timedelta(days=SEASON_DAYS)
    return np.array(
        [
            history.get((str(s), str(i), d - week), 0.0)
            for s, i, d in zip(sales.store, sales.item, as_dates(sales.day), strict=True)
        ],
        dtype=np.float64,
    )


def error_metrics(actual: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """``rmse`` and ``mae`` of ``predicted`` against ``actual`` (units per store, item, day).

    Raises:
        ValueError: No rows, or arrays of different lengths.
    """
    if actual.shape != predicted.shape or actual.size == 0:
        raise ValueError(
            f"cannot score {predicted.size} predictions against {actual.size} actual values"
        )
    error = predicted - actual
    return {
        "rmse": math.sqrt(float(np.mean(error**2))),
        "mae": float(np.mean(np.abs(error))),
    }

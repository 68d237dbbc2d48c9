"""Paired bootstrap intervals of a metric's difference, resampling entities.

The candidate and the champion (or a reference) are scored on the same rows, so their
difference is paired: each resample draws entities with replacement and recomputes every
difference on the same draw. The statistic is the weighted mean of the per-entity
differences (the metric over rows, when the weight is an entity's rows), the interval the
percentile one. Pure and deterministic: numpy's ``default_rng(seed)`` draws the resamples,
and the entities arrive sorted (:mod:`vertex_retrain.contracts.evaluation_scores`), so the
same files give the same interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Interval", "paired_differences"]


@dataclass(frozen=True)
class Interval:
    """A difference ``candidate - other`` of the primary metric and its bootstrap interval.

    Attributes:
        other: What the candidate is compared with (``champion``, ``reference:<name>``).
        point: The difference on every entity.
        low: The interval's lower end.
        high: The interval's upper end.
        level: Its coverage.
        resamples: How many resamples made it.
        entities: How many entities were resampled.
    """

    other: str
    point: float
    low: float
    high: float
    level: float
    resamples: int
    entities: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form, for the summary and the history."""
        return {
            "other": self.other,
            "point": self.point,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "resamples": self.resamples,
            "entities": self.entities,
        }

    def describe(self) -> str:
        """``+0.0123 (95% interval +0.0040 to +0.0210, 1,000 resamples of 5,000 entities)``."""
        return (
            f"{self.point:+.4f} ({self.level:.0%} interval {self.low:+.4f} to {self.high:+.4f}, "
            f"{self.resamples:,} resamples of {self.entities:,} entities)"
        )


def paired_differences(
    weight: np.ndarray,
    candidate: np.ndarray,
    others: Mapping[str, np.ndarray],
    *,
    level: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Interval]:
    """Bootstrap intervals of ``candidate - other`` for each of ``others``, on shared draws.

    Args:
        weight: (n,) positive weight per entity.
        candidate: (n,) the candidate's metric per entity.
        others: Name -> (n,) another model's or a reference's metric per entity.
        level: Coverage of the two-sided percentile interval, in (0, 1).
        resamples: Number of resamples.
        seed: Seeds the resampling.

    Returns:
        Name -> its interval.

    Raises:
        ValueError: Fewer than two entities, arrays of different lengths, or a bad level or
            resample count.
    """
    import numpy as np

    n = int(np.asarray(weight).shape[0])
    if n < 2:
        raise ValueError(f"a bootstrap needs at least 2 entities, got {n}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    names = list(others)
    arrays = [
        np.asarray(candidate, np.float64),
        *(np.asarray(others[k], np.float64) for k in names),
    ]
    if any(array.shape != (n,) for array in arrays):
        raise ValueError("weight, candidate and every other array need one value per entity")
    columns = [arrays[0] - other for other in arrays[1:]]
    w = np.asarray(weight, dtype=np.float64)
    # Weighted sums of each difference and of the weights: a resample is counts @ values.
    values = np.column_stack([w * column for column in columns] + [w])
    point = values.sum(axis=0)
    stats = np.empty((resamples, len(names)))
    rng = np.random.default_rng(seed)
    for r in range(resamples):
        counts = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(np.float64)
        sums = counts @ values
        stats[r] = sums[:-1] / sums[-1]
    tail = (1 - level) / 2
    low, high = np.quantile(stats, [tail, 1 - tail], axis=0)
    return {
        name: Interval(
            other=name,
            point=float(point[i] / point[-1]),
            low=float(low[i]),
            high=float(high[i]),
            level=level,
            resamples=resamples,
            entities=n,
        )
        for i, name in enumerate(names)
    }

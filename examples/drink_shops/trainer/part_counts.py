"""Counts over a part's encoded rows, a chunk at a time (`trainer.encoded.EncodedPart.chunks`
lets each chunk's mapped pages go once counted): the baselines' popularity, the members' counts
and their decayed history, equal to the `trainer.features` functions on decoded rows."""

from __future__ import annotations

import numpy as np

from trainer.encoded import EncodedPart


def store_popularity(
    part: EncodedPart, n_stores: int, n_drinks: int, last_weeks: int
) -> np.ndarray:
    """`trainer.features.store_popularity` over encoded rows, a chunk at a time.

    Returns:
        float64 (stores, drinks): purchases in the last `last_weeks` weeks of `part`.
    """
    week, store, drink = (part.columns[name] for name in ("week", "store", "drink"))
    newest = max(int(week[chunk].max()) for chunk in part.chunks())
    counts = np.zeros(n_stores * n_drinks, dtype=np.int64)
    for chunk in part.chunks():
        recent = week[chunk] > newest - last_weeks
        flat = store[chunk][recent].astype(np.int64) * n_drinks + drink[chunk][recent]
        counts += np.bincount(flat, minlength=counts.size)
    return counts.reshape(n_stores, n_drinks).astype(np.float64)


def member_counts(part: EncodedPart, n_members: int, n_drinks: int) -> np.ndarray:
    """`trainer.features.member_counts` over encoded rows, exact: int32 (n_members + 1, drinks)."""
    member, drink = part.columns["member"], part.columns["drink"]
    counts = np.zeros((n_members + 1) * n_drinks, dtype=np.int32)
    for chunk in part.chunks():
        flat = member[chunk].astype(np.int64) * n_drinks + drink[chunk]
        np.add(counts, np.bincount(flat, minlength=counts.size), out=counts, casting="unsafe")
    return counts.reshape(n_members + 1, n_drinks)


def member_decayed(
    part: EncodedPart, n_members: int, n_drinks: int, as_of_day: int, half_life_days: float
) -> np.ndarray:
    """Purchases per (member index, drink), each weighing 2 ** (-(as_of_day - its day) /
    half_life_days): float32 (n_members + 1, drinks)."""
    member, drink, day = part.columns["member"], part.columns["drink"], part.columns["day"]
    decayed = np.zeros((n_members + 1) * n_drinks, dtype=np.float64)
    for chunk in part.chunks():
        flat = member[chunk].astype(np.int64) * n_drinks + drink[chunk]
        weight = np.exp2(-(as_of_day - day[chunk].astype(np.float64)) / half_life_days)
        decayed += np.bincount(flat, weights=weight, minlength=decayed.size)
    return decayed.reshape(n_members + 1, n_drinks).astype(np.float32)


def last_day(part: EncodedPart) -> int:
    """The newest day (days since 1970-01-01) of a part's rows."""
    return max(int(part.columns["day"][chunk].max()) for chunk in part.chunks())

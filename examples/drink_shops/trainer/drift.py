"""How the world drifts: favourites that change, new drinks that become habits, seasonal menus.

Each week of transactions is drawn on its own (`trainer.sampling`, one process per week at
scale), so the world's state at week w must be computable without simulating the weeks
before it. The drift is therefore drawn from counter-based hashes of (seed, purpose, member,
slot, epoch, ...) instead of the generators: a member's favourite slot keeps a drink for an
epoch of exponentially distributed length (`WorldConfig.habit_weeks`, whole weeks, at least
one), then moves on to another drink of the member's taste (`habit_candidates`), a drink
launched in the last `RECENT_LAUNCH_WEEKS` weeks being `launch_boost` + 1 times as likely as
an older one. Finding the epoch that holds week w walks a member's epochs from week 0, a few
vectorised steps. Seasonal drinks (`seasonal_drinks`) are sold in their season only, every
year. The generators' streams are untouched, so a drift-free config samples version 1's rows.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class _Config(Protocol):
    @property
    def seed(self) -> int: ...

    @property
    def habit_weeks(self) -> float: ...

    @property
    def launch_boost(self) -> float: ...


class HabitWorld(Protocol):
    """What the habit drift reads of a world (`trainer.world.World`)."""

    @property
    def config(self) -> _Config: ...

    @property
    def member_favourites(self) -> np.ndarray: ...

    @property
    def member_candidates(self) -> np.ndarray: ...

    @property
    def drink_launch_week(self) -> np.ndarray: ...


CANDIDATES = 6  # drinks per member a new habit is drawn from (the member's taste, home menu)
RECENT_LAUNCH_WEEKS = 6  # a launch this recent gets `launch_boost` when a habit moves on
SEASONS = 4  # season ids as `trainer.world.season_of_month` numbers them
_SEASONAL, _CANDIDATE, _EPOCH, _CHOICE = 1, 2, 3, 4  # hash purposes
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over uint64 arrays (wrapping arithmetic)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return np.asarray(z ^ (z >> np.uint64(31)))


def hashed(*keys: int | np.ndarray) -> np.ndarray:
    """A 64-bit hash of the keys, elementwise over broadcast arrays; the order of keys matters."""
    arrays = np.broadcast_arrays(*(np.asarray(key, dtype=np.int64) for key in keys))
    with np.errstate(over="ignore"):
        h = np.zeros(arrays[0].shape, dtype=np.uint64)
        for key in arrays:
            h = _splitmix(h ^ key.astype(np.uint64))
    return h


def uniform(*keys: int | np.ndarray) -> np.ndarray:
    """float64 in (0, 1) from the keys' hash: 53 bits, never 0 or 1."""
    return ((hashed(*keys) >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def gumbel(*keys: int | np.ndarray) -> np.ndarray:
    """A standard Gumbel variate from the keys' hash."""
    return np.asarray(-np.log(-np.log(uniform(*keys))))


def seasonal_drinks(seed: int, n_drinks: int, share: float, always: int) -> np.ndarray:
    """The season each drink is sold in: int8, -1 for all year (drinks below `always` too)."""
    drink = np.arange(n_drinks)
    seasonal = (uniform(seed, _SEASONAL, drink) < share) & (drink >= always)
    season = (hashed(seed, _SEASONAL, drink, 1) % np.uint64(SEASONS)).astype(np.int8)
    return np.where(seasonal, season, -1).astype(np.int8)


def habit_candidates(
    seed: int,
    taste_m: np.ndarray,
    taste_d: np.ndarray,
    popularity: np.ndarray,
    drink_region: np.ndarray,
    member_region: np.ndarray,
    drink_season: np.ndarray,
    taste_dim: int,
) -> np.ndarray:
    """Each member's `CANDIDATES` drinks a new habit comes from: int32 (members, CANDIDATES).

    The top drinks by taste and popularity plus hashed Gumbel noise, among the drinks of the
    member's home menu sold all year (launched at any time: a later launch becomes a habit
    only after it is launched).
    """
    n_members, n_drinks = taste_m.shape[0], taste_d.shape[0]
    out = np.empty((n_members, min(CANDIDATES, n_drinks)), dtype=np.int32)
    drink = np.arange(n_drinks)
    for start in range(0, n_members, 65536):
        stop = min(start + 65536, n_members)
        member = np.arange(start, stop)
        utility = taste_m[start:stop] @ taste_d.T / np.sqrt(taste_dim) * 2.0 + popularity
        on_menu = (
            (drink_region[None, :] == -1)
            | (drink_region[None, :] == member_region[start:stop, None])
        ) & (drink_season[None, :] == -1)
        noisy = utility + gumbel(seed, _CANDIDATE, member[:, None], drink[None, :])
        noisy = np.where(on_menu, noisy, -np.inf)
        out[start:stop] = np.argsort(-noisy, axis=1, kind="stable")[:, : out.shape[1]]
    return out


def _epoch_weeks(
    seed: int, member: np.ndarray, slot: np.ndarray, epoch: np.ndarray, mean: float
) -> np.ndarray:
    """Length in weeks of a slot's epoch: exponential of mean `mean`, rounded up, >= 1."""
    draw = uniform(seed, _EPOCH, member, slot, epoch)
    return np.maximum(1, np.ceil(-mean * np.log(draw))).astype(np.int64)


def favourites_at(world: HabitWorld, member: np.ndarray, slot: np.ndarray, week: int) -> np.ndarray:
    """The drink in each member's favourite `slot` at `week`: int64, one per (member, slot).

    Without habit drift, the favourites drawn at week 0. Otherwise epoch 0 of a slot keeps
    that drink; each later epoch's drink is drawn from the member's candidates launched by the
    epoch's first week (recent launches `launch_boost` + 1 times as likely).
    """
    config = world.config
    favourite = world.member_favourites[member, slot].astype(np.int64)
    if config.habit_weeks <= 0 or member.size == 0:
        return favourite
    member = member.astype(np.int64)
    slot = slot.astype(np.int64)
    start = np.zeros(member.size, dtype=np.int64)
    epoch = np.zeros(member.size, dtype=np.int64)
    length = _epoch_weeks(config.seed, member, slot, epoch, config.habit_weeks)
    moving = np.flatnonzero(start + length <= week)
    while moving.size:
        start[moving] += length[moving]
        epoch[moving] += 1
        length[moving] = _epoch_weeks(
            config.seed, member[moving], slot[moving], epoch[moving], config.habit_weeks
        )
        moving = moving[start[moving] + length[moving] <= week]
    renewed = np.flatnonzero(epoch > 0)
    if renewed.size:
        favourite[renewed] = _new_habit(world, member[renewed], slot[renewed], epoch[renewed],
                                        start[renewed], favourite[renewed])  # fmt: skip
    return favourite


def _new_habit(
    world: HabitWorld,
    member: np.ndarray,
    slot: np.ndarray,
    epoch: np.ndarray,
    start: np.ndarray,
    fallback: np.ndarray,
) -> np.ndarray:
    """The drink an epoch starting at week `start` settles on (`fallback` if none launched)."""
    candidates = world.member_candidates[member].astype(np.int64)
    launch = world.drink_launch_week[candidates].astype(np.int64)
    age = start[:, None] - launch
    launched = age >= 0
    recent = launched & (age < RECENT_LAUNCH_WEEKS)
    weight = np.log1p(world.config.launch_boost * recent)
    column = np.arange(candidates.shape[1])[None, :]
    key = weight + gumbel(
        world.config.seed, _CHOICE, member[:, None], slot[:, None], epoch[:, None], column
    )
    key = np.where(launched, key, -np.inf)
    pick = np.argmax(key, axis=1)
    chosen = candidates[np.arange(member.size), pick]
    return np.where(launched.any(axis=1), chosen, fallback)

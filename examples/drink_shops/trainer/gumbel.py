"""Gumbel-max choice that draws the numbers `Generator.gumbel` would, at a fraction of the cost.

`trainer.data` picks each exploring visit's drink as `argmax(scores + rng.gumbel(...))`. A
Gumbel variate costs two logarithms, and at full scale that is about 3.8 billion of them;
the float64 scores cost several passes over every (visit, drink) cell too. `gumbel_argmax`
returns the very same choices and leaves the generator in the same state:

- numpy's Gumbel variate is `0 - log(-log(1 - U))` with `U = next_double()` (a draw of exactly
  0 is rejected and redrawn), so `rng.random` yields the same `U` in the same order;
- a cell's key is `score - log(E)` with `E = -log(1 - U)`, and `E` is close to `U`, so the
  smallest `U / exp(score)` almost always marks the winner; its exact key `L` bounds the rest:
  since `E >= U`, a cell can only reach `L` if `U <= exp(score - L)`. That test runs in
  float32 on approximate scores, with a margin that covers their error, so it costs one
  float32 `exp` per cell instead of two float64 `log`; exact scores and keys are computed only
  for the cells that pass (about 1.2 a row);
- `np.log` may differ from the C library's `log` in the last bit, so rows whose two best keys
  are that close are recomputed with `math.log`, the function numpy's generator calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

_SLACK = 1e-3  # relative margin on the float32 candidate test: far above its rounding error
_NEAR_TIE = 1e-9  # keys closer than this (relative) are recomputed with the C library's log

ExactScores = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""`(rows, columns) -> float64 exact scores of those cells` (-inf where not allowed)."""


def gumbel_argmax(
    rng: np.random.Generator,
    approx: np.ndarray,
    exact: ExactScores | None = None,
    error: float = 0.0,
) -> np.ndarray:
    """`argmax(scores + rng.gumbel(size=scores.shape), axis=1)`, bit for bit.

    Args:
        rng: the generator; advanced exactly as `rng.gumbel(size=approx.shape)` would.
        approx: (rows, choices) scores within `error` of the exact ones; -inf marks a choice
            that is not allowed (in both).
        exact: the exact float64 scores of given cells; by default `approx` itself, which
            must then be the exact scores.
        error: bound on |approx - exact| over the allowed cells.

    Returns:
        int64 (rows,): the winning column of each row (0 where no choice is allowed).
    """
    if exact is None:
        scores = approx

        def exact(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
            return np.asarray(scores[rows, columns], dtype=np.float64)

    if approx.dtype != np.float32:  # the float32 copy below rounds: widen the bound to match
        finite = np.abs(approx[np.isfinite(approx)])
        error += 1e-6 * (1.0 + float(finite.max(initial=0.0)))

    state = rng.bit_generator.state
    uniform = rng.random(approx.shape)
    n = approx.shape[0]
    rows = np.arange(n)
    if not uniform.all():  # a draw of 0: numpy's sampler redraws it, so take its own path
        rng.bit_generator.state = state
        every = exact(np.repeat(rows, approx.shape[1]), np.tile(np.arange(approx.shape[1]), n))
        full = every.reshape(approx.shape)
        return (full + rng.gumbel(size=approx.shape)).argmax(axis=1)
    scores32 = approx.astype(np.float32, copy=False)
    top = scores32.max(axis=1)
    # Rows with nothing allowed compute NaNs below and fall through to column 0, as argmax does.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        weight = scores32 - top[:, None]
        # Below about -87 the weight underflows to 0 and the cell is never a contender: its
        # key is at most its score + 36.7 (the largest Gumbel variate a double draw gives),
        # while the row's best cell scores at least top - 3.6.
        np.exp(weight, out=weight)
        ratio = np.divide(uniform.astype(np.float32), weight, out=weight)
        guess = ratio.argmin(axis=1)
        lower = exact(rows, guess) + _gumbel(uniform[rows, guess])
        limit = (np.exp(top + error - lower) * (1.0 + _SLACK)).astype(np.float32)
        rival = ratio <= limit[:, None]
    rival[rows, guess] = False
    hard = np.flatnonzero(rival.any(axis=1))
    if hard.size:
        guess[hard] = _resolve(exact, hard, rival[hard], guess[hard], uniform[hard])
    return guess


def _resolve(
    exact: ExactScores,
    rows: np.ndarray,
    rival: np.ndarray,
    guess: np.ndarray,
    uniform: np.ndarray,
) -> np.ndarray:
    """Exact keys of each row's contenders (the guess and its rivals); the first best wins."""
    rival[np.arange(rows.size), guess] = True
    local, columns = np.nonzero(rival)
    keys = np.full(rival.shape, -np.inf)
    keys[local, columns] = exact(rows[local], columns) + _gumbel(uniform[local, columns])
    winner = keys.argmax(axis=1)
    positions = np.arange(rows.size)
    best = keys[positions, winner]
    keys[positions, winner] = -np.inf
    with np.errstate(invalid="ignore"):
        near = np.flatnonzero(best - keys.max(axis=1) <= _NEAR_TIE * (1.0 + np.abs(best)))
    width = rival.shape[1]
    for position in near:
        scores = exact(np.full(width, rows[position]), np.arange(width))
        winner[position] = _exact_row(scores, uniform[position])
    return winner


def _gumbel(uniform: np.ndarray) -> np.ndarray:
    """Gumbel variates from `next_double` draws, as numpy computes them (up to `log`'s last bit)."""
    return -np.log(-np.log(1.0 - uniform))


def _exact_row(scores: np.ndarray, uniform: np.ndarray) -> int:
    """One row's winner with the C library's `log`, bit for bit numpy's `random_gumbel`."""
    best, best_key = 0, -math.inf
    for column in np.flatnonzero(np.isfinite(scores)):
        key = scores[column] + (0.0 - math.log(-math.log(1.0 - uniform[column])))
        if key > best_key:
            best, best_key = int(column), key
    return best

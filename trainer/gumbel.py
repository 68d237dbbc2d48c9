"""Gumbel-max choice that draws the numbers `Generator.gumbel` would, at a fraction of the cost.

`trainer.data` picks each exploring visit's drink as `argmax(scores + rng.gumbel(...))`. A
Gumbel variate costs two logarithms, and at full scale that is about 3.8 billion of them.
`gumbel_argmax` returns the very same choices and leaves the generator in the same state:

- numpy's Gumbel variate is `0 - log(-log(1 - U))` with `U = next_double()` (a draw of exactly
  0 is rejected and redrawn), so `rng.random` yields the same `U` in the same order;
- a cell's key is `score - log(E)` with `E = -log(1 - U)`, and `E` is close to `U`, so the
  smallest `U / exp(score)` almost always marks the winner; its exact key `L` bounds the rest:
  since `E >= U`, a cell can only reach `L` if `U <= exp(score - L)`. That costs one `exp` per
  cell instead of two `log`; rows where another cell passes the test are scored in full;
- `np.log` may differ from the C library's `log` in the last bit, so rows whose two best keys
  are that close are recomputed with `math.log`, the function numpy's generator calls.
"""

from __future__ import annotations

import math

import numpy as np

_SLACK = 1e-6  # relative margin on the candidate bound: far above any rounding error
_NEAR_TIE = 1e-9  # keys closer than this (relative) are recomputed with the C library's log
_EXP_FLOOR = -700.0  # exp() stays on numpy's fast path above about -708


def gumbel_argmax(rng: np.random.Generator, scores: np.ndarray) -> np.ndarray:
    """`argmax(scores + rng.gumbel(size=scores.shape), axis=1)`, bit for bit.

    Args:
        rng: the generator; advanced exactly as `rng.gumbel(size=scores.shape)` would.
        scores: float64 (rows, choices); -inf marks a choice that is not allowed.

    Returns:
        int64 (rows,): the winning column of each row (0 where no choice is allowed).
    """
    state = rng.bit_generator.state
    uniform = rng.random(scores.shape)
    if not uniform.all():  # a draw of 0: numpy's sampler redraws it, so take its own path
        rng.bit_generator.state = state
        return (scores + rng.gumbel(size=scores.shape)).argmax(axis=1)
    rows = np.arange(scores.shape[0])
    top = scores.max(axis=1)
    # Rows with nothing allowed compute NaNs below and fall through to column 0, as argmax does.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        weight = scores - top[:, None]
        # exp of -inf or below -708 takes numpy's slow path; a floor only makes the test
        # below let more cells through, never fewer.
        np.maximum(weight, _EXP_FLOOR, out=weight)
        np.exp(weight, out=weight)
        ratio = np.divide(uniform, weight, out=weight)
        guess = ratio.argmin(axis=1)
        lower = scores[rows, guess] + _gumbel(uniform[rows, guess])
        rival = ratio <= np.exp(top - lower)[:, None] * (1.0 + _SLACK)
    rival[rows, guess] = False
    hard = np.flatnonzero(rival.any(axis=1))
    if hard.size:
        guess[hard] = _resolve(scores[hard], uniform[hard])
    return guess


def _resolve(scores: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """Full keys for rows with several contenders; near ties are redone with `math.log`."""
    keys = scores + _gumbel(uniform)
    winner = keys.argmax(axis=1)
    rows = np.arange(keys.shape[0])
    best = keys[rows, winner]
    keys[rows, winner] = -np.inf
    with np.errstate(invalid="ignore"):
        near = np.flatnonzero(best - keys.max(axis=1) <= _NEAR_TIE * (1.0 + np.abs(best)))
    for row in near:
        winner[row] = _exact_row(scores[row], uniform[row])
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

"""The per-entity scores file: what the paired bootstrap resamples.

An evaluation entry point may write, beside its metrics file, a Parquet file that breaks the
primary metric down by entity (a customer, a store, a series: whatever the rows' natural
independent unit is) and name it in the metrics file (``"scores": {"file": ...,
"metric": ...}``, :mod:`.evaluation`). One row per entity:

============================ ===============================================================
column                       what it holds
============================ ===============================================================
``entity``                   the entity's id (integers or strings, unique, no null)
``weight``                   optional: the entity's share of the metric, e.g. its rows
                             (positive; 1 for every entity when absent)
``candidate``                the candidate's metric over the entity's rows
``champion``                 the champion's, exactly when a champion was scored
``reference:<name>``         a reference's, for any reference of the metrics file
============================ ===============================================================

The weighted mean of a role's column must equal that role's value of the metric in the
metrics file (a mean over rows is the row-weighted mean of the entities' means), which is
checked: a file that disagrees is refused, so the interval is about the number the decision
uses. A metric that is not such a mean (an RMSE) has no scores file. The library resamples
entities, not rows, because rows of one entity are not independent. Pure: numpy is imported
inside the functions that need it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from vertex_retrain.contracts.guide import EVALUATION_CONTRACT, see
from vertex_retrain.contracts.shown import shown

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CANDIDATE",
    "CHAMPION",
    "ENTITY",
    "REFERENCE_PREFIX",
    "WEIGHT",
    "EntityScores",
    "ScoresContractError",
    "check_scores",
]

ENTITY, WEIGHT, CANDIDATE, CHAMPION = "entity", "weight", "candidate", "champion"
REFERENCE_PREFIX = "reference:"
TOLERANCE = 1e-6
"""How far a column's weighted mean may be from the metrics file's value (absolute, plus the
same relative to the value): float rounding, not a different metric."""


class ScoresContractError(ValueError):
    """The scores file breaks the contract; the message names the column and what it needs."""


@dataclass(frozen=True)
class EntityScores:
    """A validated scores file, sorted by entity.

    Attributes:
        entity: The entities' ids, sorted.
        weight: float64, positive.
        roles: float64 column per role: ``candidate``, ``champion``, ``reference:<name>``.
    """

    entity: np.ndarray
    weight: np.ndarray
    roles: dict[str, np.ndarray]

    def mean(self, role: str) -> float:
        """The weighted mean of a role's column (its metric over every row)."""
        import numpy as np

        return float(np.sum(self.weight * self.roles[role]) / np.sum(self.weight))


def _fail(source: str, column: str, value: Any, expected: str) -> NoReturn:
    raise ScoresContractError(
        f"{source}: column {column} is {shown(value)}; expected {expected} "
        f"(evaluation contract: {see(EVALUATION_CONTRACT)})"
    )


def check_scores(
    columns: Mapping[str, Any],
    *,
    expect_champion: bool,
    metric_values: Mapping[str, float],
    source: str,
) -> EntityScores:
    """Validates a decoded scores file and checks it against the metrics file.

    Args:
        columns: Column name -> its values (a sequence or a numpy array).
        expect_champion: Whether a champion was scored (the ``champion`` column must then be
            there, else absent).
        metric_values: The metrics file's value of the scored metric per role
            (``candidate``, ``champion``, ``reference:<name>``); each role of the file that
            is named here must average to it.
        source: Where the file was read, for messages.

    Returns:
        The scores, sorted by entity.

    Raises:
        ScoresContractError: A column is missing, of the wrong type, null or not finite;
            entities repeat; a weight is not positive; a column disagrees with the metrics
            file; or ``champion`` disagrees with ``expect_champion``.
    """
    import numpy as np

    if ENTITY not in columns:
        _fail(source, ENTITY, None, "a column of entity ids (column missing)")
    entity = np.asarray(columns[ENTITY])
    if entity.ndim != 1 or entity.size < 2:
        _fail(source, ENTITY, f"{entity.size} row(s)", "at least 2 entities to resample")
    if entity.dtype == object or entity.dtype.kind not in "iuUS":
        _fail(source, ENTITY, str(entity.dtype), "integers or strings, with no null")
    order = np.argsort(entity, kind="stable")
    entity = entity[order]
    repeated = entity[1:][entity[1:] == entity[:-1]]
    if repeated.size:
        _fail(source, ENTITY, repeated[0].item(), "each entity once")
    weight = (
        _numbers(columns[WEIGHT], WEIGHT, source, entity.size)[order]
        if WEIGHT in columns
        else np.ones(entity.size)
    )
    if (weight <= 0).any():
        _fail(source, WEIGHT, float(weight[weight <= 0][0]), "positive weights")
    if CANDIDATE not in columns:
        _fail(source, CANDIDATE, None, "the candidate's metric per entity (column missing)")
    if expect_champion and CHAMPION not in columns:
        _fail(source, CHAMPION, None, "the champion's metric per entity: a champion was scored")
    if not expect_champion and CHAMPION in columns:
        _fail(source, CHAMPION, "present", "no champion column: no champion was scored")
    roles: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        if name in (CANDIDATE, CHAMPION) or str(name).startswith(REFERENCE_PREFIX):
            roles[str(name)] = _numbers(values, str(name), source, entity.size)[order]
        elif name not in (ENTITY, WEIGHT):
            known = f"{ENTITY}, {WEIGHT}, {CANDIDATE}, {CHAMPION} or {REFERENCE_PREFIX}<name>"
            _fail(source, str(name), "an unknown column", known)
    scores = EntityScores(entity=entity, weight=weight, roles=roles)
    for role, expected in metric_values.items():
        if role not in roles:
            continue
        found = scores.mean(role)
        if abs(found - expected) > TOLERANCE * (1 + abs(expected)):
            _fail(source, role, f"weighted mean {found:.6g}",
                  f"{expected:.6g}, the metrics file's value of the scored metric")  # fmt: skip
    return scores


def _numbers(values: Any, column: str, source: str, size: int) -> np.ndarray:
    import numpy as np

    array = np.asarray(values)
    if array.shape != (size,):
        _fail(source, column, f"{array.size} value(s)", f"{size}, one per entity")
    if array.dtype == bool or array.dtype.kind not in "iuf":
        _fail(source, column, str(array.dtype), "numbers with no null")
    array = array.astype(np.float64)
    bad = ~np.isfinite(array)
    if bad.any():
        value = float(array[bad][0])
        _fail(source, column, value if not math.isnan(value) else "a null or NaN",
              "finite numbers")  # fmt: skip
    return np.asarray(array)

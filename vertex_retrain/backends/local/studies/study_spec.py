"""A Vertex `StudySpec` read for Optuna: parameters (with conditions), metric, algorithm.

Parameter specs follow the REST shape: `{"parameterId", "doubleValueSpec" | "integerValueSpec"
| "categoricalValueSpec" | "discreteValueSpec", "scaleType", "conditionalParameterSpecs":
[{"parameterSpec": {...}, "parentDiscreteValues" | "parentIntValues" |
"parentCategoricalValues": {"values": [...]}}]}`. A conditional parameter is suggested only
when its parent took one of the listed values, as on Vertex.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

GRID_LIMIT = 100_000
_KINDS = ("doubleValueSpec", "integerValueSpec", "categoricalValueSpec", "discreteValueSpec")
_PARENT_KEYS = ("parentDiscreteValues", "parentIntValues", "parentCategoricalValues")


class StudySpecError(ValueError):
    """A study spec the local tuner cannot run."""


@dataclass(frozen=True)
class ParamSpec:
    """One parameter and the parameters that depend on its value."""

    name: str
    kind: str
    low: float | int | None = None
    high: float | int | None = None
    values: tuple[Any, ...] = ()
    scale: str = "UNIT_LINEAR_SCALE"
    children: tuple[tuple[tuple[Any, ...], ParamSpec], ...] = field(default_factory=tuple)

    def grid_values(self) -> list[Any]:
        """Every value a grid search visits (discrete, categorical and integer only)."""
        if self.kind == "doubleValueSpec":
            raise StudySpecError(
                f"GRID_SEARCH cannot enumerate DOUBLE parameter {self.name!r}; use a "
                "discreteValueSpec with the values to try, or another algorithm"
            )
        if self.kind == "integerValueSpec":
            assert self.low is not None and self.high is not None
            return list(range(int(self.low), int(self.high) + 1))
        return list(self.values)


def _number(raw: Any, where: str) -> float:
    try:
        return float(raw)
    except (TypeError, ValueError):
        raise StudySpecError(f"{where}: expected a number, got {raw!r}") from None


def parse_param(raw: dict[str, Any], where: str = "studySpec.parameters") -> ParamSpec:
    """Parse one REST ParameterSpec (recursively with its conditional children)."""
    name = raw.get("parameterId")
    kinds = [k for k in _KINDS if k in raw]
    if not name or len(kinds) != 1:
        raise StudySpecError(
            f"{where}: each parameter needs a parameterId and exactly one of {list(_KINDS)}; "
            f"got {sorted(raw)}"
        )
    kind, body = kinds[0], raw[kinds[0]]
    where = f"{where}[{name}]"
    spec: dict[str, Any] = {"name": name, "kind": kind, "scale": raw.get("scaleType") or ""}
    if kind in {"doubleValueSpec", "integerValueSpec"}:
        low = _number(body.get("minValue"), f"{where}.minValue")
        high = _number(body.get("maxValue"), f"{where}.maxValue")
        if low > high:
            raise StudySpecError(f"{where}: minValue {low} is above maxValue {high}")
        if "LOG" in spec["scale"] and low <= 0:
            raise StudySpecError(f"{where}: {spec['scale']} needs minValue > 0, got {low}")
        cast = int if kind == "integerValueSpec" else float
        spec.update(low=cast(low), high=cast(high))
    else:
        values = tuple(body.get("values") or ())
        if not values:
            raise StudySpecError(f"{where}: {kind}.values is empty")
        if kind == "discreteValueSpec":
            values = tuple(_number(v, f"{where}.values") for v in values)
        spec["values"] = values
    children = []
    for number, child in enumerate(raw.get("conditionalParameterSpecs") or []):
        parents = [k for k in _PARENT_KEYS if k in child]
        if len(parents) != 1 or "parameterSpec" not in child:
            raise StudySpecError(
                f"{where}.conditionalParameterSpecs[{number}] needs parameterSpec and one of "
                f"{list(_PARENT_KEYS)}"
            )
        wanted = tuple((child[parents[0]] or {}).get("values") or ())
        if kind in {"discreteValueSpec", "integerValueSpec"}:
            wanted = tuple(_number(v, f"{where} parent values") for v in wanted)
        children.append((wanted, parse_param(child["parameterSpec"], f"{where}.conditional")))
    return ParamSpec(children=tuple(children), **spec)


def _matches(value: Any, wanted: tuple[Any, ...]) -> bool:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return any(math.isclose(float(value), float(w)) for w in wanted)
    return value in wanted


def suggest(trial: optuna.trial.BaseTrial, specs: list[ParamSpec]) -> dict[str, Any]:
    """Ask Optuna for a value of every active parameter (parents before their children)."""
    chosen: dict[str, Any] = {}
    for spec in specs:
        value = _suggest_one(trial, spec)
        chosen[spec.name] = value
        active = [child for wanted, child in spec.children if _matches(value, wanted)]
        chosen.update(suggest(trial, active))
    return chosen


def _suggest_one(trial: optuna.trial.BaseTrial, spec: ParamSpec) -> Any:
    log = spec.scale in {"UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"}
    if spec.kind == "doubleValueSpec":
        assert spec.low is not None and spec.high is not None
        value = trial.suggest_float(spec.name, spec.low, spec.high, log=log)
        if spec.scale == "UNIT_REVERSE_LOG_SCALE":
            # Reverse log packs samples near the top: mirror a log-scale draw.
            value = spec.low + spec.high - value
        return value
    if spec.kind == "integerValueSpec":
        assert spec.low is not None and spec.high is not None
        return trial.suggest_int(spec.name, int(spec.low), int(spec.high), log=log)
    return trial.suggest_categorical(spec.name, list(spec.values))


def grid_size(specs: list[ParamSpec]) -> int:
    """Number of distinct configurations a grid search visits, conditions included."""
    total = 1
    for spec in specs:
        total *= sum(
            grid_size([child for wanted, child in spec.children if _matches(value, wanted)])
            for value in spec.grid_values()
        )
        if total > GRID_LIMIT:
            raise StudySpecError(f"the grid has more than {GRID_LIMIT} points; narrow it")
    return total


def _flat(specs: list[ParamSpec]) -> list[ParamSpec]:
    return [s for spec in specs for s in [spec, *_flat([c for _, c in spec.children])]]


def has_conditions(specs: list[ParamSpec]) -> bool:
    """True when any parameter has conditional children."""
    return any(spec.children for spec in specs)


def make_sampler(algorithm: str, specs: list[ParamSpec], seed: int) -> optuna.samplers.BaseSampler:
    """Map a Vertex algorithm onto an Optuna sampler.

    ALGORITHM_UNSPECIFIED (Vertex's Bayesian optimisation) → GPSampler when torch and scipy
    are importable and no parameter is conditional, else multivariate grouped TPE;
    GRID_SEARCH → GridSampler (BruteForceSampler when parameters are conditional, since a
    grid is a fixed product); RANDOM_SEARCH → RandomSampler.
    """
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if algorithm == "RANDOM_SEARCH":
            return optuna.samplers.RandomSampler(seed=seed)
        if algorithm == "GRID_SEARCH":
            if has_conditions(specs):
                for spec in _flat(specs):
                    spec.grid_values()  # refuses DOUBLE parameters with a clear message
                return optuna.samplers.BruteForceSampler(seed=seed)
            grid = {spec.name: spec.grid_values() for spec in specs}
            return optuna.samplers.GridSampler(grid, seed=seed)
        if algorithm not in {"", "ALGORITHM_UNSPECIFIED"}:
            raise StudySpecError(
                f"studySpec.algorithm {algorithm!r} is not one of ALGORITHM_UNSPECIFIED, "
                "GRID_SEARCH, RANDOM_SEARCH"
            )
        gp_usable = all(importlib.util.find_spec(m) for m in ("torch", "scipy"))
        if gp_usable and not has_conditions(specs):
            return optuna.samplers.GPSampler(seed=seed)
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True)

"""Rules for tuning parameters: value specs, scales, grid search and conditional children."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.payload_io import as_float, as_int, mapping
from vertex_retrain.specs.problems import Problem, error

SCALES = ("SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")
_VALUE_SPECS = (
    "doubleValueSpec",
    "integerValueSpec",
    "categoricalValueSpec",
    "discreteValueSpec",
)
# Which parent value list a conditional child must use, per parent value-spec kind.
_PARENT_KEYS = {
    "discreteValueSpec": "parentDiscreteValues",
    "integerValueSpec": "parentIntValues",
    "categoricalValueSpec": "parentCategoricalValues",
}


def _grid_values(low: float, high: float, log: bool) -> list[float]:
    mid = math.sqrt(low * high) if log and low > 0 else (low + high) / 2
    return [float(f"{v:.4g}") for v in (low, mid, high)]


class ParameterChecker:
    """Checks parameter specs recursively (conditional children included).

    ``parameter(spec, path)`` appends to ``problems``; ids are checked for uniqueness across
    the whole study.
    """

    def __init__(self, algorithm: Any) -> None:
        self.algorithm = algorithm
        self.problems: list[Problem] = []
        self.seen_ids: set[str] = set()

    def parameter(self, param: Any, path: str) -> None:
        """Checks one parameter spec at ``path``."""
        if not isinstance(param, Mapping):
            self.problems.append(error(path, param, "A parameter must be an object.", code="type"))
            return
        pid = param.get("parameterId")
        if not isinstance(pid, str) or not pid:
            self.problems.append(
                error(
                    f"{path}.parameterId",
                    pid,
                    "Every parameter needs an id (the flag name).",
                    ["learning_rate"],
                    code="param-id",
                )
            )
        elif pid in self.seen_ids:
            self.problems.append(
                error(
                    f"{path}.parameterId",
                    pid,
                    "Parameter ids must be unique in the study.",
                    [f"{pid}_2"],
                    code="param-id",
                )
            )
        else:
            self.seen_ids.add(pid)
        kinds = [k for k in _VALUE_SPECS if k in param]
        if len(kinds) != 1:
            self.problems.append(
                error(
                    path,
                    kinds,
                    "A parameter has exactly one value spec.",
                    list(_VALUE_SPECS),
                    code="param-kind",
                )
            )
            return
        kind = kinds[0]
        spec = mapping(param[kind])
        scale = param.get("scaleType")
        if scale is not None and scale not in SCALES:
            self.problems.append(
                error(
                    f"{path}.scaleType",
                    scale,
                    "Unknown scale type.",
                    list(SCALES[1:]),
                    code="param-scale",
                )
            )
        if kind == "doubleValueSpec":
            self._range(spec, f"{path}.{kind}", scale, as_float, strict=True)
            if self.algorithm == "GRID_SEARCH":
                low = as_float(spec.get("minValue", 0))
                high = as_float(spec.get("maxValue", 0))
                grid = (
                    _grid_values(low, high, scale == "UNIT_LOG_SCALE")
                    if low is not None and high is not None
                    else [0.001, 0.01, 0.1]
                )
                self.problems.append(
                    error(
                        f"{path}.{kind}",
                        dict(spec),
                        "GRID_SEARCH cannot enumerate a continuous double range.",
                        [
                            f"discreteValueSpec {{values: {grid}}}",
                            "algorithm RANDOM_SEARCH",
                            "Bayesian optimisation (leave algorithm unset)",
                        ],
                        code="grid-double",
                    )
                )
        elif kind == "integerValueSpec":
            self._range(spec, f"{path}.{kind}", scale, as_int, strict=False)
        else:
            self._values(spec, f"{path}.{kind}", kind)
            if kind == "categoricalValueSpec" and scale not in (None, "SCALE_TYPE_UNSPECIFIED"):
                self.problems.append(
                    error(
                        f"{path}.scaleType",
                        scale,
                        "Categorical parameters take no scale.",
                        ["remove scaleType"],
                        code="param-scale",
                    )
                )
        self._children(param, path, kind, spec)

    def _range(
        self, spec: Mapping[str, Any], path: str, scale: Any, read: Any, strict: bool
    ) -> None:
        # proto3 JSON omits zeros, so a missing bound is 0.
        low, high = read(spec.get("minValue", 0)), read(spec.get("maxValue", 0))
        if low is None or high is None:
            self.problems.append(
                error(
                    path,
                    dict(spec),
                    "A range needs numeric minValue and maxValue.",
                    ["{minValue: 0.0001, maxValue: 0.1}"],
                    code="param-range",
                )
            )
            return
        if low > high or (strict and low == high):
            self.problems.append(
                error(
                    f"{path}.minValue",
                    spec.get("minValue"),
                    f"minValue must be below maxValue ({spec.get('maxValue')}).",
                    [f"minValue {high}, maxValue {low}"]
                    if low > high
                    else ["a discreteValueSpec with the single value, or a wider range"],
                    code="param-range",
                )
            )
        if scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and low <= 0:
            self.problems.append(
                error(
                    f"{path}.minValue",
                    spec.get("minValue"),
                    "A log-scaled range must be strictly positive.",
                    ["minValue 1e-05", "scaleType UNIT_LINEAR_SCALE"],
                    code="param-scale",
                )
            )

    def _values(self, spec: Mapping[str, Any], path: str, kind: str) -> None:
        values = spec.get("values")
        if not isinstance(values, list) or not values:
            self.problems.append(
                error(
                    f"{path}.values",
                    values,
                    "List at least one value.",
                    ['["adam", "sgd"]' if kind == "categoricalValueSpec" else "[16, 32, 64]"],
                    code="param-values",
                )
            )
            return
        if kind == "discreteValueSpec":
            maybe = [as_float(v) for v in values]
            numbers = [n for n in maybe if n is not None]
            if len(numbers) != len(maybe):
                self.problems.append(
                    error(
                        f"{path}.values",
                        values,
                        "Discrete values must be numbers.",
                        ["[16, 32, 64]"],
                        code="param-values",
                    )
                )
            elif any(b <= a for a, b in itertools.pairwise(numbers)):
                fixed = sorted(set(numbers))
                self.problems.append(
                    error(
                        f"{path}.values",
                        values,
                        "Discrete values must be distinct and in increasing order.",
                        [str(fixed)],
                        code="param-values",
                    )
                )
        elif len(set(map(str, values))) != len(values):
            self.problems.append(
                error(
                    f"{path}.values",
                    values,
                    "Categorical values must be distinct.",
                    [str(list(dict.fromkeys(map(str, values))))],
                    code="param-values",
                )
            )

    def _children(
        self, param: Mapping[str, Any], path: str, kind: str, spec: Mapping[str, Any]
    ) -> None:
        children = param.get("conditionalParameterSpecs")
        if not children:
            return
        parent_key = _PARENT_KEYS.get(kind)
        for index, child in enumerate(children if isinstance(children, list) else []):
            child_path = f"{path}.conditionalParameterSpecs[{index}]"
            child = mapping(child)
            used = [k for k in _PARENT_KEYS.values() if k in child]
            if parent_key is None:
                self.problems.append(
                    error(
                        child_path,
                        used,
                        "A double parameter cannot have conditional "
                        "children: there is no value to match.",
                        ["make the parent a discreteValueSpec or integerValueSpec"],
                        code="conditional-parent",
                    )
                )
            elif used != [parent_key]:
                self.problems.append(
                    error(
                        child_path,
                        used,
                        f"A child of a {kind} parent must be conditioned with {parent_key}.",
                        [parent_key],
                        code="conditional-parent",
                    )
                )
            else:
                self._parent_values(child, f"{child_path}.{parent_key}.values", kind, spec)
            self.parameter(child.get("parameterSpec"), f"{child_path}.parameterSpec")

    def _parent_values(
        self, child: Mapping[str, Any], path: str, kind: str, spec: Mapping[str, Any]
    ) -> None:
        wanted = mapping(child.get(_PARENT_KEYS[kind])).get("values")
        if not isinstance(wanted, list) or not wanted:
            self.problems.append(
                error(
                    path,
                    wanted,
                    "List the parent values that activate this child.",
                    code="conditional-values",
                )
            )
            return
        if kind == "integerValueSpec":
            low, high = as_int(spec.get("minValue", 0)), as_int(spec.get("maxValue", 0))
            missing = [
                v
                for v in wanted
                if (n := as_int(v)) is None or low is None or high is None or not low <= n <= high
            ]
            domain = [f"an integer in [{low}, {high}]"]
        elif kind == "discreteValueSpec":
            allowed = {as_float(v) for v in spec.get("values") or []}
            missing = [v for v in wanted if as_float(v) not in allowed]
            domain = [str(v) for v in spec.get("values") or []]
        else:
            allowed_s = {str(v) for v in spec.get("values") or []}
            missing = [v for v in wanted if str(v) not in allowed_s]
            domain = [str(v) for v in spec.get("values") or []]
        if missing:
            self.problems.append(
                error(
                    path,
                    missing,
                    "These parent values do not exist in the parent "
                    "parameter, so the child would never be tried.",
                    domain,
                    code="conditional-values",
                )
            )

"""Tuning parameter rules at their edges: the grid a GRID_SEARCH refusal suggests, and the
parent values that may activate a conditional child (bounds inclusive, omitted bounds 0)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_specs_cases import BATCH, LAYERS, MOMENTUM, OPT, study, with_child
from vertex_retrain.specs.problems import Problem
from vertex_retrain.specs.tuning_rules import check_study

T0 = "studySpec.parameters[0]"
CHILD = f"{T0}.conditionalParameterSpecs[0]"


def _parameter_problems(*params: dict[str, Any], algorithm: str | None = None) -> list[Problem]:
    return [p for p in check_study(study(list(params), algorithm)) if p.field.startswith(T0)]


def _grid_suggestion(double_spec: dict[str, Any], scale: str | None = None) -> str:
    param: dict[str, Any] = {"parameterId": "x", "doubleValueSpec": double_spec}
    if scale:
        param["scaleType"] = scale
    (refusal,) = [p for p in _parameter_problems(param, algorithm="GRID_SEARCH")
                  if p.code == "grid-double"]  # fmt: skip
    return refusal.alternatives[0]


def test_grid_suggestion_splits_a_linear_range_at_its_midpoint() -> None:
    suggestion = _grid_suggestion({"minValue": 1, "maxValue": 3})
    assert suggestion == "discreteValueSpec {values: [1.0, 2.0, 3.0]}"


def test_grid_suggestion_splits_a_log_range_at_its_geometric_mean() -> None:
    suggestion = _grid_suggestion({"minValue": 1e-4, "maxValue": 1e-2}, "UNIT_LOG_SCALE")
    assert suggestion == "discreteValueSpec {values: [0.0001, 0.001, 0.01]}"


def test_grid_suggestion_of_a_log_range_from_zero_falls_back_to_the_midpoint() -> None:
    # The geometric mean of 0 and anything is 0, a useless grid point.
    suggestion = _grid_suggestion({"minValue": 0, "maxValue": 1}, "UNIT_LOG_SCALE")
    assert suggestion == "discreteValueSpec {values: [0.0, 0.5, 1.0]}"


@pytest.mark.parametrize(
    ("double_spec", "grid"),
    [({"maxValue": 1}, "[0.0, 0.5, 1.0]"), ({"minValue": -1}, "[-1.0, -0.5, 0.0]")],
)
def test_grid_suggestion_reads_an_omitted_bound_as_zero(
    double_spec: dict[str, Any], grid: str
) -> None:
    # proto3 JSON leaves a zero out.
    assert _grid_suggestion(double_spec) == f"discreteValueSpec {{values: {grid}}}"


def test_grid_suggestion_without_numeric_bounds_is_a_log_grid() -> None:
    suggestion = _grid_suggestion({"minValue": "low", "maxValue": 1})
    assert suggestion == "discreteValueSpec {values: [0.001, 0.01, 0.1]}"


def _child_of(parent: dict[str, Any], key: str, values: Any) -> list[Problem]:
    return _parameter_problems(with_child(parent, key, values, MOMENTUM))


@pytest.mark.parametrize("values", [[], None])
def test_conditional_child_without_parent_values_is_refused(values: Any) -> None:
    (problem,) = _child_of(LAYERS, "parentIntValues", values)
    assert problem == Problem(
        "error",
        f"{CHILD}.parentIntValues.values",
        values,
        "List the parent values that activate this child.",
        (),
        "conditional-values",
    )


@pytest.mark.parametrize(("value", "valid"), [("0", False), ("1", True), ("4", True), ("5", False)])
def test_conditional_integer_parent_bounds_are_inclusive(value: str, valid: bool) -> None:
    problems = _child_of(LAYERS, "parentIntValues", ["2", value])  # LAYERS is [1, 4]
    if valid:
        assert problems == []
    else:
        (problem,) = problems
        assert (problem.field, problem.value) == (f"{CHILD}.parentIntValues.values", [value])
        assert problem.alternatives == ("an integer in [1, 4]",)


@pytest.mark.parametrize(("value", "valid"), [(0, True), (-1, False)])
def test_conditional_integer_parent_without_min_value_starts_at_zero(
    value: int, valid: bool
) -> None:
    # proto3 JSON leaves a zero out: {maxValue: 4} is the range [0, 4].
    parent = {"parameterId": "depth", "integerValueSpec": {"maxValue": "4"}}
    problems = _child_of(parent, "parentIntValues", [value])
    assert [p.alternatives for p in problems] == ([] if valid else [("an integer in [0, 4]",)])


@pytest.mark.parametrize(("value", "valid"), [(0, True), (1, False)])
def test_conditional_integer_parent_without_max_value_ends_at_zero(value: int, valid: bool) -> None:
    parent = {"parameterId": "shift", "integerValueSpec": {"minValue": "-3"}}
    problems = _child_of(parent, "parentIntValues", [value])
    assert [p.alternatives for p in problems] == ([] if valid else [("an integer in [-3, 0]",)])


def test_conditional_child_value_that_is_no_integer_is_refused() -> None:
    (problem,) = _child_of(LAYERS, "parentIntValues", ["2", "two"])
    assert (problem.field, problem.value) == (f"{CHILD}.parentIntValues.values", ["two"])


def test_conditional_child_of_an_integer_parent_with_a_malformed_bound_is_refused() -> None:
    parent = {"parameterId": "depth", "integerValueSpec": {"minValue": "one", "maxValue": "4"}}
    problems = _child_of(parent, "parentIntValues", ["2"])
    assert {p.code for p in problems} == {"param-range", "conditional-values"}
    (child,) = [p for p in problems if p.code == "conditional-values"]
    assert child.value == ["2"]


@pytest.mark.parametrize("value", [64, 64.0, "64"])
def test_conditional_discrete_parent_matches_values_as_numbers(value: Any) -> None:
    assert _child_of(BATCH, "parentDiscreteValues", [value]) == []  # BATCH is [32, 64, 128]


def test_conditional_discrete_parent_value_not_listed_names_the_listed_ones() -> None:
    (problem,) = _child_of(BATCH, "parentDiscreteValues", [32, 48])
    assert (problem.field, problem.value) == (f"{CHILD}.parentDiscreteValues.values", [48])
    assert problem.message == (
        "These parent values do not exist in the parent parameter, so the child would never "
        "be tried."
    )
    assert problem.alternatives == ("32", "64", "128")
    assert problem.code == "conditional-values"


def test_conditional_categorical_parent_matches_values_as_text() -> None:
    assert _child_of(OPT, "parentCategoricalValues", ["sgd"]) == []
    (problem,) = _child_of(OPT, "parentCategoricalValues", ["SGD"])
    assert problem.value == ["SGD"] and problem.alternatives == ("adam", "sgd")

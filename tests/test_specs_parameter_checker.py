"""Each refusal of one tuning parameter, word for word: its id, its one value spec, its scale,
its range (both sides of each bound), its value list, and how its conditional children are
attached."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_specs_cases import LAYERS, LR, MOMENTUM, OPT, study, with_child
from vertex_retrain.specs.problems import Problem, error
from vertex_retrain.specs.tuning_rules import check_study

P = "studySpec.parameters"
T0 = f"{P}[0]"
CHILD = f"{T0}.conditionalParameterSpecs[0]"
SPECS = ["doubleValueSpec", "integerValueSpec", "categoricalValueSpec", "discreteValueSpec"]


def _problems(*params: Any, algorithm: str | None = None) -> list[Problem]:
    return [p for p in check_study(study(list(params), algorithm)) if p.field.startswith(P)]


def _double(low: Any = 0.1, high: Any = 0.9, scale: str | None = None) -> dict[str, Any]:
    param: dict[str, Any] = {
        "parameterId": "x",
        "doubleValueSpec": {"minValue": low, "maxValue": high},
    }
    if scale:
        param["scaleType"] = scale
    return param


def _integer(low: Any = 1, high: Any = 4, scale: str | None = None) -> dict[str, Any]:
    param: dict[str, Any] = {
        "parameterId": "n",
        "integerValueSpec": {"minValue": low, "maxValue": high},
    }
    if scale:
        param["scaleType"] = scale
    return param


@pytest.mark.parametrize("param", ["lr", ["lr"], None])
def test_parameter_that_is_no_object_is_refused(param: Any) -> None:
    assert _problems(param) == [error(T0, param, "A parameter must be an object.", code="type")]


@pytest.mark.parametrize("pid", [None, "", 7])
def test_parameter_without_a_text_id_is_refused(pid: Any) -> None:
    param = {"doubleValueSpec": {"minValue": 0.1, "maxValue": 0.9}}
    if pid is not None:
        param["parameterId"] = pid
    assert _problems(param) == [
        error(
            f"{T0}.parameterId",
            pid,
            "Every parameter needs an id (the flag name).",
            ["learning_rate"],
            code="param-id",
        )
    ]


def test_parameter_id_used_twice_is_refused_at_the_second() -> None:
    assert _problems(LR, OPT, LR) == [
        error(
            f"{P}[2].parameterId",
            "lr",
            "Parameter ids must be unique in the study.",
            ["lr_2"],
            code="param-id",
        )
    ]


def test_parameter_ids_are_unique_across_conditional_children() -> None:
    child = {"parameterId": "optimizer", "doubleValueSpec": {"minValue": 0.1, "maxValue": 0.9}}
    problems = _problems(with_child(OPT, "parentCategoricalValues", ["sgd"], child))
    assert [(p.field, p.code) for p in problems] == [
        (f"{CHILD}.parameterSpec.parameterId", "param-id")
    ]


@pytest.mark.parametrize("kinds", [[], ["doubleValueSpec", "discreteValueSpec"]])
def test_parameter_needs_exactly_one_value_spec(kinds: list[str]) -> None:
    param: dict[str, Any] = {"parameterId": "x", "scaleType": "NOT_A_SCALE"}
    values = {
        "doubleValueSpec": {"minValue": 0.1, "maxValue": 0.9},
        "discreteValueSpec": {"values": [1]},
    }
    param.update({kind: values[kind] for kind in kinds})
    # Nothing else is checked (not the scale) once the kind is unclear.
    assert _problems(param) == [
        error(T0, kinds, "A parameter has exactly one value spec.", SPECS, code="param-kind")
    ]


@pytest.mark.parametrize(
    "scale",
    ["SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"],
)
def test_parameter_scale_known_passes(scale: str) -> None:
    assert _problems(_double(scale=scale)) == []


def test_parameter_scale_unknown_is_refused_with_the_known_ones() -> None:
    assert _problems(_double(scale="LOG")) == [
        error(
            f"{T0}.scaleType",
            "LOG",
            "Unknown scale type.",
            ["UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"],
            code="param-scale",
        )
    ]


def test_categorical_parameter_with_a_scale_is_refused() -> None:
    param = {**OPT, "scaleType": "UNIT_LINEAR_SCALE"}
    assert _problems(param) == [
        error(
            f"{T0}.scaleType",
            "UNIT_LINEAR_SCALE",
            "Categorical parameters take no scale.",
            ["remove scaleType"],
            code="param-scale",
        )
    ]
    assert _problems({**OPT, "scaleType": "SCALE_TYPE_UNSPECIFIED"}) == []
    # A discrete parameter may be scaled.
    discrete = {
        "parameterId": "b",
        "discreteValueSpec": {"values": [1, 2]},
        "scaleType": "UNIT_LOG_SCALE",
    }
    assert _problems(discrete) == []


def test_grid_search_refuses_a_double_range_with_three_ways_out() -> None:
    (problem,) = _problems(_double(0.1, 0.3), algorithm="GRID_SEARCH")
    assert problem == error(
        f"{T0}.doubleValueSpec",
        {"minValue": 0.1, "maxValue": 0.3},
        "GRID_SEARCH cannot enumerate a continuous double range.",
        [
            "discreteValueSpec {values: [0.1, 0.2, 0.3]}",
            "algorithm RANDOM_SEARCH",
            "Bayesian optimisation (leave algorithm unset)",
        ],
        code="grid-double",
    )


@pytest.mark.parametrize("algorithm", [None, "RANDOM_SEARCH"])
def test_other_algorithms_take_a_double_range(algorithm: str | None) -> None:
    assert _problems(_double(), algorithm=algorithm) == []


@pytest.mark.parametrize("make", [_double, _integer])
def test_range_with_a_bound_that_is_no_number_is_refused_alone(make: Any) -> None:
    param = make("low", 4, "UNIT_LOG_SCALE")
    kind = next(iter(k for k in SPECS if k in param))
    assert _problems(param) == [
        error(
            f"{T0}.{kind}",
            param[kind],
            "A range needs numeric minValue and maxValue.",
            ["{minValue: 0.0001, maxValue: 0.1}"],
            code="param-range",
        )
    ]


def test_range_bounds_in_reverse_suggest_them_swapped() -> None:
    assert _problems(_integer(5, "2")) == [
        error(
            f"{T0}.integerValueSpec.minValue",
            5,
            "minValue must be below maxValue (2).",
            ["minValue 2, maxValue 5"],
            code="param-range",
        )
    ]


def test_range_of_one_double_is_refused_and_of_one_integer_is_not() -> None:
    assert _problems(_integer(3, 3)) == []
    assert _problems(_double(0.5, 0.5)) == [
        error(
            f"{T0}.doubleValueSpec.minValue",
            0.5,
            "minValue must be below maxValue (0.5).",
            ["a discreteValueSpec with the single value, or a wider range"],
            code="param-range",
        )
    ]


def test_range_without_bounds_reads_them_as_zero() -> None:
    # proto3 JSON leaves zeros out: {maxValue: 1} is [0, 1]; {minValue: 1} is [1, 0].
    param = {"parameterId": "x", "doubleValueSpec": {"maxValue": 1}}
    assert _problems(param) == []
    reverse = {"parameterId": "x", "doubleValueSpec": {"minValue": 1}}
    (problem,) = _problems(reverse)
    assert (problem.field, problem.alternatives) == (
        f"{T0}.doubleValueSpec.minValue",
        ("minValue 0.0, maxValue 1.0",),
    )


@pytest.mark.parametrize("scale", ["UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"])
@pytest.mark.parametrize(("low", "valid"), [(0, False), (-1, False), (1e-9, True)])
def test_log_scaled_range_must_be_strictly_positive(scale: str, low: float, valid: bool) -> None:
    problems = _problems(_double(low, 1, scale))
    if valid:
        assert problems == []
    else:
        assert problems == [
            error(
                f"{T0}.doubleValueSpec.minValue",
                low,
                "A log-scaled range must be strictly positive.",
                ["minValue 1e-05", "scaleType UNIT_LINEAR_SCALE"],
                code="param-scale",
            )
        ]


def test_log_scaled_integer_range_from_zero_is_refused_and_from_one_is_not() -> None:
    assert [p.code for p in _problems(_integer(0, 8, "UNIT_LOG_SCALE"))] == ["param-scale"]
    assert _problems(_integer(1, 8, "UNIT_LOG_SCALE")) == []


@pytest.mark.parametrize(
    ("kind", "example"),
    [("categoricalValueSpec", '["adam", "sgd"]'), ("discreteValueSpec", "[16, 32, 64]")],
)
@pytest.mark.parametrize("values", [None, [], "adam"])
def test_value_list_missing_or_empty_is_refused(kind: str, example: str, values: Any) -> None:
    spec = {} if values is None else {"values": values}
    assert _problems({"parameterId": "v", kind: spec}) == [
        error(
            f"{T0}.{kind}.values",
            values,
            "List at least one value.",
            [example],
            code="param-values",
        )
    ]


def test_discrete_values_that_are_no_numbers_are_refused() -> None:
    values = [16, "big", 64]
    assert _problems({"parameterId": "v", "discreteValueSpec": {"values": values}}) == [
        error(
            f"{T0}.discreteValueSpec.values",
            values,
            "Discrete values must be numbers.",
            ["[16, 32, 64]"],
            code="param-values",
        )
    ]


@pytest.mark.parametrize(
    ("values", "fixed"),
    [
        ([16, "32", 64.5], None),
        ([64, 16, 32], "[16.0, 32.0, 64.0]"),
        ([16, 16, 32], "[16.0, 32.0]"),
    ],
)
def test_discrete_values_must_increase_strictly(values: list[Any], fixed: str | None) -> None:
    problems = _problems({"parameterId": "v", "discreteValueSpec": {"values": values}})
    assert problems == (
        []
        if fixed is None
        else [
            error(
                f"{T0}.discreteValueSpec.values",
                values,
                "Discrete values must be distinct and in increasing order.",
                [fixed],
                code="param-values",
            )
        ]
    )


def test_categorical_values_must_be_distinct() -> None:
    values = ["adam", "sgd", "adam"]
    assert _problems({"parameterId": "o", "categoricalValueSpec": {"values": values}}) == [
        error(
            f"{T0}.categoricalValueSpec.values",
            values,
            "Categorical values must be distinct.",
            ["['adam', 'sgd']"],
            code="param-values",
        )
    ]


def test_conditional_child_of_a_double_parent_is_refused_and_still_checked() -> None:
    child = {"parameterId": "m", "doubleValueSpec": {"minValue": 1, "maxValue": 0}}
    problems = _problems(with_child(LR, "parentDiscreteValues", [0.1], child))
    assert problems[0] == error(
        CHILD,
        ["parentDiscreteValues"],
        "A double parameter cannot have conditional children: there is no value to match.",
        ["make the parent a discreteValueSpec or integerValueSpec"],
        code="conditional-parent",
    )
    assert [p.field for p in problems[1:]] == [f"{CHILD}.parameterSpec.doubleValueSpec.minValue"]


@pytest.mark.parametrize(
    "keys", [[], ["parentCategoricalValues"], ["parentIntValues", "parentCategoricalValues"]]
)
def test_conditional_child_must_use_the_parent_kind_s_value_key(keys: list[str]) -> None:
    condition: dict[str, Any] = {key: {"values": ["1"]} for key in keys}
    parent = {**LAYERS, "conditionalParameterSpecs": [{**condition, "parameterSpec": MOMENTUM}]}
    used = [
        k
        for k in ("parentDiscreteValues", "parentIntValues", "parentCategoricalValues")
        if k in keys
    ]
    assert _problems(parent) == [
        error(
            CHILD,
            used,
            "A child of a integerValueSpec parent must be conditioned with parentIntValues.",
            ["parentIntValues"],
            code="conditional-parent",
        )
    ]


def test_conditional_children_are_each_checked_at_their_index() -> None:
    parent = with_child(LAYERS, "parentIntValues", ["1"], MOMENTUM)
    second = {"parentIntValues": {"values": ["9"]}, "parameterSpec": "beta"}
    parent["conditionalParameterSpecs"].append(second)
    problems = _problems(parent)
    assert [(p.field, p.code) for p in problems] == [
        (f"{T0}.conditionalParameterSpecs[1].parentIntValues.values", "conditional-values"),
        (f"{T0}.conditionalParameterSpecs[1].parameterSpec", "type"),
    ]


@pytest.mark.parametrize("children", [None, []])
def test_parameter_without_children_has_none_to_check(children: Any) -> None:
    assert _problems({**LAYERS, "conditionalParameterSpecs": children}) == []


@pytest.mark.parametrize("children", [{"parameterSpec": MOMENTUM}, "momentum"])
def test_conditional_children_not_in_a_list_are_left_to_the_type_rule(children: Any) -> None:
    assert _problems({**LAYERS, "conditionalParameterSpecs": children}) == []

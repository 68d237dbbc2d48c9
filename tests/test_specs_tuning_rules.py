"""The study rules of a tuning job: each refusal's field, value, wording and alternatives, and
the trial counts on both sides of their floors."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_specs_cases import LR, study
from vertex_retrain.specs.problems import Problem, error, warning
from vertex_retrain.specs.tuning_rules import check_study


def _study(**spec: Any) -> dict[str, Any]:
    """A valid tuning job whose studySpec keys are replaced by ``spec`` (None removes one)."""
    payload = study([LR])
    for key, value in spec.items():
        if value is None:
            del payload["studySpec"][key]
        else:
            payload["studySpec"][key] = value
    return payload


def test_study_spec_valid_has_no_problem() -> None:
    assert check_study(_study()) == []


@pytest.mark.parametrize("spec", [None, "GRID_SEARCH", ["metrics"]])
def test_study_spec_missing_or_not_an_object_is_one_refusal(spec: Any) -> None:
    payload = {"maxTrialCount": 1, "parallelTrialCount": 1}
    if spec is not None:
        payload["studySpec"] = spec
    assert check_study(payload) == [
        error(
            "studySpec",
            spec,
            "A tuning job needs a studySpec.",
            ["{metrics: [...], parameters: [...]}"],
            code="study-missing",
        )
    ]


@pytest.mark.parametrize("algorithm", ["ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"])
def test_study_algorithm_known_passes(algorithm: str) -> None:
    # LR is a double range: only GRID_SEARCH refuses it, and not for its algorithm name.
    codes = [p.code for p in check_study(_study(algorithm=algorithm))]
    assert "algorithm" not in codes


def test_study_algorithm_unknown_is_refused_with_the_known_ones() -> None:
    (problem,) = check_study(_study(algorithm="BAYESIAN"))
    assert problem == error(
        "studySpec.algorithm",
        "BAYESIAN",
        "Unknown search algorithm.",
        ["leave unset for Bayesian optimisation", "GRID_SEARCH", "RANDOM_SEARCH"],
        code="algorithm",
    )


def test_study_algorithm_is_passed_to_the_parameter_rules() -> None:
    assert [p.code for p in check_study(_study(algorithm="GRID_SEARCH"))] == ["grid-double"]


@pytest.mark.parametrize(
    "selection",
    ["MEASUREMENT_SELECTION_TYPE_UNSPECIFIED", "LAST_MEASUREMENT", "BEST_MEASUREMENT"],
)
def test_study_measurement_selection_known_passes(selection: str) -> None:
    assert check_study(_study(measurementSelectionType=selection)) == []


def test_study_measurement_selection_unknown_is_refused_with_the_known_ones() -> None:
    (problem,) = check_study(_study(measurementSelectionType="BEST"))
    assert problem == error(
        "studySpec.measurementSelectionType",
        "BEST",
        "Unknown measurement selection.",
        ["LAST_MEASUREMENT", "BEST_MEASUREMENT"],
        code="measurement",
    )


@pytest.mark.parametrize("metrics", [None, [], {"metricId": "accuracy", "goal": "MAXIMIZE"}])
def test_study_without_a_metric_list_is_refused(metrics: Any) -> None:
    (problem,) = check_study(_study(metrics=metrics))
    assert problem == error(
        "studySpec.metrics",
        metrics,
        "Name the metric to optimise and its goal (what the trainer reports with "
        "cloudml-hypertune).",
        ["[{metricId: accuracy, goal: MAXIMIZE}]"],
        code="metrics",
    )


@pytest.mark.parametrize("metric_id", [None, ""])
def test_study_metric_without_an_id_is_refused(metric_id: str | None) -> None:
    second = {"goal": "MINIMIZE"} if metric_id is None else {"metricId": "", "goal": "MINIMIZE"}
    metrics = [{"metricId": "accuracy", "goal": "MAXIMIZE"}, second]
    (problem,) = check_study(_study(metrics=metrics))
    assert problem == error(
        "studySpec.metrics[1].metricId",
        metric_id,
        "A metric needs an id.",
        ["accuracy"],
        code="metrics",
    )


@pytest.mark.parametrize("goal", ["MAXIMIZE", "MINIMIZE"])
def test_study_metric_goal_known_passes(goal: str) -> None:
    assert check_study(_study(metrics=[{"metricId": "loss", "goal": goal}])) == []


@pytest.mark.parametrize("goal", [None, "maximize", "GOAL_TYPE_UNSPECIFIED"])
def test_study_metric_goal_other_is_refused(goal: Any) -> None:
    metric = {"metricId": "loss"} if goal is None else {"metricId": "loss", "goal": goal}
    (problem,) = check_study(_study(metrics=[metric]))
    assert problem == error(
        "studySpec.metrics[0].goal",
        goal,
        "A metric goal is MAXIMIZE or MINIMIZE.",
        ["MAXIMIZE", "MINIMIZE"],
        code="metrics",
    )


def test_study_metric_that_is_no_object_lacks_id_and_goal() -> None:
    fields = [p.field for p in check_study(_study(metrics=["accuracy"]))]
    assert fields == ["studySpec.metrics[0].metricId", "studySpec.metrics[0].goal"]


@pytest.mark.parametrize("parameters", [None, [], LR])
def test_study_without_a_parameter_list_is_refused(parameters: Any) -> None:
    (problem,) = check_study(_study(parameters=parameters))
    assert (problem.field, problem.value) == ("studySpec.parameters", parameters)
    assert problem.message == "List at least one parameter to tune."
    assert problem.alternatives == (
        "[{parameterId: learning_rate, doubleValueSpec: {minValue: 1e-4, maxValue: 1e-1}, "
        "scaleType: UNIT_LOG_SCALE}]",
    )
    assert problem.code == "parameters"


def test_study_checks_every_parameter_at_its_index() -> None:
    bad = {"parameterId": "x", "doubleValueSpec": {"minValue": 2, "maxValue": 1}}
    problems = check_study(_study(parameters=[LR, bad]))
    assert [p.field for p in problems] == ["studySpec.parameters[1].doubleValueSpec.minValue"]


def _counts(**counts: Any) -> list[Problem]:
    payload = study([LR])
    for key, value in counts.items():
        if value is None:
            del payload[key]
        else:
            payload[key] = value
    return check_study(payload)


@pytest.mark.parametrize("key", ["maxTrialCount", "parallelTrialCount"])
def test_trial_count_missing_is_refused(key: str) -> None:
    (problem,) = _counts(**{key: None})
    assert problem == error(
        key, None, f"A tuning job needs {key}.", [f"{key} 10"], code="trial-counts"
    )


def test_failed_trial_count_may_be_left_out() -> None:
    assert "maxFailedTrialCount" not in study([LR])
    assert _counts() == []


@pytest.mark.parametrize(
    ("key", "value", "floor"),
    [
        ("maxTrialCount", 0, 1),
        ("maxTrialCount", "ten", 1),
        ("parallelTrialCount", 0, 1),
        ("parallelTrialCount", 1.5, 1),
        ("maxFailedTrialCount", -1, 0),
        ("maxFailedTrialCount", "none", 0),
    ],
)
def test_trial_count_below_its_floor_or_no_integer_is_refused(
    key: str, value: Any, floor: int
) -> None:
    problems = [p for p in _counts(**{key: value}) if p.field == key]
    assert problems == [
        error(
            key,
            value,
            f"{key} must be an integer >= {floor}.",
            [f"{key} 1"],
            code="trial-counts",
        )
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [("maxTrialCount", "2"), ("parallelTrialCount", 1), ("maxFailedTrialCount", 0)],
)
def test_trial_count_at_its_floor_passes(key: str, value: Any) -> None:
    assert _counts(**{key: value}) == []


@pytest.mark.parametrize(("parallel", "refused"), [(10, False), ("11", True)])
def test_parallel_trials_over_the_total_names_both_ways_out(parallel: Any, refused: bool) -> None:
    problems = _counts(maxTrialCount="10", parallelTrialCount=parallel)
    assert problems == (
        [
            error(
                "parallelTrialCount",
                11,
                "More parallel trials than trials in total (10).",
                ["parallelTrialCount 10 or fewer", "maxTrialCount 11 or more"],
                code="parallel-over-max",
            )
        ]
        if refused
        else []
    )


@pytest.mark.parametrize(
    ("max_trials", "failed", "suggested"),
    [(10, 10, None), (10, 11, 5), ("3", "4", 1), (1, 2, 1)],
)
def test_failed_trial_limit_over_the_total_is_a_warning(
    max_trials: Any, failed: Any, suggested: int | None
) -> None:
    problems = _counts(maxTrialCount=max_trials, parallelTrialCount=1, maxFailedTrialCount=failed)
    if suggested is None:
        assert problems == []
    else:
        total = int(max_trials)
        assert problems == [
            warning(
                "maxFailedTrialCount",
                int(failed),
                f"More allowed failures than trials ({total}); the limit can never trigger.",
                [f"maxFailedTrialCount {suggested}"],
                code="trial-counts",
            )
        ]


def test_trial_count_comparisons_skip_counts_that_are_not_integers() -> None:
    # Each bad count is reported once, by itself; no comparison is made with it.
    problems = _counts(maxTrialCount="x", parallelTrialCount=5, maxFailedTrialCount=50)
    assert [p.field for p in problems] == ["maxTrialCount"]

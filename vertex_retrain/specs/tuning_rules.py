"""Rules for a HyperparameterTuningJob's study: parameters, conditions, metrics, trial counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.parameter_rules import ParameterChecker
from vertex_retrain.specs.payload_io import as_int, mapping
from vertex_retrain.specs.problems import Problem, error, warning

ALGORITHMS = ("ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH")
GOALS = ("MAXIMIZE", "MINIMIZE")
MEASUREMENT_SELECTIONS = (
    "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED",
    "LAST_MEASUREMENT",
    "BEST_MEASUREMENT",
)


def check_study(resource: Mapping[str, Any]) -> list[Problem]:
    """Checks ``studySpec`` and the trial counts of a HyperparameterTuningJob resource.

    Args:
        resource: The tuning job resource (REST JSON, camelCase).

    Returns:
        The problems found. ``trialJobSpec`` is checked separately as a job spec.
    """
    study = resource.get("studySpec")
    if not isinstance(study, Mapping):
        return [
            error(
                "studySpec",
                study,
                "A tuning job needs a studySpec.",
                ["{metrics: [...], parameters: [...]}"],
                code="study-missing",
            )
        ]
    algorithm = study.get("algorithm")
    checker = ParameterChecker(algorithm)
    problems = checker.problems
    if algorithm is not None and algorithm not in ALGORITHMS:
        problems.append(
            error(
                "studySpec.algorithm",
                algorithm,
                "Unknown search algorithm.",
                ["leave unset for Bayesian optimisation", "GRID_SEARCH", "RANDOM_SEARCH"],
                code="algorithm",
            )
        )
    selection = study.get("measurementSelectionType")
    if selection is not None and selection not in MEASUREMENT_SELECTIONS:
        problems.append(
            error(
                "studySpec.measurementSelectionType",
                selection,
                "Unknown measurement selection.",
                list(MEASUREMENT_SELECTIONS[1:]),
                code="measurement",
            )
        )
    metrics = study.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        problems.append(
            error(
                "studySpec.metrics",
                metrics,
                "Name the metric to optimise and its goal "
                "(what the trainer reports with cloudml-hypertune).",
                ["[{metricId: accuracy, goal: MAXIMIZE}]"],
                code="metrics",
            )
        )
    for index, metric in enumerate(metrics if isinstance(metrics, list) else []):
        metric = mapping(metric)
        if not metric.get("metricId"):
            problems.append(
                error(
                    f"studySpec.metrics[{index}].metricId",
                    metric.get("metricId"),
                    "A metric needs an id.",
                    ["accuracy"],
                    code="metrics",
                )
            )
        if metric.get("goal") not in GOALS:
            problems.append(
                error(
                    f"studySpec.metrics[{index}].goal",
                    metric.get("goal"),
                    "A metric goal is MAXIMIZE or MINIMIZE.",
                    list(GOALS),
                    code="metrics",
                )
            )
    parameters = study.get("parameters")
    if not isinstance(parameters, list) or not parameters:
        problems.append(
            error(
                "studySpec.parameters",
                parameters,
                "List at least one parameter to tune.",
                [
                    "[{parameterId: learning_rate, doubleValueSpec: {minValue: 1e-4, "
                    "maxValue: 1e-1}, scaleType: UNIT_LOG_SCALE}]"
                ],
                code="parameters",
            )
        )
    for index, param in enumerate(parameters if isinstance(parameters, list) else []):
        checker.parameter(param, f"studySpec.parameters[{index}]")
    problems += _check_trial_counts(resource)
    return problems


def _check_trial_counts(resource: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    counts = {}
    for key in ("maxTrialCount", "parallelTrialCount", "maxFailedTrialCount"):
        raw = resource.get(key)
        value = as_int(raw) if raw is not None else None
        floor = 0 if key == "maxFailedTrialCount" else 1
        if raw is None and key != "maxFailedTrialCount":
            problems.append(
                error(key, None, f"A tuning job needs {key}.", [f"{key} 10"], code="trial-counts")
            )
        elif raw is not None and (value is None or value < floor):
            problems.append(
                error(
                    key,
                    raw,
                    f"{key} must be an integer >= {floor}.",
                    [f"{key} {max(floor, 1)}"],
                    code="trial-counts",
                )
            )
        counts[key] = value
    max_trials, parallel = counts["maxTrialCount"], counts["parallelTrialCount"]
    if max_trials and parallel and parallel > max_trials:
        problems.append(
            error(
                "parallelTrialCount",
                parallel,
                f"More parallel trials than trials in total ({max_trials}).",
                [f"parallelTrialCount {max_trials} or fewer", f"maxTrialCount {parallel} or more"],
                code="parallel-over-max",
            )
        )
    failed = counts["maxFailedTrialCount"]
    if max_trials and failed and failed > max_trials:
        problems.append(
            warning(
                "maxFailedTrialCount",
                failed,
                f"More allowed failures than trials ({max_trials}); the limit can never trigger.",
                [f"maxFailedTrialCount {max(1, max_trials // 2)}"],
                code="trial-counts",
            )
        )
    return problems

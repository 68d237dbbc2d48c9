"""The rules of a job's ``scheduling``: each problem exactly as a user sees it, and the valid
values on the other side of each rule.

Field types are checked against the API's field table first (``wrong-type``); a caller that
skips that check (``check_fields=False``, the job builders') still gets the rules' own type
problems.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_specs_cases import N1_T4, job
from vertex_retrain.specs import validate_custom_job
from vertex_retrain.specs.problems import Problem

GCS = {"outputUriPrefix": "gs://bucket/run"}
STRATEGIES = ("strategy STANDARD", "strategy SPOT", "strategy FLEX_START")
DURATION = "Durations are strings of seconds with an 's' suffix."


def _scheduling_problems(scheduling: Any, check_fields: bool = True) -> list[tuple[Any, ...]]:
    problems: list[Problem] = validate_custom_job(
        job(N1_T4, scheduling=scheduling, baseOutputDirectory=GCS), check_fields=check_fields
    )
    return [
        (p.severity, p.field.removeprefix("jobSpec.scheduling"), p.value, p.message,
         p.alternatives, p.code)
        for p in problems
        if p.field.startswith("jobSpec.scheduling")
    ]  # fmt: skip


@pytest.mark.parametrize("check_fields", [True, False])
@pytest.mark.parametrize(
    "scheduling",
    [
        None,
        {},
        {"strategy": "STRATEGY_UNSPECIFIED"},
        {"strategy": "STANDARD"},
        {"strategy": "SPOT"},
        {"strategy": "FLEX_START", "maxWaitDuration": "1800s"},
        {"timeout": "3600s", "restartJobOnWorkerRestart": False, "disableRetries": True},
        {"timeout": "0.5s"},
    ],
)
def test_scheduling_rules_accept_valid_scheduling(scheduling: Any, check_fields: bool) -> None:
    assert _scheduling_problems(scheduling, check_fields) == []


@pytest.mark.parametrize("check_fields", [True, False])
@pytest.mark.parametrize(("old", "new"), [("ON_DEMAND", "STANDARD"), ("LOW_COST", "SPOT")])
def test_scheduling_rules_warn_of_a_deprecated_strategy_naming_its_successor(
    old: str, new: str, check_fields: bool
) -> None:
    assert _scheduling_problems({"strategy": old}, check_fields) == [
        ("warning", ".strategy", old, f"{old} is deprecated in the v1 API.",
         (f"strategy {new}",), "strategy"),
    ]  # fmt: skip


@pytest.mark.parametrize("check_fields", [True, False])
def test_scheduling_rules_refuse_an_unknown_strategy_listing_the_valid_ones(
    check_fields: bool,
) -> None:
    assert _scheduling_problems({"strategy": "CHEAP"}, check_fields) == [
        ("error", ".strategy", "CHEAP", "Unknown scheduling strategy.", STRATEGIES, "strategy"),
    ]


@pytest.mark.parametrize("check_fields", [True, False])
@pytest.mark.parametrize("key", ["timeout", "maxWaitDuration"])
def test_scheduling_rules_refuse_a_duration_without_its_unit(key: str, check_fields: bool) -> None:
    scheduling = {"strategy": "FLEX_START", key: "3600"}
    assert _scheduling_problems(scheduling, check_fields) == [
        ("error", f".{key}", "3600", DURATION, ('"3600s"', '"86400s"'), "duration"),
    ]


@pytest.mark.parametrize("check_fields", [True, False])
@pytest.mark.parametrize(
    ("strategy", "shown"),
    [(None, "unset (STANDARD)"), ("SPOT", "SPOT"), ("STANDARD", "STANDARD")],
)
def test_scheduling_rules_refuse_max_wait_without_flex_start(
    strategy: str | None, shown: str, check_fields: bool
) -> None:
    scheduling = {"maxWaitDuration": "600s"}
    if strategy:
        scheduling["strategy"] = strategy
    assert _scheduling_problems(scheduling, check_fields) == [
        ("error", ".maxWaitDuration", "600s",
         "maxWaitDuration only applies to strategy FLEX_START (Dynamic Workload Scheduler); "
         f"the strategy is {shown}.",
         ("strategy FLEX_START", "remove maxWaitDuration"), "max-wait-without-flex"),
    ]  # fmt: skip


def test_scheduling_rules_duration_and_strategy_problems_come_together() -> None:
    scheduling = {"strategy": "SPOT", "maxWaitDuration": "soon"}
    assert [(p[1], p[5]) for p in _scheduling_problems(scheduling)] == [
        (".maxWaitDuration", "duration"),
        (".maxWaitDuration", "max-wait-without-flex"),
    ]


@pytest.mark.parametrize("key", ["restartJobOnWorkerRestart", "disableRetries"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_scheduling_rules_own_type_check_refuses_a_flag_that_is_not_a_boolean(
    key: str, value: Any
) -> None:
    assert _scheduling_problems({key: value}, check_fields=False) == [
        ("error", f".{key}", value, "Must be true or false.", ("true", "false"), "type"),
    ]


def test_scheduling_rules_own_type_check_refuses_scheduling_that_is_not_an_object() -> None:
    assert _scheduling_problems(["SPOT"], check_fields=False) == [
        ("error", "", ["SPOT"], "scheduling must be an object.", (), "type"),
    ]

"""Caching that saves money: no cached task takes a per-run value, so a re-run of a failed
week reuses what finished; the cache-key check treats a per-run value as a key that never
matches."""

from __future__ import annotations

from typing import Any

import pytest

from tests.data.pipelines import stale_cache
from tests.examples import shipped_pipelines
from vertex_retrain.cli.cache_keys import PER_RUN_PLACEHOLDERS, cache_key_problems
from vertex_retrain.cli.compiling import compile_to_dict


def _leaf_tasks(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for component in [spec["root"], *spec["components"].values()]:
        for name, task in component.get("dag", {}).get("tasks", {}).items():
            if "dag" not in spec["components"][task["componentRef"]["name"]]:
                found[name] = task
    return found


def _constants(task: dict[str, Any]) -> list[str]:
    parameters = task.get("inputs", {}).get("parameters", {}).values()
    return [str(p["runtimeValue"]["constant"]) for p in parameters if "runtimeValue" in p]


@pytest.mark.parametrize("name", sorted(shipped_pipelines()))
def test_cache_reuse_no_cached_task_takes_a_per_run_value(name: str) -> None:
    spec = compile_to_dict(shipped_pipelines()[name])
    cached = {
        task_name: task
        for task_name, task in _leaf_tasks(spec).items()
        if task.get("cachingOptions", {}).get("enableCache")
    }
    per_run = {
        task_name: text
        for task_name, task in cached.items()
        for text in _constants(task)
        if any(p in text for p in PER_RUN_PLACEHOLDERS)
    }
    assert per_run == {}
    assert cache_key_problems(spec) == []


def test_cache_reuse_weekly_training_is_cached_and_keyed_on_the_week() -> None:
    from vertex_retrain.pipelines import weekly_retraining

    tasks = _leaf_tasks(compile_to_dict(weekly_retraining))
    assert tasks["train-custom-job"]["cachingOptions"]["enableCache"] is True
    assert tasks["hp-tune"]["cachingOptions"]["enableCache"] is True
    assert "pipeline_run" not in tasks["train-custom-job"]["inputs"]["parameters"]
    assert "pipeline_task" not in tasks["train-custom-job"]["inputs"]["parameters"]
    # The decision reads the registry's champion, which its inputs do not show.
    assert tasks["evaluate-model"].get("cachingOptions", {}).get("enableCache") is not True


def test_cache_keys_a_per_run_value_is_a_key_that_never_matches() -> None:
    problems = cache_key_problems(compile_to_dict(stale_cache.per_run_key))
    assert len(problems) == 1, problems
    assert problems[0].startswith("task 'prepare-dataset' (prepare-dataset) has caching on")
    assert "'data_uri' takes the per-run value {{$.pipeline_job_name}}" in problems[0]
    assert "never matches an earlier run" in problems[0]

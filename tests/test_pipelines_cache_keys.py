"""The cache-key check over compiled pipelines: no task can reuse another week's output.

Vertex reuses a cached output when a task's component and inputs are unchanged; the check
(:mod:`vertex_retrain.cli.cache_keys`) refuses a pipeline with a cached task that does not
take the week, a digest or the run. ``compile.py compile`` runs it on every pipeline.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import pytest

from tests.data.pipelines import stale_cache
from vertex_retrain.cli.cache_keys import CacheKeyError, cache_key_problems, check_cache_keys
from vertex_retrain.cli.compile_commands import cli_compile
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.pipelines import catalog


def _tasks(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every leaf task of a compiled spec by name, nested groups included."""
    found: dict[str, dict[str, Any]] = {}
    components = spec["components"]

    def walk(dag: dict[str, Any]) -> None:
        for name, task in dag.get("tasks", {}).items():
            nested = components[task["componentRef"]["name"]].get("dag")
            if nested is not None:
                walk(nested)
            else:
                found[name] = task

    walk(spec["root"]["dag"])
    return found


@pytest.mark.parametrize("name", sorted(catalog.PIPELINES))
def test_cache_keys_every_cached_task_of_our_pipelines_follows_the_week(name: str) -> None:
    spec = compile_to_dict(catalog.pipeline_by_name(name))
    assert cache_key_problems(spec) == []
    tasks = _tasks(spec)
    # The keys are never cached themselves; the data steps are cached, keyed on the week.
    assert tasks["data-window"].get("cachingOptions", {}).get("enableCache") is not True
    # The gate looks at the files every run (a period rewritten in place keeps its name); its
    # digest of them keys prepare-dataset, which is cached.
    assert tasks["check-data"].get("cachingOptions", {}).get("enableCache") is not True
    assert tasks["prepare-dataset"]["cachingOptions"]["enableCache"] is True
    digest = {"componentInputParameter": "pipelinechannel--check-data-window_digest"}
    assert tasks["prepare-dataset"]["inputs"]["parameters"]["window_digest"] == digest
    week = {"taskOutputParameter": {"outputParameterKey": "as_of", "producerTask": "data-window"}}
    assert tasks["check-data"]["inputs"]["parameters"]["as_of"] == week
    window_inputs = tasks["data-window"]["inputs"]["parameters"]
    assert window_inputs["scheduled_time"]["runtimeValue"]["constant"] == (
        "{{$.pipeline_job_schedule_time_utc}}"
    )
    assert window_inputs["created_time"]["runtimeValue"]["constant"] == (
        "{{$.pipeline_job_create_time_utc}}"
    )


def test_cache_keys_weekly_build_is_keyed_on_the_source_digest() -> None:
    tasks = _tasks(compile_to_dict(catalog.pipeline_by_name("weekly-retraining")))
    assert tasks["build-container"]["inputs"]["parameters"]["source_digest"] == {
        "taskOutputParameter": {"outputParameterKey": "Output", "producerTask": "source-digest"}
    }
    assert tasks["source-digest"].get("cachingOptions", {}).get("enableCache") is not True


@pytest.mark.parametrize("name", sorted(catalog.PIPELINES))
def test_cache_keys_data_steps_read_the_extracted_window_named_by_its_content(name: str) -> None:
    tasks = _tasks(compile_to_dict(catalog.pipeline_by_name(name)))
    assert tasks["extract-window"].get("cachingOptions", {}).get("enableCache") is not True
    folder = {
        "taskOutputParameter": {"outputParameterKey": "data_uri", "producerTask": "extract-window"}
    }
    assert tasks["check-data"]["inputs"]["parameters"]["data_uri"] == folder
    # Inside the data-ok condition, the same output through the group's input.
    channel = {"componentInputParameter": "pipelinechannel--extract-window-data_uri"}
    assert tasks["prepare-dataset"]["inputs"]["parameters"]["data_uri"] == channel
    extract = tasks["extract-window"]["inputs"]["parameters"]
    assert extract["output_root"]["runtimeValue"]["constant"] == "{{$.pipeline_root}}"
    assert extract["as_of"]["taskOutputParameter"]["producerTask"] == "data-window"


def test_cache_keys_refuse_a_dataset_keyed_on_the_parameter_alone() -> None:
    problems = cache_key_problems(compile_to_dict(stale_cache.stale_dataset))
    assert len(problems) == 1
    assert problems[0].startswith("task 'prepare-dataset' (prepare-dataset) has caching on")
    assert "data_window's as_of" in problems[0] and ".set_caching_options(False)" in problems[0]


def test_cache_keys_refuse_a_build_without_the_digest_and_a_cached_digest() -> None:
    problems = cache_key_problems(compile_to_dict(stale_cache.stale_build))
    named = sorted(p.split("'")[1] for p in problems)
    # source-digest is cached, so neither it nor the build fed by it is keyed; nor the other.
    assert named == ["build-container", "build-container-2", "source-digest"]


def test_cache_keys_accept_keyed_tasks_and_opt_outs() -> None:
    assert cache_key_problems(compile_to_dict(stale_cache.keyed)) == []


def test_cache_keys_oneof_is_keyed_only_when_every_branch_is() -> None:
    problems = cache_key_problems(compile_to_dict(stale_cache.half_keyed_oneof))
    assert [p.split("'")[1] for p in problems] == ["fixed-hyperparameters-3"]


def test_cache_keys_check_raises_naming_the_pipeline() -> None:
    with pytest.raises(CacheKeyError, match=r"pipeline 'stale-dataset' could serve a task"):
        check_cache_keys(compile_to_dict(stale_cache.stale_dataset))


def test_compile_refuses_a_pipeline_with_a_stale_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(
        catalog.PIPELINES, "stale-dataset", "tests.data.pipelines.stale_cache:stale_dataset"
    )
    args = argparse.Namespace(out=str(tmp_path / "dist"), component_image=None)
    assert cli_compile(args, io.StringIO()) == 2
    error = capsys.readouterr().err
    assert "pipeline 'stale-dataset' could serve a task another week's cached output" in error
    assert "task 'prepare-dataset'" in error
    assert not (tmp_path / "dist").exists()

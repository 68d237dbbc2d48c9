"""A local run refuses, before any step, a ``source_uri`` or ``data_uri`` that is not on this
machine: one line each (not one per task that reads it), naming where it looked; an input a
task of the run produces, a task that does not run and another store are left to the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, example_module
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.local_inputs import missing_input_problems

PIPELINES = example_module(DRINK_SHOPS, "pipelines")


@pytest.fixture(scope="module")
def weekly() -> dict[str, Any]:
    return compile_to_dict(PIPELINES.weekly)


def _problems(spec: dict[str, Any], **overrides: Any) -> list:
    return missing_input_problems(spec, {**default_arguments(spec), **overrides})


def test_missing_input_problems_pass_folders_that_are_here(
    weekly: dict[str, Any], root: Path
) -> None:
    assert (
        _problems(weekly, source_uri=str(DRINK_SHOPS / "trainer"), data_uri=str(DRINK_SHOPS)) == []
    )


def test_missing_input_problems_say_each_missing_location_once(
    weekly: dict[str, Any], root: Path, tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-source")
    problems = _problems(weekly, source_uri=missing, data_uri=str(DRINK_SHOPS))
    (problem,) = problems  # read by four tasks of the weekly pipeline, said once
    assert (problem.field, problem.value, problem.code) == ("source_uri", missing, "input-missing")
    assert "build-image" in problem.message and "plan-training" in problem.message
    # A package run builds no image: the container build's tasks do not run, so not named.
    (package,) = _problems(weekly, source_uri=missing, data_uri=str(DRINK_SHOPS),
                           training_code="python_package")  # fmt: skip
    assert "build-image" not in package.message and "plan-training" in package.message


def test_missing_input_problems_read_gs_where_local_runs_keep_it(
    weekly: dict[str, Any], root: Path
) -> None:
    arguments = {"source_uri": str(DRINK_SHOPS / "trainer"), "data_uri": "gs://b/data"}
    (problem,) = _problems(weekly, **arguments)
    local = root / "gcs" / "b" / "data"
    assert problem.field == "data_uri" and str(local) in problem.message
    assert problem.alternatives[-1] == f"a copy at {local}"
    local.mkdir(parents=True)
    assert _problems(weekly, **arguments) == []


def test_missing_input_problems_refuse_a_gs_uri_without_a_bucket(
    weekly: dict[str, Any], root: Path
) -> None:
    (problem,) = _problems(weekly, source_uri=str(DRINK_SHOPS / "trainer"), data_uri="gs://")
    assert (problem.field, problem.code) == ("data_uri", "input-unreadable")


def test_missing_input_problems_leave_other_stores_to_their_step(
    weekly: dict[str, Any], root: Path
) -> None:
    other = {"source_uri": str(DRINK_SHOPS / "trainer"), "data_uri": "bq://project.dataset.table"}
    assert _problems(weekly, **other) == []


def test_missing_input_problems_skip_inputs_known_only_at_run_time(root: Path) -> None:
    # The experiment's check_data and prepare_dataset read the window extract-window writes:
    # only extract-window reads data_uri before the run.
    spec = compile_to_dict(PIPELINES.experiment)
    (problem,) = _problems(spec, source_uri=str(DRINK_SHOPS / "trainer"), data_uri="/no/such/data")
    assert problem.field == "data_uri" and "extract-window" in problem.message
    assert "check-data" not in problem.message and "prepare-dataset" not in problem.message

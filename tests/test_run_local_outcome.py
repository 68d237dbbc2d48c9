"""``vertex_retrain.run_local`` gives back the run's id, folder, status and what the pipeline
returned (kfp.local's pipeline outputs), and each task's outputs from the run folder.

(No ``from __future__ import annotations``: kfp reads the components' real annotations.)
"""

import io
from pathlib import Path
from typing import NamedTuple

from kfp import dsl

from vertex_retrain import run_local
from vertex_retrain.cli.local_outcome import LocalRunOutcome, pipeline_outputs


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def add(a: int, b: int) -> int:
    return a + b


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def halve(a: int) -> int:
    if a % 2:
        raise ValueError(f"{a} is odd")
    return a // 2


@dsl.pipeline(name="add-twice")
def add_twice(a: int = 1, b: int = 2) -> int:
    return add(a=add(a=a, b=b).output, b=b).output


class Sums(NamedTuple):
    total: int
    half: int


@dsl.pipeline(name="sum-and-half")
def sum_and_half(a: int = 1, b: int = 3) -> Sums:
    total = add(a=a, b=b).output
    return Sums(total=total, half=halve(a=total).output)


def test_run_local_returns_the_pipelines_outputs_and_each_tasks(root: Path) -> None:
    outcome = run_local(add_twice, {"a": 3}, cache=False, console=io.StringIO())
    assert outcome.status == "SUCCEEDED", outcome.log_path.read_text()
    assert outcome.outputs == {"Output": 7}
    assert outcome.run_dir is not None and outcome.run_dir.parent == root / "pipeline-root"
    assert outcome.run_id == outcome.run_dir.name and outcome.run_id.startswith("add-twice-")
    tasks = outcome.task_outputs()
    assert {name: task.parameters["Output"] for name, task in tasks.items()} == {
        "add": 5,
        "add-2": 7,
    }


def test_run_local_names_each_output_of_a_pipeline_returning_several(root: Path) -> None:
    outcome = run_local(sum_and_half, {}, cache=False, console=io.StringIO())
    assert outcome.succeeded, outcome.log_path.read_text()
    assert outcome.outputs == {"total": 4, "half": 2}


def test_run_local_of_a_failed_run_has_no_outputs_and_says_failed(root: Path) -> None:
    outcome = run_local(sum_and_half, {"a": 2}, cache=False, console=io.StringIO())
    assert (outcome.status, outcome.succeeded, outcome.outputs) == ("FAILED", False, {})
    assert "add" in outcome.task_outputs()  # what ran before the failure is still there


def test_local_run_outcome_status_and_run_id_without_a_run(tmp_path: Path) -> None:
    refused = LocalRunOutcome(False, None, tmp_path / "log", 0.0, None, refused="locked")
    assert (refused.status, refused.run_id, refused.task_outputs()) == ("REFUSED", None, {})


def test_pipeline_outputs_of_what_has_none_is_empty() -> None:
    assert pipeline_outputs(None) == {}

"""Each preflight finding is printed once: the weekly template's ``train`` and ``train-full``
(``evaluate`` and ``evaluate-full``) build the same job from the same parameters, so a bad job
setting is one line naming both tasks, not one line per task
(:func:`vertex_retrain.cli.job_tasks.problems_by_task`). The pipeline is a user's small one
with the same two tasks (tests/data/pipelines/trained_twice.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.preflight_flags import SUBMISSION_FLAGS
from vertex_retrain.cli.job_tasks import problems_by_task
from vertex_retrain.cli.main import main
from vertex_retrain.specs.problems import error, warning

TWICE = (
    f"{Path(__file__).resolve().parent / 'data' / 'pipelines' / 'trained_twice.py'}:trained_twice"
)
IMAGE = "europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:1"
BAD_MACHINE = "n1-bogus-4"


def test_problems_by_task_says_a_finding_of_several_tasks_once_naming_them() -> None:
    machine = error("machineType", BAD_MACHINE, "Unknown machine type.")
    other = error("machineType", "n1-other-4", "Unknown machine type.")
    found = [("train-full", machine), ("train", machine), ("train", other)]
    assert [p.field for p in problems_by_task(found)] == [
        "tasks train-full, train: machineType",
        "task train: machineType",
    ]


def test_problems_by_task_keeps_findings_that_differ_in_severity_or_value() -> None:
    found = [
        ("train", error("f", 1, "Bad.")),
        ("train-full", warning("f", 1, "Bad.")),
        ("evaluate", error("f", 2, "Bad.")),
    ]
    assert [p.field for p in problems_by_task(found)] == [
        "task train: f",
        "task train-full: f",
        "task evaluate: f",
    ]


def test_preflight_prints_a_bad_job_setting_once(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["preflight", TWICE, "--component-image", IMAGE, "--location", "europe-west4",
            *SUBMISSION_FLAGS]  # fmt: skip
    assert main([*argv, "--param", f"machine_type={BAD_MACHINE}"]) == 1
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if BAD_MACHINE in line]
    assert line.startswith("  error: tasks train-full, train: ") and "machineType" in line
    assert lines[0].startswith("preflight trained-twice: 1 error(s)")
    assert len(lines) == len(set(lines))  # no line is printed twice

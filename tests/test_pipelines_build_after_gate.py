"""Both templates build the training code only once the data gate has passed.

A week the gate stops pays for no Cloud Build: every build task (and the digest it is keyed on)
sits in the ``data-ok`` branch, beside ``prepare-dataset`` rather than behind it. Compiled IR
only; tests/test_pipelines_weekly_local.py shows a stopped week running no build.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.pipelines import train_only, weekly_retraining

TEMPLATES = {"weekly-retraining": weekly_retraining, "train-only": train_only}
BUILDS = {
    "weekly-retraining": {"source-digest", "build", "image-digest", "build-image"},
    "train-only": {"image-digest", "build-image"},
}


@cache
def _placed(name: str) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """Every task of the compiled template by display name: the display names of the groups
    around it, outermost first, and the task itself (with its key in its DAG as ``"key"``)."""
    spec = compile_to_dict(TEMPLATES[name])
    found: dict[str, tuple[list[str], dict[str, Any]]] = {}

    def walk(dag: dict[str, Any], groups: list[str]) -> None:
        for key, task in dag.get("tasks", {}).items():
            name = task.get("taskInfo", {}).get("name", key)
            found[name] = (groups, {**task, "key": key})
            inner = spec["components"].get(task.get("componentRef", {}).get("name", ""), {})
            if "dag" in inner:
                walk(inner["dag"], [*groups, name])

    walk(spec["root"]["dag"], [])
    return found


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_builds_only_in_the_data_gate_s_passing_branch(name: str) -> None:
    placed = _placed(name)
    for build in BUILDS[name]:
        groups, _ = placed[build]
        assert "data-ok" in groups, (build, groups)
    # The branch that stops the run waits for no build.
    breach_groups, _ = placed["stop-before-training"]
    assert "data-breach" in breach_groups
    assert not BUILDS[name] & set(breach_groups)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_builds_beside_prepare_dataset_not_after_it(name: str) -> None:
    placed = _placed(name)
    prepare_groups, prepare = placed["prepare-dataset"]
    image_group = placed["container-or-package"][1]["key"]
    for build in BUILDS[name]:
        groups, task = placed[build]
        # In prepare-dataset's branch, neither waiting for the other.
        assert groups[: len(prepare_groups)] == prepare_groups, (build, groups)
        assert prepare["key"] not in task.get("dependentTasks", []), build
        assert {task["key"], image_group}.isdisjoint(prepare.get("dependentTasks", [])), build

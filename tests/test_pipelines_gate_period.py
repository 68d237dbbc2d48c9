"""The compiled templates keep the gate period away from what training and tuning choose.

``prepare_dataset`` writes two datasets: ``dataset`` (train, selection and gate parts) and
``training_dataset`` (the gate part withheld). Every training and tuning task must read the
second, and the evaluation the first; the trainer's own reader refuses the gate part of a
training dataset (tests/test_trainer_split.py), so tuning never sees the gate period.
"""

from __future__ import annotations

from typing import Any

import pytest

from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.pipelines import catalog

Source = tuple[str, str]
"""(producer task, output artifact key), or ("<pipeline input>", name)."""


def _leaf_inputs(spec: dict[str, Any]) -> list[tuple[str, dict[str, Source]]]:
    """Every leaf task's component and its input artifacts, traced through nested groups."""
    components = spec["components"]
    found: list[tuple[str, dict[str, Source]]] = []

    def walk(dag: dict[str, Any], inherited: dict[str, Source]) -> None:
        for task in dag.get("tasks", {}).values():
            resolved: dict[str, Source] = {}
            for name, source in task.get("inputs", {}).get("artifacts", {}).items():
                if "taskOutputArtifact" in source:
                    output = source["taskOutputArtifact"]
                    resolved[name] = (output["producerTask"], output["outputArtifactKey"])
                elif "componentInputArtifact" in source:
                    key = source["componentInputArtifact"]
                    resolved[name] = inherited.get(key, ("<pipeline input>", key))
            component = task["componentRef"]["name"]
            nested = components[component].get("dag")
            if nested is not None:
                walk(nested, resolved)
            else:
                found.append((component, resolved))

    walk(spec["root"]["dag"], {})
    return found


def _datasets(spec: dict[str, Any], component: str) -> list[Source]:
    return [
        inputs["dataset"]
        for name, inputs in _leaf_inputs(spec)
        if name == component or name.startswith(f"{component}-")
    ]


@pytest.mark.parametrize("name", sorted(catalog.PIPELINES))
def test_gate_period_training_and_tuning_read_the_dataset_without_it(name: str) -> None:
    spec = compile_to_dict(catalog.pipeline_by_name(name))
    training = _datasets(spec, "comp-train-custom-job") + _datasets(spec, "comp-hp-tune")
    assert training, "the template trains nothing"
    assert set(training) == {("prepare-dataset", "training_dataset")}
    assert set(_datasets(spec, "comp-evaluate-model")) == {("prepare-dataset", "dataset")}


def test_gate_period_weekly_tuning_task_is_traced_through_its_condition() -> None:
    spec = compile_to_dict(catalog.pipeline_by_name("weekly-retraining"))
    tuning = _datasets(spec, "comp-hp-tune")
    # The tuning job sits two conditions deep; the trace would fail open if it lost them.
    assert tuning == [("prepare-dataset", "training_dataset")]

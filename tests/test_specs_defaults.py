"""One definition of each default: components, request types, pipelines and the estimate agree.

``vertex_retrain.specs.defaults`` defines every training and tuning default once. Request types
and pipelines read it; components leave it to ``...`` in their source, set from it when they
are declared (``components/signature_defaults.py``), so these tests read the *compiled*
components and pipelines, as Vertex gets them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.costing import estimate_run, training_hours
from vertex_retrain.pipelines import catalog
from vertex_retrain.specs.defaults import TRAINING, TUNING, TrainingDefaults, TuningDefaults
from vertex_retrain.steps.job_request import TrainingRequest
from vertex_retrain.steps.training_cost import estimate_training_cost, request_for_shape
from vertex_retrain.steps.tune import TuningRequest

DEFINITIONS: dict[str, Any] = {
    **{f.name: getattr(TRAINING, f.name) for f in dataclasses.fields(TrainingDefaults)},
    **{f.name: getattr(TUNING, f.name) for f in dataclasses.fields(TuningDefaults)},
}
"""Input name -> its one default value."""

JOB_COMPONENTS = ("train_custom_job", "hp_tune", "run_summary")
"""Components whose inputs describe a training job or a tuning study."""

PLACEHOLDER_INPUTS = {"project", "location", "service_account"}
"""Component inputs that default to KFP placeholders; a request carries the resolved value."""


@functools.cache
def _compiled(name: str) -> dict[str, Any]:
    target = catalog.COMPONENTS.get(name) or catalog.PIPELINES[name]
    return compile_to_dict(catalog.load(target))


def _compiled_defaults(name: str) -> dict[str, Any]:
    """Input name -> default, as the compiled spec ships it to Vertex."""
    parameters = _compiled(name)["root"]["inputDefinitions"]["parameters"]
    return {
        key: value["defaultValue"] for key, value in parameters.items() if "defaultValue" in value
    }


def _request_defaults(request_type: type) -> dict[str, Any]:
    defaults = {}
    for field in dataclasses.fields(request_type):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    return defaults


@pytest.mark.parametrize("component", JOB_COMPONENTS)
def test_compiled_component_defaults_equal_the_one_definition(component: str) -> None:
    shipped = _compiled_defaults(component)
    shared = sorted(set(shipped) & set(DEFINITIONS))
    assert shared, f"{component} shares no input with vertex_retrain.specs.defaults"
    drifted = {name: (shipped[name], DEFINITIONS[name]) for name in shared}
    drifted = {name: pair for name, pair in drifted.items() if pair[0] != pair[1]}
    assert drifted == {}, f"{component}: (compiled default, specs.defaults) differ: {drifted}"


@pytest.mark.parametrize(
    ("request_type", "component"),
    [(TrainingRequest, "train_custom_job"), (TuningRequest, "hp_tune")],
)
def test_request_type_defaults_equal_the_component_and_the_definition(
    request_type: type, component: str
) -> None:
    requested = _request_defaults(request_type)
    shipped = _compiled_defaults(component)
    shared = sorted((set(requested) & set(shipped)) - PLACEHOLDER_INPUTS)
    assert len(shared) >= 5, shared
    assert {name: requested[name] for name in shared} == {name: shipped[name] for name in shared}
    defined = sorted(set(requested) & set(DEFINITIONS))
    assert {name: requested[name] for name in defined} == {
        name: DEFINITIONS[name] for name in defined
    }


@pytest.mark.parametrize("pipeline", sorted(catalog.PIPELINES))
def test_pipeline_parameter_defaults_equal_the_definition(pipeline: str) -> None:
    compiled = _compiled_defaults(pipeline)
    shared = sorted(set(compiled) & set(DEFINITIONS))
    assert {"machine_type", "accelerator_type", "scheduling_strategy"} <= set(shared)
    assert {name: compiled[name] for name in shared} == {name: DEFINITIONS[name] for name in shared}


def test_request_for_shape_without_keys_is_the_component_default_job() -> None:
    component = _compiled_defaults("train_custom_job")
    request = request_for_shape({})
    for name in ("machine_type", "accelerator_type", "accelerator_count", "worker_count",
                 "distribution", "scheduling_strategy", "timeout_seconds",
                 "executor_image_uri"):  # fmt: skip
        assert getattr(request, name) == component[name], name


@pytest.mark.parametrize("pipeline", sorted(catalog.PIPELINES))
def test_estimate_of_compiled_defaults_prices_the_defined_job(pipeline: str) -> None:
    arguments = default_arguments(_compiled(pipeline))
    estimate = estimate_run(_compiled(pipeline), arguments)
    defined = TrainingRequest(
        backend="vertex",
        display_name="defined",
        base_output_directory="gs://b/out",
        python_module="trainer.task",
        image_uri=f"us-docker.pkg.dev/p/training/trainer-cuda@sha256:{'a' * 64}",
    )
    expected = estimate_training_cost(defined, TRAINING.expected_training_hours)
    train = estimate.steps[-1]
    assert (train.gpus, train.baseline_hours) == (expected.gpus, expected.baseline_hours)
    assert (train.on_demand_cost, train.spot_cost) == (
        expected.on_demand_cost,
        expected.spot_cost,
    )


def test_training_hours_prefers_override_then_the_run_then_the_definition() -> None:
    assert training_hours({}, None) == TRAINING.expected_training_hours
    assert training_hours({"expected_training_hours": 3.5}, None) == 3.5
    assert training_hours({"expected_training_hours": 3.5}, 1.0) == 1.0

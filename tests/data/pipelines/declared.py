"""A user's pipeline whose step reads a dataset and an evaluation declaration, for the tests of
the declarations given as parameter values (vertex_retrain.pipelines.declarations): every
command parses a given one before anything runs, not at the step that reads it.

No `from __future__ import annotations`: KFP reads the signature's annotations as objects.
"""

from pathlib import Path

from kfp import dsl

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.contracts.dataset import load_dataset_declaration
from vertex_retrain.contracts.evaluation_declaration import load_evaluation_declaration
from vertex_retrain.pipelines import configure

_EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "daily_demand"
DATASET = load_dataset_declaration(_EXAMPLE / "dataset.yaml")
EVALUATION = load_evaluation_declaration(_EXAMPLE / "evaluation.yaml")


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def step(dataset_declaration: dict, evaluation_declaration: dict) -> str:
    """The step that would read the declarations; a run that reaches it was not refused."""
    return f"{len(dataset_declaration)} {len(evaluation_declaration)}"


@dsl.pipeline(name="declared")
def declared(dataset_declaration: dict, evaluation_declaration: dict) -> None:
    """Both declarations, without defaults."""
    step(dataset_declaration=dataset_declaration, evaluation_declaration=evaluation_declaration)


configured = configure(
    declared, name="configured", dataset_declaration=DATASET, evaluation_declaration=EVALUATION
)
"""Valid declarations as its defaults: a run needs no value."""

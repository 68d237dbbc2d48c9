"""configure(): a template under a team's name with the team's defaults, the graph unchanged."""

# No `from __future__ import annotations`: KFP reads the pipeline's annotations as types.
from typing import Any

import pytest
from kfp import dsl

from tests.declarations import DATASET, EVALUATION
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.components.stop_run import stop_run
from vertex_retrain.contracts.dataset import DatasetDeclarationError
from vertex_retrain.contracts.evaluation_declaration import EvaluationDeclarationError
from vertex_retrain.pipelines import configure, train_only, weekly_retraining


def _parameters(pipeline: Any) -> dict[str, Any]:
    spec = compile_to_dict(pipeline)
    parameters: dict[str, Any] = spec["root"]["inputDefinitions"]["parameters"]
    return parameters


def test_configure_gives_required_parameters_defaults_and_keeps_the_graph() -> None:
    mine = configure(
        train_only,
        name="demand-experiment",
        data_uri="gs://mine/sales",
        dataset_declaration=DATASET,
        evaluation_declaration=EVALUATION,
        selection_periods=7,
    )
    parameters = _parameters(mine)
    assert parameters["data_uri"]["defaultValue"] == "gs://mine/sales"
    assert parameters["selection_periods"]["defaultValue"] == 7
    assert parameters["dataset_declaration"]["defaultValue"]["table"]["period"] == "day"
    assert "defaultValue" not in parameters["training_module"]  # still the team's to give
    spec = compile_to_dict(mine)
    assert spec["pipelineInfo"]["name"] == "demand-experiment"
    template = compile_to_dict(train_only)
    assert spec["root"]["dag"] == template["root"]["dag"]  # each input wired as before
    assert spec["components"].keys() == template["components"].keys()


def test_configure_on_the_weekly_wrapper_reaches_the_outer_parameters() -> None:
    mine = configure(weekly_retraining, name="mine-weekly", tune=True, max_trial_count=3)
    parameters = _parameters(mine)
    assert parameters["tune"]["defaultValue"] is True
    assert parameters["max_trial_count"]["defaultValue"] == 3
    assert mine.description == weekly_retraining.description


@pytest.mark.parametrize(
    ("defaults", "error", "message"),
    [
        ({"dataset_uri": "gs://x"}, ValueError, "has no parameter 'dataset_uri'; its parameters"),
        (
            {"selection_periods": "7"},
            TypeError,
            "'selection_periods' takes values of type int; got '7'",
        ),
        (
            {"selection_periods": True},
            TypeError,
            "'selection_periods' takes values of type int; got True",
        ),
        ({"training_args": "--epochs 1"}, TypeError, "'training_args' takes values of type list"),
        ({"dataset_declaration": {"format": "v0"}}, DatasetDeclarationError, "format is 'v0'"),
        ({"evaluation_declaration": {"primary": "x"}}, EvaluationDeclarationError, "metrics"),
    ],
)
def test_configure_refuses_what_the_template_would_not_take(
    defaults: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        configure(train_only, name="bad", **defaults)


def test_configure_accepts_an_integer_for_a_float_parameter_and_any_pipeline() -> None:
    @dsl.pipeline(name="plain")
    def plain(reason: str, share: float = 0.5) -> None:
        stop_run(reason=reason)

    mine = configure(plain, name="plain-mine", reason="why", share=1)
    parameters = _parameters(mine)
    assert parameters["reason"]["defaultValue"] == "why"
    assert parameters["share"]["defaultValue"] == 1

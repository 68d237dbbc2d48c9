"""The library's own pipeline templates and components, by name (imported on demand).

Commands take any pipeline (a template name from here, a compiled file, or a pipeline in the
user's code); :mod:`vertex_retrain.cli.pipeline_source` resolves them all.
"""

from __future__ import annotations

import importlib
from typing import Any

PIPELINES: dict[str, str] = {
    "weekly-retraining": "vertex_retrain.pipelines.weekly:weekly_retraining",
    "train-only": "vertex_retrain.pipelines.experiment:train_only",
}
"""Pipeline name -> ``module:attribute`` of its ``@dsl.pipeline`` function."""

COMPONENTS: dict[str, str] = {
    "data_window": "vertex_retrain.components.data_window:data_window",
    "source_digest": "vertex_retrain.components.source_digest:source_digest",
    "build_container": "vertex_retrain.components.build_container:build_container",
    "extract_window": "vertex_retrain.components.extract_window:extract_window",
    "check_data": "vertex_retrain.components.check_data:check_data",
    "stop_run": "vertex_retrain.components.stop_run:stop_run",
    "prepare_dataset": "vertex_retrain.components.prepare_dataset:prepare_dataset",
    "train_custom_job": "vertex_retrain.components.train_custom_job:train_custom_job",
    "hp_tune": "vertex_retrain.components.hp_tune:hp_tune",
    "plan_training": "vertex_retrain.components.plan_training:plan_training",
    "fixed_hyperparameters": (
        "vertex_retrain.components.fixed_hyperparameters:fixed_hyperparameters"
    ),
    "no_image": "vertex_retrain.components.no_image:no_image",
    "evaluate_model": "vertex_retrain.components.evaluate_model:evaluate_model",
    "register_model": "vertex_retrain.components.register_model:register_model",
    "deploy_model": "vertex_retrain.components.deploy_model:deploy_model",
    "run_summary": "vertex_retrain.components.run_summary:run_summary",
}
"""Component name -> ``module:attribute`` of its ``@dsl.component`` function."""


def load(target: str) -> Any:
    """Imports ``module:attribute`` and returns the attribute."""
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


def pipeline_by_name(name: str) -> Any:
    """Returns the pipeline called ``name``, or raises a KeyError listing the known ones."""
    aliases = {key.replace("-", "_"): key for key in PIPELINES}
    key = aliases.get(name, name)
    if key not in PIPELINES:
        raise KeyError(
            f"no pipeline named {name!r}; known pipelines: {', '.join(sorted(PIPELINES))}"
        )
    return load(PIPELINES[key])

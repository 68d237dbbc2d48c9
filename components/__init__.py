"""The vertex-retrain components, for pipelines of your own::

    from vertex_retrain.components import (
        build_container, train_custom_job, hp_tune, evaluate_model, register_model,
        deploy_model, set_component_image,
    )

Each is a KFP v2 lightweight component with a ``backend`` input (``"vertex"`` or
``"local"``). Before compiling with plain ``kfp.compiler``, name the image they run in on
Vertex with :func:`set_component_image` (``vertex-retrain compile --component-image`` does it
for compiles through the command line). The names load on first use, so importing this
package imports neither kfp nor GCPC.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time the names load on first use
    from .build_container import build_container
    from .check_data import check_data
    from .data_window import data_window
    from .deploy_model import deploy_model
    from .evaluate_model import evaluate_model
    from .extract_window import extract_window
    from .fixed_hyperparameters import fixed_hyperparameters
    from .hp_tune import hp_tune
    from .image import set_component_image
    from .no_image import no_image
    from .plan_training import plan_training
    from .prepare_dataset import prepare_dataset
    from .register_model import register_model
    from .run_summary import run_summary
    from .source_digest import source_digest
    from .stop_run import stop_run
    from .train_custom_job import train_custom_job

__all__ = [
    "build_container",
    "check_data",
    "data_window",
    "deploy_model",
    "evaluate_model",
    "extract_window",
    "fixed_hyperparameters",
    "hp_tune",
    "no_image",
    "plan_training",
    "prepare_dataset",
    "register_model",
    "run_summary",
    "set_component_image",
    "source_digest",
    "stop_run",
    "train_custom_job",
]

_MODULES = {name: name for name in __all__ if name != "set_component_image"}
_MODULES["set_component_image"] = "image"


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module 'vertex_retrain.components' has no attribute {name!r}")
    module = importlib.import_module(f"vertex_retrain.components.{_MODULES[name]}")
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(__all__)


class _Package(types.ModuleType):
    """This package, whose attribute for a component is the component.

    Each component lives in a module of its own name (``train_custom_job.py`` defines
    ``train_custom_job``). Importing a submodule sets the package's attribute of that name to
    the module, which would make ``from vertex_retrain.components import train_custom_job``
    hand back the module; the attribute is set to the component instead. The module itself
    stays reachable as ``sys.modules["vertex_retrain.components.train_custom_job"]``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _MODULES and _MODULES[name] == name and isinstance(value, types.ModuleType):
            value = getattr(value, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

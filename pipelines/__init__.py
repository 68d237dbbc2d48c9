"""The pipeline templates: ``weekly_retraining`` and ``train_only``, and :func:`configure`.

::

    from vertex_retrain.pipelines import configure, train_only, weekly_retraining

``retry_google_calls()`` at the end of a pipeline's body gives its Google-calling tasks the
templates' retry policy (:mod:`.retries`).

The names load on first use (kfp and the components are imported then, not by
``import vertex_retrain.pipelines``). Command-line code lives in :mod:`vertex_retrain.cli`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["configure", "retry_google_calls", "train_only", "weekly_retraining"]

_EXPORTS = {
    "configure": "vertex_retrain.pipelines.template_defaults",
    "retry_google_calls": "vertex_retrain.pipelines.retries",
    "train_only": "vertex_retrain.pipelines.experiment",
    "weekly_retraining": "vertex_retrain.pipelines.weekly",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'vertex_retrain.pipelines' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)

"""vertex-retrain: KFP v2 components and pipelines for Vertex AI custom training.

Importing the package imports nothing heavy; see docs/architecture.md for the layers. Its
public entry points load their layer when first used (PEP 562):

- :func:`run_local`: run a pipeline on this machine (:mod:`vertex_retrain.cli.local_api`).
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "run_local"]


def __getattr__(name: str) -> Any:
    if name == "run_local":
        from vertex_retrain.cli.local_api import run_local

        return run_local
    raise AttributeError(f"module 'vertex_retrain' has no attribute {name!r}")

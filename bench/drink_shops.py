"""The drink-shop example as the benchmarks reach it: its pipelines, demo settings and data.

The example's modules are files of examples/drink_shops (not an installed package), loaded by
path as the example's own demo loads them.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "drink_shops"
PIPELINES_REF = f"{EXAMPLE / 'pipelines.py'}:weekly"
"""The weekly pipeline as the command line names it."""


@cache
def module(name: str) -> ModuleType:
    """The example's module ``name`` (``pipelines`` or ``demo``)."""
    spec = importlib.util.spec_from_file_location(
        f"bench_drink_shops_{name}", EXAMPLE / f"{name}.py"
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {EXAMPLE / name}.py")
    loaded = importlib.util.module_from_spec(spec)
    # Registered first: dataclasses and pickling look their module up by name.
    sys.modules[spec.name] = loaded
    spec.loader.exec_module(loaded)
    return loaded


def dataset_declaration() -> dict:
    """The example's dataset declaration, as the pipelines pass it."""
    declaration: dict = module("pipelines").COMMON["dataset_declaration"]
    return declaration

"""The examples as tests reach them: their folders, declarations and configured pipelines.

An example's modules are files, not installed packages (as in a team's own repository), so
they are loaded by path.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from vertex_retrain.contracts.dataset import load_dataset_declaration
from vertex_retrain.contracts.evaluation_declaration import load_evaluation_declaration

REPO = Path(__file__).resolve().parent.parent
DRINK_SHOPS = REPO / "examples" / "drink_shops"
DAILY_DEMAND = REPO / "examples" / "daily_demand"


@cache
def example_module(folder: Path, name: str) -> ModuleType:
    """The example's module ``name`` (``pipelines``, ``demo``), loaded once by path."""
    path = folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{folder.name}_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered first: dataclasses and pickling look their module up by name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def dataset_declaration(folder: Path) -> dict[str, Any]:
    """The example's dataset declaration (``dataset.yaml``), validated."""
    return load_dataset_declaration(folder / "dataset.yaml")


def evaluation_declaration(folder: Path) -> dict[str, Any]:
    """The example's evaluation declaration (``evaluation.yaml``), validated."""
    return load_evaluation_declaration(folder / "evaluation.yaml")


def shipped_pipelines() -> dict[str, Any]:
    """Every pipeline the repository ships, by name: the library's templates and each
    example's configured pipelines (what `vertex-retrain compile` and the examples compile)."""
    from vertex_retrain.pipelines import catalog

    found = {name: catalog.pipeline_by_name(name) for name in sorted(catalog.PIPELINES)}
    for folder in (DRINK_SHOPS, DAILY_DEMAND):
        if (folder / "pipelines.py").is_file():
            module = example_module(folder, "pipelines")
            for attribute in ("weekly", "experiment"):
                pipeline = getattr(module, attribute, None)
                if pipeline is not None:
                    found[pipeline.name] = pipeline
    return found


@contextlib.contextmanager
def importable(folder: Path) -> Iterator[None]:
    """Makes the packages of an example's folder importable while the block runs (as
    ``python -m PACKAGE`` from that folder would)."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))


def prepared_demand_dataset(root: Path) -> Path:
    """The daily demand example's data (3 stores, 8 items, three weeks from 2025-01-06)
    prepared by the library's own split under `root`: a week each to train, select and gate."""
    from demand_forecast import data
    from demand_forecast.synthetic import WorldConfig
    from vertex_retrain.steps.prepare import prepare

    data.generate(str(root / "data"), WorldConfig(stores=3, items=8, seed=5), days=21)
    prepare(
        backend="local",
        data_uri=str(root / "data"),
        dataset_declaration=dataset_declaration(DAILY_DEMAND),
        output_dir=str(root / "prepared"),
        selection_periods=7,
        gate_periods=7,
        as_of="2025-01-27",
    )
    return root / "prepared"


def trained_demand_model(prepared: Path, fuse: Path) -> Path:
    """A daily demand model trained by its entry point on `prepared`, written through
    AIP_MODEL_DIR under GCS_FUSE_ROOT=`fuse`; its folder."""
    import pytest

    from demand_forecast import task

    with pytest.MonkeyPatch.context() as monkey:
        monkey.setenv("GCS_FUSE_ROOT", str(fuse))
        monkey.setenv("AIP_MODEL_DIR", "gs://bucket/run/model/")
        monkey.setenv("CLOUD_ML_HP_METRIC_FILE", str(fuse / "hypertune.json"))
        assert task.main([f"--data={prepared}", "--max_iter=25", "--max_leaf_nodes=7.0"]) == 0
    return fuse / "bucket" / "run" / "model"

"""The machine catalog agrees with the aiplatform protos and with itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vertex_retrain.specs import load_catalog
from vertex_retrain.specs.machine_catalog import DEFAULT_CATALOG_PATH

ROOT = Path(__file__).resolve().parent.parent


def test_catalog_accelerator_enum_matches_aiplatform_v1() -> None:
    from google.cloud.aiplatform_v1.types import AcceleratorType

    catalog = load_catalog()
    proto = set(AcceleratorType.__members__) - {"ACCELERATOR_TYPE_UNSPECIFIED"}
    assert set(catalog.accelerator_enum) == proto
    assert catalog.known_accelerators() | set(catalog.retired) <= proto


def test_catalog_references_only_known_machines() -> None:
    catalog = load_catalog()
    assert set(catalog.bundled_gpus) <= set(catalog.machines)
    assert set(catalog.tpu_machines) <= set(catalog.machines)
    for name, (acc, count) in catalog.bundled_gpus.items():
        assert count >= 1 and acc.startswith("NVIDIA_"), name
    assert catalog.n1_gpus["NVIDIA_TESLA_T4"].keys() == {1, 2, 4}
    assert catalog.n1_gpus["NVIDIA_TESLA_V100"][1][0] == 12
    assert catalog.retired["NVIDIA_TESLA_P100"].date.isoformat() == "2026-09-15"
    assert catalog.tpu_requirements["7x"]["python"] == "3.12"
    assert catalog.sources and catalog.retrieved


def test_load_catalog_reports_malformed_file(tmp_path: Path) -> None:
    bad = tmp_path / "catalog.yaml"
    bad.write_text("version: 1\nmachine_types: {}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="malformed"):
        load_catalog(bad)
    with pytest.raises(ValueError, match="cannot read"):
        load_catalog(tmp_path / "missing.yaml")
    assert load_catalog() is load_catalog(DEFAULT_CATALOG_PATH)


def test_import_specs_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, vertex_retrain.specs\n"
        "heavy = [m for m in sys.modules if m.startswith(('google.cloud.aiplatform', 'torch', "
        "'google_cloud_pipeline_components', 'kfp', 'optuna'))]\n"
        "print(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"

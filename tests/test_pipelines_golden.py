"""Golden files of every compiled pipeline: a change to the compiled output is deliberate.

Volatile fields (the KFP SDK version, image tags) are normalised first. When a golden file
differs, the test prints the new text; run with ``UPDATE_GOLDEN=1`` to accept it.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

import pytest
import yaml

from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.pipelines import catalog

GOLDEN_DIR = Path(__file__).parent / "golden"


def normalise(spec: dict) -> str:
    """Renders a compiled spec with volatile fields replaced by stable markers."""
    text = yaml.safe_dump(spec, sort_keys=True, width=100)
    text = re.sub(r"sdkVersion: kfp-[\w.+-]+", "sdkVersion: kfp-<version>", text)
    text = re.sub(r"'kfp==[\w.+-]+'", "'kfp==<version>'", text)
    return re.sub(r"(image: [^\s:@]+(?:/[^\s:@]+)*)[:@][^\s]+", r"\1:<tag>", text)


@pytest.mark.parametrize("name", sorted(catalog.PIPELINES))
def test_pipeline_compiles_to_golden_file(name: str) -> None:
    actual = normalise(compile_to_dict(catalog.pipeline_by_name(name)))
    golden = GOLDEN_DIR / f"{name}.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1" or not golden.exists():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        if os.environ.get("UPDATE_GOLDEN") != "1":
            pytest.fail(f"{golden} did not exist; wrote it. Review and commit it.")
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=str(golden),
                tofile="compiled now",
            )
        )
        pytest.fail(
            f"compiled {name} differs from {golden}. If the change is intended, run "
            f"UPDATE_GOLDEN=1 pytest {__file__}\n{diff}"
        )


def test_normalise_masks_sdk_version_and_image_tags() -> None:
    spec = {
        "sdkVersion": "kfp-2.17.3",
        "deploymentSpec": {"executors": {"e": {"container": {"image": "eu.pkg.dev/p/r/i:1.2"}}}},
    }
    text = normalise(spec)
    assert "kfp-<version>" in text and "2.17.3" not in text
    assert "image: eu.pkg.dev/p/r/i:<tag>" in text

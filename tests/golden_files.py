"""Golden files of compiled specs: one normaliser and one comparison for every golden test.

A golden file holds a compiled spec's structure: inputs, outputs, the DAG and its wiring,
conditions, caching and retry options, images and commands. It holds no program text and no
prose: the components' embedded source becomes a marker, and every ``description`` (a
docstring's words) is dropped, so editing a docstring or a component's body fails no golden
test; changing what a pipeline does does. A golden test never writes into ``tests/`` by
itself: a missing or different golden file fails with the diff, and only ``UPDATE_GOLDEN=1``
writes the compiled structure, for a person to review and commit.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

GOLDEN_DIR = Path(__file__).parent / "golden"
UPDATE_VARIABLE = "UPDATE_GOLDEN"


SOURCE_MARKER = "<the component's Python source>"


def structure(value: Any) -> Any:
    """``value`` (a compiled spec, or any part of it) without prose and program text."""
    if isinstance(value, dict):
        return {k: structure(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [structure(item) for item in value]
    if isinstance(value, str) and "\ndef " in value and "import kfp" in value:
        return SOURCE_MARKER  # a lightweight component's embedded module
    return value


def normalise(spec: dict[str, Any]) -> str:
    """Renders a compiled spec's structure (:func:`structure`) with volatile fields (KFP SDK
    version, image tags and digests) replaced by stable markers."""
    text = yaml.safe_dump(structure(spec), sort_keys=True, width=100)
    text = re.sub(r"sdkVersion: kfp-[\w.+-]+", "sdkVersion: kfp-<version>", text)
    text = re.sub(r"'kfp==[\w.+-]+'", "'kfp==<version>'", text)
    return re.sub(r"(image: [^\s:@]+(?:/[^\s:@]+)*)[:@][^\s]+", r"\1:<tag>", text)


def updating() -> bool:
    """Whether this run may write golden files (``UPDATE_GOLDEN=1``)."""
    return os.environ.get(UPDATE_VARIABLE) == "1"


def check_golden(golden: Path, actual: str, test_file: str) -> None:
    """Fails unless `golden` holds exactly `actual`; writes it instead under UPDATE_GOLDEN=1.

    Args:
        golden: the golden file.
        actual: the normalised text compiled now.
        test_file: the calling test's file, named in the message that says how to update.
    """
    if updating():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    how = f"If the change is intended, run {UPDATE_VARIABLE}=1 pytest {test_file} and review it."
    if not golden.is_file():
        pytest.fail(f"golden file {golden} is missing. {how}\ncompiled now:\n{actual}")
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
        pytest.fail(f"compiled spec differs from {golden}. {how}\n{diff}")

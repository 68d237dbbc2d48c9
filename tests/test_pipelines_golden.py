"""Golden files of every compiled pipeline: a change to the compiled output is deliberate.

Volatile fields (the KFP SDK version, image tags) are normalised first
(:mod:`tests.golden_files`). A missing or different golden file fails with the diff; run with
``UPDATE_GOLDEN=1`` to write the compiled text, then review and commit it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden_files import GOLDEN_DIR, check_golden, normalise
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.pipelines import catalog


@pytest.mark.parametrize("name", sorted(catalog.PIPELINES))
def test_pipeline_compiles_to_golden_file(name: str) -> None:
    actual = normalise(compile_to_dict(catalog.pipeline_by_name(name)))
    check_golden(GOLDEN_DIR / f"{name}.yaml", actual, __file__)


def test_normalise_keeps_structure_and_drops_prose_and_program_text() -> None:
    spec = {
        "components": {"c": {"inputDefinitions": {"parameters": {"x": {
            "description": "a docstring's words", "parameterType": "STRING"}}}}},
        "deploymentSpec": {"executors": {"e": {"container": {"command": [
            "sh", "-ec", "exec python3 -m kfp.dsl.executor_main",
            "\nimport kfp\nfrom kfp import dsl\n\ndef c(x: str) -> None:\n    pass\n"]}}}},
    }  # fmt: skip
    text = normalise(spec)
    assert "parameterType: STRING" in text and "executor_main" in text
    assert "docstring" not in text and "def c" not in text
    assert "<the component's Python source>" in text


def test_normalise_masks_sdk_version_and_image_tags() -> None:
    spec = {
        "sdkVersion": "kfp-2.17.3",
        "deploymentSpec": {"executors": {"e": {"container": {"image": "eu.pkg.dev/p/r/i:1.2"}}}},
    }
    text = normalise(spec)
    assert "kfp-<version>" in text and "2.17.3" not in text
    assert "image: eu.pkg.dev/p/r/i:<tag>" in text


def test_check_golden_fails_on_a_missing_file_without_writing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    golden = tmp_path / "golden" / "absent.yaml"
    with pytest.raises(pytest.fail.Exception, match="is missing"):
        check_golden(golden, "a: 1\n", __file__)
    assert not golden.exists()


def test_check_golden_fails_with_the_diff_and_leaves_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    golden = tmp_path / "spec.yaml"
    golden.write_text("a: 1\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception, match=r"(?s)-a: 1\n\+a: 2"):
        check_golden(golden, "a: 2\n", __file__)
    assert golden.read_text(encoding="utf-8") == "a: 1\n"


def test_check_golden_writes_only_under_update_golden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    golden = tmp_path / "new" / "spec.yaml"
    check_golden(golden, "a: 2\n", __file__)
    assert golden.read_text(encoding="utf-8") == "a: 2\n"

"""``preflight FILE.yaml`` for a pipeline compiled with plain ``kfp.compiler``: the placeholder
component image and an unresolved digest are refused, a pinned image passes that check.

No ``from __future__ import annotations``: KFP reads the test pipeline's annotations as types.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.preflight_flags import SUBMISSION_FLAGS
from vertex_retrain.cli.main import main

PINNED = "europe-west4-docker.pkg.dev/p/ml/vertex-retrain@sha256:" + "ab" * 32
UNRESOLVED = "europe-west4-docker.pkg.dev/p/ml/vertex-retrain@sha256:..."


@pytest.fixture
def component_image() -> Iterator[Any]:
    """``set_component_image`` for one test, then the placeholder again."""
    from vertex_retrain.components import set_component_image
    from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE

    yield set_component_image
    set_component_image(DEFAULT_COMPONENT_IMAGE)


def _compile_plainly(path: Path) -> Path:
    from kfp import compiler, dsl

    from vertex_retrain.components import register_model

    @dsl.pipeline(name="plain-register")
    def plain(model_dir: str = "gs://b/model") -> None:
        trained = dsl.importer(artifact_uri=model_dir, artifact_class=dsl.Model)
        register_model(
            backend="vertex",
            model=trained.output,
            display_name="m",
            serving_image_uri="europe-west4-docker.pkg.dev/p/serving/m:1",
        )

    compiler.Compiler().compile(plain, str(path))
    return path


def _preflight(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["preflight", str(path), "--json", *SUBMISSION_FLAGS])
    report = json.loads(capsys.readouterr().out)
    return code, [p["code"] for r in report for p in r["problems"] if p["severity"] == "error"]


def test_preflight_file_refuses_the_placeholder_component_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, errors = _preflight(_compile_plainly(tmp_path / "p.yaml"), capsys)
    assert code == 1 and "component-image-placeholder" in errors


def test_preflight_file_refuses_an_unresolved_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], component_image: Any
) -> None:
    component_image(UNRESOLVED)
    code, errors = _preflight(_compile_plainly(tmp_path / "p.yaml"), capsys)
    assert code == 1 and errors == ["image-digest"]


def test_preflight_file_accepts_an_image_set_for_plain_compiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], component_image: Any
) -> None:
    component_image(PINNED)
    path = _compile_plainly(tmp_path / "p.yaml")
    assert PINNED in path.read_text(encoding="utf-8")
    code, errors = _preflight(path, capsys)
    assert (code, errors) == (0, [])


def test_preflight_refuses_an_unresolved_digest_in_an_image_parameter() -> None:
    from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems

    spec: dict[str, Any] = {"pipelineInfo": {"name": "x"}, "root": {"dag": {"tasks": {}}}}
    problems = pipeline_problems(spec, {"serving_image_uri": UNRESOLVED}, Settings())
    assert [p.code for p in problems if p.severity == "error"] == ["image-digest"]
    assert not [
        p
        for p in pipeline_problems(spec, {"serving_image_uri": PINNED}, Settings())
        if p.severity == "error"
    ]

"""Local runs and Vertex's project/location placeholders (docs/components.md explains).

Our components default ``project`` and ``location`` to Vertex's pipeline placeholders, which
only Vertex resolves. kfp.local fails on them with a bare ``IndexError`` in its placeholder
code, before any of our code runs, so a local run passes both explicitly; these tests pin
kfp.local's behaviour (if a kfp release resolves them, the first test says so) and the line
the command line prints instead of the IndexError.
"""

from pathlib import Path

import pytest
from kfp import dsl

from tests.kfp_local_session import init_kfp_local, task_temp_files_in
from vertex_retrain.cli.local_run import explain_kfp_error, placeholder_hint
from vertex_retrain.components.register_model import register_model


def _pipeline(**placement: str) -> object:
    @dsl.pipeline(name="register-only")
    def register_only() -> None:
        model = dsl.importer(artifact_uri="gs://b/model", artifact_class=dsl.Model, reimport=False)
        register_model(
            backend="local",
            model=model.output,
            display_name="m",
            serving_image_uri="example.com/serve:1",
            **placement,
        )

    return register_only


@pytest.fixture
def kfp_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    (tmp_path / "root" / "gcs" / "b" / "model").mkdir(parents=True)
    (tmp_path / "root" / "gcs" / "b" / "model" / "model.json").write_text("{}")
    task_temp_files_in(monkeypatch, tmp_path / "tmp")
    init_kfp_local(tmp_path / "pr")
    return tmp_path


def test_kfp_local_without_project_and_location_fails_with_its_index_error(
    kfp_local: Path,
) -> None:
    with pytest.raises(IndexError) as raised:
        _pipeline()()
    assert explain_kfp_error(raised.value) == placeholder_hint()
    assert "project=" in placeholder_hint() and "location=" in placeholder_hint()
    assert "vertex_retrain.run_local" in placeholder_hint()
    assert explain_kfp_error(IndexError("other")) == "other"


@pytest.mark.slow
def test_kfp_local_with_explicit_project_and_location_registers(kfp_local: Path) -> None:
    from vertex_retrain.backends.local.model_registry.registry import ModelRegistry

    _pipeline(project="local-project", location="local")()
    assert [v.version_id for v in ModelRegistry().list_versions("m")] == ["1"]

"""What register_model records with a version."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.vertex_build import FakeStorageClient
from tests.fakes.vertex_serving import FakeModelServiceClient
from vertex_retrain.backends.base import Backend
from vertex_retrain.backends.local.backend import LocalBackend
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.steps.register import (
    RegistrationRequest,
    register,
    serving_container,
    version_description,
)


def _request(**changes: object) -> RegistrationRequest:
    fields: dict = dict(
        backend="vertex",
        artifact_uri="gs://b/model",
        display_name="guess-your-order",
        serving_image_uri="eu.pkg.dev/p/r/serve:1",
    )
    fields.update(changes)
    return RegistrationRequest(**fields)


def test_version_description_carries_lineage_and_evaluation() -> None:
    text = version_description(
        _request(
            make_champion=True,
            pipeline_run="weekly-7",
            dataset_uri="gs://b/data",
            evaluation_metrics={"candidate_ndcg_at_10": 0.612345678, "is_better": 1.0},
        )
    )
    assert text.startswith("champion version; pipeline run weekly-7; data gs://b/data")
    assert "candidate_ndcg_at_10=0.612346" in text


def test_version_description_is_bounded() -> None:
    metrics = {f"metric_{i:04d}": float(i) for i in range(2000)}
    assert len(version_description(_request(evaluation_metrics=metrics))) == 2000


def test_serving_container_uses_command_only_when_given() -> None:
    assert "command" not in serving_container(_request())
    spec = serving_container(_request(serving_command=["python", "-m", "trainer.serve"]))
    assert spec["command"] == ["python", "-m", "trainer.serve"]
    assert spec["predictRoute"] == "/predict" and spec["healthRoute"] == "/health"


def test_version_description_records_the_serving_package_as_lineage() -> None:
    text = version_description(
        _request(serving_package_uri="gs://b/p/m-1.0-py3-none-any.whl", serving_extras=["serve"])
    )
    assert "serving package gs://b/p/m-1.0-py3-none-any.whl[serve]" in text
    assert "serving package" not in version_description(_request())


# --- a model folder that is missing or empty is never registered ---------------------------

FOLDERS = {
    "missing": {},
    "empty": {"": None},
    "only empty subfolders": {"nested/deeper": None},
    "a file deep inside": {"nested/deeper/weights.bin": b"\0"},
}


def _write_local(root: Path, uri: str, entries: dict[str, bytes | None]) -> None:
    folder = root / "gcs" / uri[len("gs://") :]
    for relative, data in entries.items():
        if data is None:
            (folder / relative).mkdir(parents=True, exist_ok=True)
        else:
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(data)


def _write_vertex(storage: FakeStorageClient, uri: str, entries: dict[str, bytes | None]) -> None:
    for relative, data in entries.items():
        # Cloud Storage has no folders; consoles keep an empty one as a `name/` object.
        name = f"{uri}/{relative}".rstrip("/") + ("/" if data is None else "")
        storage.objects[name] = data or b""


@pytest.mark.parametrize("backend_name", ["local", "vertex"])
@pytest.mark.parametrize("case", list(FOLDERS))
def test_register_refuses_a_missing_or_empty_model_folder(
    tmp_path: Path, backend_name: str, case: str
) -> None:
    uri = "gs://b/runs/1/model"
    _write_local(tmp_path, "gs://b/runs/1/model-sibling", {"weights.bin": b"\0"})
    backend: Backend
    if backend_name == "local":
        backend = LocalBackend(tmp_path)
        _write_local(tmp_path, uri, FOLDERS[case])
    else:
        storage, models = FakeStorageClient(), FakeModelServiceClient()
        storage.objects["gs://b/runs/1/model-sibling/weights.bin"] = b"\0"
        _write_vertex(storage, uri, FOLDERS[case])
        backend = VertexBackend("p", "l", model_client=models, storage_client=storage)
    request = _request(backend=backend_name, artifact_uri=uri, project="p", location="l")
    if case == "a file deep inside":
        assert register(request, backend=backend).version_id == "1"
        return
    with pytest.raises(ValueError, match="missing or empty") as refused:
        register(request, backend=backend)
    assert uri in str(refused.value)
    if backend_name == "local":
        assert LocalBackend(tmp_path).registry.list_models() == []
    else:
        assert models.versions == {} and "upload_model" not in models.calls

"""GCPC interop: our google.VertexModel / google.VertexEndpoint artifacts feed GCPC ops.

The pipeline compiles only: GCPC's ops call Vertex AI and do not run locally. The compiled spec
is read back to check that each GCPC input is wired to our task's output and that the two
sides declare the same artifact schema.
"""

# No `from __future__ import annotations`: KFP reads the pipeline's annotations as types.
from typing import Any

import pytest
from google_cloud_pipeline_components.v1.batch_predict_job import ModelBatchPredictOp
from google_cloud_pipeline_components.v1.endpoint import ModelDeployOp
from google_cloud_pipeline_components.v1.model import ModelUploadOp
from kfp import dsl
from kfp.dsl import Model

from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.components.deploy_model import deploy_model
from vertex_retrain.components.register_model import register_model


@dsl.pipeline(name="gcpc-interop")
def gcpc_interop(
    model_dir: str = "gs://shop/runs/run-7/train/model",
    project: str = "{{$.pipeline_google_cloud_project_id}}",
    location: str = "{{$.pipeline_google_cloud_location}}",
) -> None:
    """Our register/deploy outputs into GCPC ops, and a GCPC model into our deploy."""
    trained = dsl.importer(artifact_uri=model_dir, artifact_class=Model)
    registered = register_model(
        backend="vertex",
        model=trained.output,
        display_name="guess-your-order",
        serving_image_uri="europe-west4-docker.pkg.dev/shop/serving/recommender:1",
        project=project,
        location=location,
    )
    ModelBatchPredictOp(
        job_display_name="weekly-batch-scores",
        model=registered.outputs["vertex_model"],
        instances_format="jsonl",
        gcs_source_uris=["gs://shop/batch/instances.jsonl"],
        gcs_destination_output_uri_prefix="gs://shop/batch/predictions",
        project=project,
        location=location,
    )
    endpoint = deploy_model(
        backend="vertex",
        vertex_model=registered.outputs["vertex_model"],
        endpoint_display_name="guess-your-order",
        project=project,
        location=location,
    )
    ModelDeployOp(
        model=registered.outputs["vertex_model"],
        endpoint=endpoint.outputs["endpoint"],
        dedicated_resources_machine_type="n1-standard-4",
        dedicated_resources_min_replica_count=1,
        dedicated_resources_max_replica_count=1,
    )
    uploaded = ModelUploadOp(display_name="uploaded-by-gcpc", project=project, location=location)
    deploy_model(
        backend="vertex",
        vertex_model=uploaded.outputs["model"],
        endpoint_display_name="gcpc-models",
        project=project,
        location=location,
    )


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return compile_to_dict(gcpc_interop)


def _artifact_wiring(spec: dict[str, Any], task: str, input_name: str) -> tuple[str, str]:
    """(producer task, producer output) feeding ``task``'s input artifact ``input_name``."""
    source = spec["root"]["dag"]["tasks"][task]["inputs"]["artifacts"][input_name]
    wired = source["taskOutputArtifact"]
    return wired["producerTask"], wired["outputArtifactKey"]


def _schema(spec: dict[str, Any], task: str, side: str, name: str) -> str:
    component = spec["root"]["dag"]["tasks"][task]["componentRef"]["name"]
    definitions = spec["components"][component][f"{side}Definitions"]["artifacts"]
    return str(definitions[name]["artifactType"]["schemaTitle"])


def test_gcpc_interop_batch_predict_takes_our_registered_model(spec: dict[str, Any]) -> None:
    assert _artifact_wiring(spec, "model-batch-predict", "model") == (
        "register-model",
        "vertex_model",
    )
    ours = _schema(spec, "register-model", "output", "vertex_model")
    assert ours == "google.VertexModel"
    assert _schema(spec, "model-batch-predict", "input", "model") == ours


def test_gcpc_interop_model_deploy_takes_our_model_and_endpoint(spec: dict[str, Any]) -> None:
    assert _artifact_wiring(spec, "model-deploy", "model") == ("register-model", "vertex_model")
    assert _artifact_wiring(spec, "model-deploy", "endpoint") == ("deploy-model", "endpoint")
    ours = _schema(spec, "deploy-model", "output", "endpoint")
    assert ours == "google.VertexEndpoint"
    assert _schema(spec, "model-deploy", "input", "endpoint") == ours
    assert _schema(spec, "model-deploy", "input", "model") == "google.VertexModel"


def test_gcpc_interop_our_deploy_takes_a_model_uploaded_by_gcpc(spec: dict[str, Any]) -> None:
    assert _artifact_wiring(spec, "deploy-model-2", "vertex_model") == ("model-upload", "model")
    assert _schema(spec, "model-upload", "output", "model") == _schema(
        spec, "deploy-model-2", "input", "vertex_model"
    )


def test_gcpc_interop_region_comes_from_the_pipeline_not_a_default(spec: dict[str, Any]) -> None:
    for task in ("register-model", "model-batch-predict", "deploy-model", "model-upload"):
        parameters = spec["root"]["dag"]["tasks"][task]["inputs"]["parameters"]
        assert parameters["location"] == {"componentInputParameter": "location"}, task

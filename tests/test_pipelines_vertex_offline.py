"""Each compiled pipeline builds an ``aiplatform.PipelineJob`` offline (no call to Google).

This checks that the SDK accepts the template, its parameter types and defaults, and an
override of every kind; it does not prove the pipeline runs on Vertex.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials

from tests.examples import DRINK_SHOPS, example_module, shipped_pipelines
from vertex_retrain.cli.compiling import compile_to_dict, write_spec
from vertex_retrain.cli.params import ParameterError
from vertex_retrain.cli.vertex_submit import build_pipeline_job

SHIPPED = shipped_pipelines()
CHAIN = example_module(DRINK_SHOPS, "pipelines")


def _required(spec: dict) -> dict:
    """A value for each parameter the template leaves without a default (the chain's)."""
    definitions = spec["root"]["inputDefinitions"]["parameters"]
    return {
        name: CHAIN.COMMON.get(name, {"source_uri": CHAIN.SOURCE_URI}.get(name, CHAIN.BUCKET))
        for name, definition in definitions.items()
        if "defaultValue" not in definition
    } | ({"package_uri": CHAIN.PACKAGE_URI} if "package_uri" in definitions else {})


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_pipeline_job_accepts_compiled_template_and_defaults(name: str, tmp_path: Path) -> None:
    template = tmp_path / f"{name}.yaml"
    spec = compile_to_dict(SHIPPED[name], "eu.pkg.dev/p/r/c:1")
    write_spec(spec, template)
    given = {"training_args": ["--epochs", "2"], "hyperparameters": {"learning_rate": 0.01}}
    job = build_pipeline_job(
        template,
        project="drink-shops-prod",
        location="asia-east1",
        pipeline_root="gs://drink-shops-ml/pipeline-root",
        parameter_values={"backend": "vertex", **_required(spec), **given},
        credentials=AnonymousCredentials(),
    )
    runtime = job._gca_resource.runtime_config
    assert runtime.gcs_output_directory == "gs://drink-shops-ml/pipeline-root"
    values = dict(runtime.parameter_values)
    assert values["backend"] == "vertex"
    assert list(values["training_args"]) == ["--epochs", "2"]
    # Every executor of ours runs in the component image given at compile time; GCPC's steps
    # (the failure notice's e-mail) keep GCPC's image.
    spec = job._gca_resource.pipeline_spec
    images = {e["container"]["image"] for e in spec["deploymentSpec"]["executors"].values()}
    gcpc = {image for image in images if "google-cloud-pipeline-components" in image}
    assert images - gcpc == {"eu.pkg.dev/p/r/c:1"}


def test_pipeline_job_refuses_wrong_parameter_type_before_submission(tmp_path: Path) -> None:
    template = tmp_path / "weekly.yaml"
    write_spec(compile_to_dict(CHAIN.weekly), template)
    with pytest.raises(ParameterError, match="training_args"):
        build_pipeline_job(
            template,
            project="p",
            location="asia-east1",
            pipeline_root="gs://drink-shops-ml/root",
            parameter_values={"training_args": "many"},
            credentials=AnonymousCredentials(),
        )

"""Each compiled pipeline builds an ``aiplatform.PipelineJob`` offline (no call to Google).

This checks that the SDK accepts the template, its parameter types and defaults, and an
override of every kind; it does not prove the pipeline runs on Vertex.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials

from vertex_retrain.cli.compiling import compile_to_dict, write_spec
from vertex_retrain.cli.params import ParameterError
from vertex_retrain.cli.vertex_submit import build_pipeline_job
from vertex_retrain.pipelines import catalog


@pytest.mark.parametrize("name", sorted(catalog.PIPELINES))
def test_pipeline_job_accepts_compiled_template_and_defaults(name: str, tmp_path: Path) -> None:
    template = tmp_path / f"{name}.yaml"
    write_spec(compile_to_dict(catalog.pipeline_by_name(name), "eu.pkg.dev/p/r/c:1"), template)
    job = build_pipeline_job(
        template,
        project="drink-shops-prod",
        location="asia-east1",
        pipeline_root="gs://drink-shops-ml/pipeline-root",
        parameter_values={"backend": "vertex", "epochs": 2, "learning_rate": 0.01},
        credentials=AnonymousCredentials(),
    )
    runtime = job._gca_resource.runtime_config
    assert runtime.gcs_output_directory == "gs://drink-shops-ml/pipeline-root"
    values = dict(runtime.parameter_values)
    assert values["backend"] == "vertex"
    assert values["epochs"] == 2
    # Every executor of ours runs in the component image given at compile time; GCPC's steps
    # (the failure notice's e-mail) keep GCPC's image.
    spec = job._gca_resource.pipeline_spec
    images = {e["container"]["image"] for e in spec["deploymentSpec"]["executors"].values()}
    gcpc = {image for image in images if "google-cloud-pipeline-components" in image}
    assert images - gcpc == {"eu.pkg.dev/p/r/c:1"}


def test_pipeline_job_refuses_wrong_parameter_type_before_submission(tmp_path: Path) -> None:
    template = tmp_path / "weekly.yaml"
    write_spec(compile_to_dict(catalog.pipeline_by_name("weekly-retraining")), template)
    with pytest.raises(ParameterError, match="epochs"):
        build_pipeline_job(
            template,
            project="p",
            location="asia-east1",
            pipeline_root="gs://drink-shops-ml/root",
            parameter_values={"epochs": "many"},
            credentials=AnonymousCredentials(),
        )

"""Building `aiplatform.PipelineJob` offline from a compiled template, and submitting it."""

# No `from __future__ import annotations`: KFP reads the component's annotations as types.

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.cli.params import ParameterError, load_parameter_definitions, parse_overrides
from vertex_retrain.cli.vertex_submit import SubmitError, build_pipeline_job, submit

ROOT = Path(__file__).resolve().parent.parent


def compile_tiny_pipeline(path: Path) -> Path:
    """Compiles a one-step pipeline with a parameter of every KFP type (and a required one)."""
    from kfp import compiler, dsl

    @dsl.component(base_image="python:3.11-slim")
    def echo(text: str, count: int, rate: float, flag: bool, items: list, spec: dict) -> str:
        return f"{text}{count}{rate}{flag}{items}{spec}"

    @dsl.pipeline(name="tiny-params")
    def tiny(
        data_uri: str,
        text: str = "hello",
        count: int = 3,
        rate: float = 0.5,
        flag: bool = True,
        items: list = [1, 2],  # noqa: B006 - KFP reads defaults from the signature
        spec: dict = {"a": 1},  # noqa: B006
    ) -> None:
        echo(text=data_uri, count=count, rate=rate, flag=flag, items=items, spec=spec)

    compiler.Compiler().compile(tiny, str(path))
    return path


@pytest.fixture(scope="module")
def tiny_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_tiny_pipeline(tmp_path_factory.mktemp("tiny") / "tiny.yaml")


def _build(template: Path, **overrides: Any) -> Any:
    from google.auth.credentials import AnonymousCredentials

    arguments: dict[str, Any] = {
        "project": "drink-shops",
        "location": "asia-east1",
        "pipeline_root": "gs://drink-shops-pipelines/root",
        "parameter_values": {"data_uri": "gs://drink-shops-data/orders"},
        "credentials": AnonymousCredentials(),
    }
    arguments.update(overrides)
    return build_pipeline_job(template, **arguments)


def test_build_pipeline_job_accepts_every_parameter_type_and_keeps_defaults(
    tiny_template: Path,
) -> None:
    overrides = parse_overrides(
        [
            "data_uri=gs://d/o",
            "count=7",
            "rate=0.25",
            "flag=false",
            'items=["x", 2]',
            'spec={"k": [1, {"z": true}]}',
        ],
        load_parameter_definitions(tiny_template),
    )
    job = _build(tiny_template, parameter_values=overrides, enable_caching=False)

    from google.protobuf import json_format

    runtime = json_format.MessageToDict(job.runtime_config._pb)
    assert runtime["gcsOutputDirectory"] == "gs://drink-shops-pipelines/root"
    assert runtime["parameterValues"] == {
        "data_uri": "gs://d/o",
        "count": 7.0,
        "rate": 0.25,
        "flag": False,
        "items": ["x", 2.0],
        "spec": {"k": [1.0, {"z": True}]},
    }
    assert "text" not in runtime["parameterValues"]  # left to the template's default
    defaults = job.pipeline_spec["root"]["inputDefinitions"]["parameters"]
    assert defaults["text"]["defaultValue"] == "hello"
    assert job.project == "drink-shops" and job.location == "asia-east1"
    assert job.job_id.startswith("tiny-params-")
    # The public accessors refuse an unsubmitted job; the request-to-be is _gca_resource.
    assert job._gca_resource.display_name == "tiny-params"
    task = job.pipeline_spec["root"]["dag"]["tasks"]["echo"]
    assert task["cachingOptions"].get("enableCache", False) is False


def test_build_pipeline_job_checks_types_before_the_sdk_sees_them(tiny_template: Path) -> None:
    with pytest.raises(ParameterError, match="'count' expects NUMBER_INTEGER"):
        _build(tiny_template, parameter_values={"data_uri": "gs://d", "count": "7"})
    with pytest.raises(ParameterError, match="'data_uri' has no default"):
        _build(tiny_template, parameter_values={})
    with pytest.raises(ParameterError, match="did you mean 'count'"):
        _build(tiny_template, parameter_values={"data_uri": "gs://d", "cuont": 1})


@pytest.mark.parametrize("root", ["/tmp/root", "s3://bucket/root", "gs://"])
def test_build_pipeline_job_rejects_a_pipeline_root_that_is_not_cloud_storage(
    tiny_template: Path, root: str
) -> None:
    with pytest.raises(SubmitError, match="expected gs://BUCKET/PATH"):
        _build(tiny_template, pipeline_root=root)


class _RecordingJob:
    resource_name = "projects/1/locations/asia-east1/pipelineJobs/tiny-params-1"

    def __init__(self) -> None:
        self.submitted: list[dict[str, Any]] = []

    def submit(self, **kwargs: Any) -> None:
        self.submitted.append(kwargs)


def test_submit_passes_the_service_account_and_network_and_returns_the_job_name() -> None:
    job = _RecordingJob()
    name = submit(
        job,  # type: ignore[arg-type]
        service_account="retrain@drink-shops.iam.gserviceaccount.com",
        network="projects/1/global/networks/vpc",
    )
    assert name == _RecordingJob.resource_name
    assert job.submitted == [
        {
            "service_account": "retrain@drink-shops.iam.gserviceaccount.com",
            "network": "projects/1/global/networks/vpc",
        }
    ]


def test_vertex_submit_modules_import_without_aiplatform_or_kfp() -> None:
    modules = [
        "vertex_retrain.cli.params",
        "vertex_retrain.schedules.declarations_file",
        "vertex_retrain.cli.schedule_source",
        "vertex_retrain.cli.schedule_command",
        "vertex_retrain.cli.upload_command",
        "vertex_retrain.cli.pipeline_source",
        "vertex_retrain.cli.schedule_reconcile",
        "vertex_retrain.cli.vertex_schedule_client",
        "vertex_retrain.cli.template_upload",
        "vertex_retrain.cli.vertex_submit",
    ]
    code = (
        f"import sys\nfor name in {modules!r}: __import__(name)\n"
        "heavy = [m for m in sys.modules if m.startswith(('google.cloud.aiplatform', 'kfp', "
        "'torch'))]\nprint(heavy)\nsys.exit(1 if heavy else 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr

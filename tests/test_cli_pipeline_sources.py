"""Every command takes a user's pipeline: a library template name, a compiled pipeline file,
``module:attr`` or ``path/to/file.py:attr`` (vertex_retrain.cli.pipeline_source); and
``vertex_retrain.run_local`` runs one from Python without kfp.local's IndexError.

The pipelines are small ones of these tests (tests/data/pipelines), not the templates.
"""

from __future__ import annotations

import argparse
import io
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from vertex_retrain.cli.compiling import compile_to_dict, write_spec
from vertex_retrain.cli.main import main
from vertex_retrain.cli.pipeline_source import PipelineReferenceError, resolve_pipeline

DATA = Path(__file__).resolve().parent / "data" / "pipelines"
CACHED_STEPS = f"{DATA / 'cached_steps.py'}:cached_steps"
USER_JOBS = DATA / "user_jobs.py"
IMAGE = "europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:1"


@pytest.fixture
def compiled_yaml(tmp_path: Path) -> Path:
    """cached_steps compiled by KFP's compiler, as another repository would have it."""
    from kfp import compiler

    from tests.data.pipelines.cached_steps import cached_steps

    path = tmp_path / "cached-steps.yaml"
    compiler.Compiler().compile(cached_steps, str(path))
    return path


def test_resolve_pipeline_takes_a_template_a_compiled_file_a_module_and_a_file(
    compiled_yaml: Path, tmp_path: Path
) -> None:
    template = resolve_pipeline("train-only")
    assert (template.kind, template.name) == ("template", "train-only")
    compiled = resolve_pipeline(str(compiled_yaml))
    assert (compiled.kind, compiled.name) == ("compiled", "cached-steps")
    assert compiled.parameter_names() == {"tally", "rows"}
    module = resolve_pipeline("tests.data.pipelines.cached_steps:cached_steps")
    assert (module.kind, module.name) == ("python", "cached-steps")
    by_file = resolve_pipeline(CACHED_STEPS)
    assert by_file.spec()["pipelineInfo"]["name"] == "cached-steps"
    # A relative path is read from the base folder (a schedules file's).
    relative = resolve_pipeline("cached_steps.py:cached_steps", base=DATA)
    assert relative.name == "cached-steps"
    # A compiled file given with a component image has its executors' images replaced.
    images = {
        executor["container"]["image"]
        for executor in compiled.spec(IMAGE)["deploymentSpec"]["executors"].values()
    }
    assert images == {IMAGE}


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("weekly", "no pipeline named 'weekly': not a library template (train-only, weekly-"),
        ("missing.yaml", "missing.yaml: cannot read a compiled pipeline"),
        (str(DATA / "cached_steps.py"), "name the pipeline in the file, e.g. "),
        (f"{DATA / 'cached_steps.py'}:nope", "has no attribute 'nope'; its pipelines: cached_"),
        (f"{DATA / 'cached_steps.py'}:make_rows", "make_rows is a PythonComponent, not a pipe"),
        ("no_such_module_here:pipeline", "no module named 'no_such_module_here'"),
        ("not a module:pipeline", "is neither a module name (package.module) nor a .py file"),
    ],
)
def test_resolve_pipeline_refuses_what_names_no_pipeline_in_one_line(
    reference: str, message: str
) -> None:
    with pytest.raises(PipelineReferenceError) as raised:
        resolve_pipeline(reference)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_resolve_pipeline_reports_a_file_that_fails_to_load_in_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_dependency_anywhere\n")
    with pytest.raises(PipelineReferenceError, match="ModuleNotFoundError: No module named"):
        resolve_pipeline(f"{broken}:pipeline")


@pytest.mark.parametrize("command", ["run", "estimate", "preflight", "compile", "upload"])
def test_commands_refuse_an_unknown_pipeline_in_one_line_with_exit_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = {"run": ["--local"], "upload": ["--registry-dir", str(tmp_path / "r")]}
    assert main([command, "my-linear.yaml", *extra.get(command, [])]) == 2
    err = capsys.readouterr().err
    assert "my-linear.yaml" in err and err.count("\n") == 1 and "Traceback" not in err


def test_run_local_runs_a_compiled_pipeline_file(
    root: Path, compiled_yaml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tally = tmp_path / "tally"
    code = main(["run", str(compiled_yaml), "--local", "--param", f"tally={tally}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "run cached-steps succeeded" in out
    assert sorted(tally.read_text().split()) == ["count-rows", "make-rows", "stamp", "uncached"]


def _run_cached_steps(tally: Path, *flags: str) -> str:
    out = io.StringIO()
    from vertex_retrain.cli.run_command import cli_run

    args = argparse.Namespace(
        name=CACHED_STEPS, local=True, param=[f"tally={tally}"], component_image=None,
        no_cache="--no-cache" in flags, json=False, verbose=False,
    )  # fmt: skip
    assert cli_run(args, out=out) == 0, out.getvalue()
    return out.getvalue()


def test_run_local_no_cache_runs_every_task_again(root: Path, tmp_path: Path) -> None:
    tally = tmp_path / "tally"
    _run_cached_steps(tally)
    again = _run_cached_steps(tally, "--no-cache")
    assert "cached from run" not in again
    assert tally.read_text().split().count("make-rows") == 2
    cached = _run_cached_steps(tally)  # without the flag, the same run reuses the outputs
    assert "↺ step make-rows: cached from run cached-steps-" in cached
    assert tally.read_text().split().count("make-rows") == 2


def test_run_on_vertex_with_no_cache_submits_with_caching_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vertex_retrain.cli import vertex_submit

    built: list[dict[str, Any]] = []

    class Job:
        state = type("State", (), {"name": "PIPELINE_STATE_SUCCEEDED"})()

        def wait(self) -> None:
            pass

    def build(template: str, **kwargs: Any) -> Job:
        built.append({**kwargs, "template": yaml.safe_load(Path(template).read_text())})
        return Job()

    monkeypatch.setattr(vertex_submit, "build_pipeline_job", build)
    monkeypatch.setattr(vertex_submit, "submit", lambda job, service_account=None: "jobs/1")
    base = ["run", f"{USER_JOBS}:shaped_by_parameters", "--project", "my-project",
            "--location", "europe-west4", "--pipeline-root", "gs://my-bucket/root",
            "--service-account", "retrain@my-project.iam.gserviceaccount.com",
            "--component-image", IMAGE]  # fmt: skip
    assert main([*base, "--no-cache"]) == 0
    assert main(base) == 0
    assert [b["enable_caching"] for b in built] == [False, None]
    assert built[0]["template"]["pipelineInfo"]["name"] == "shaped-by-parameters"
    assert built[0]["parameter_values"] == {"backend": "vertex"}


def test_compile_writes_only_the_named_pipelines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dist"
    code = main(["compile", f"{USER_JOBS}:shaped_by_parameters", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert sorted(p.name for p in out.rglob("*.yaml")) == ["shaped-by-parameters.yaml"]
    assert "steps: train" in text and "a2" not in text.split("steps")[0]
    assert "on-demand" in text  # its own A100 job is priced


def test_compile_refuses_two_pipelines_of_one_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = f"{USER_JOBS}:shaped_by_parameters"
    assert main(["compile", reference, reference, "--out", str(tmp_path)]) == 2
    assert "two pipelines are named 'shaped-by-parameters'" in capsys.readouterr().err


def test_estimate_prices_the_jobs_of_a_users_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    reference = f"{USER_JOBS}:shaped_by_parameters"
    params = ["--param", "machine_type=a2-highgpu-2g", "--param", "accelerators=2"]
    assert main(["estimate", reference, *params, "--json"]) == 0
    import json

    document = json.loads(capsys.readouterr().out)
    (step,) = document["steps"]
    items = {line["item"] for line in step["lines"]}
    assert any(item.startswith("a2-highgpu-2g") for item in items), items
    assert document["pipeline"] == "shaped-by-parameters"


def test_upload_compiles_a_pipeline_named_by_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.cli import template_upload
    from vertex_retrain.cli.template_upload import LocalDirectoryRegistry

    monkeypatch.setattr(template_upload, "git_revision", lambda: "abc1234")
    registry = tmp_path / "registry"
    reference = f"{USER_JOBS}:shaped_by_parameters"
    assert main(["upload", reference, "--registry-dir", str(registry), "--tag", "rc"]) == 0
    assert "shaped-by-parameters  sha256:" in capsys.readouterr().out
    stored = LocalDirectoryRegistry(registry).path_of("shaped-by-parameters", "rc")
    assert yaml.safe_load(stored.read_text())["pipelineInfo"]["name"] == "shaped-by-parameters"


def test_upload_sends_a_compiled_file_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vertex_retrain.cli import template_upload
    from vertex_retrain.cli.template_upload import LocalDirectoryRegistry

    monkeypatch.setattr(template_upload, "git_revision", lambda: "abc1234")
    template = tmp_path / "shaped.yaml"
    write_spec(compile_to_dict(resolve_pipeline(f"{USER_JOBS}:shaped_by_parameters").component()),
               template)  # fmt: skip
    registry = tmp_path / "registry"
    assert main(["upload", str(template), "--registry-dir", str(registry), "--tag", "rc"]) == 0
    stored = LocalDirectoryRegistry(registry).path_of("shaped-by-parameters", "rc")
    assert stored.read_bytes() == template.read_bytes()


def test_run_local_api_runs_a_pipeline_that_passes_no_project_or_location(
    root: Path, tmp_path: Path
) -> None:
    """kfp.local alone stops with an IndexError on Vertex's project and region placeholders
    (tests/test_cli_project_location.py); the documented route resolves them."""
    from tests.data.pipelines.user_jobs import register_only
    from vertex_retrain import run_local
    from vertex_retrain.backends.local.model_registry.registry import ModelRegistry

    (root / "gcs" / "b" / "model").mkdir(parents=True)
    (root / "gcs" / "b" / "model" / "model.json").write_text("{}")
    outcome = run_local(register_only, console=io.StringIO())
    assert outcome.succeeded, outcome.log_path.read_text()
    assert [v.version_id for v in ModelRegistry().list_versions("m")] == ["1"]


def test_run_local_api_takes_a_reference_and_arguments(root: Path, tmp_path: Path) -> None:
    from vertex_retrain import run_local

    source = tmp_path / "pipes"
    shutil.copytree(DATA, source, ignore=shutil.ignore_patterns("__pycache__"))
    tally = tmp_path / "tally"
    outcome = run_local(
        f"{source / 'cached_steps.py'}:cached_steps",
        {"tally": str(tally), "rows": 2},
        cache=False,
        console=io.StringIO(),
    )
    assert outcome.succeeded
    assert "make-rows" in tally.read_text()


def test_vertex_retrain_names_run_local_lazily() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, vertex_retrain\n"
        "assert 'kfp' not in sys.modules and 'vertex_retrain.cli' not in sys.modules\n"
        "from vertex_retrain import run_local\n"
        "print(run_local.__module__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "vertex_retrain.cli.local_api"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        import vertex_retrain

        vertex_retrain.nope  # noqa: B018


def test_run_local_api_resolves_the_run_time_placeholders_of_a_data_window(root: Path) -> None:
    """The README's old route, a bare kfp.local, stops on data_window with an IndexError."""
    from tests.data.pipelines.user_jobs import week_only
    from vertex_retrain import run_local

    outcome = run_local(week_only, console=io.StringIO())
    assert outcome.succeeded, outcome.log_path.read_text()
    assert "IndexError" not in outcome.log_path.read_text()

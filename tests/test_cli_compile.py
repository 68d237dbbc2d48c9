"""``compile.py compile`` / ``estimate`` / ``run``: outputs, tables and refusals.

(No ``from __future__ import annotations``: kfp reads the test pipeline's real annotations.)
"""

import argparse
import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kfp import dsl

from vertex_retrain.cli.compile_commands import cli_compile, cli_estimate
from vertex_retrain.cli.main import build_parser
from vertex_retrain.components.train_custom_job import train_custom_job
from vertex_retrain.pipelines import catalog
from vertex_retrain.specs.defaults import TRAINING

ROOT = Path(__file__).resolve().parent.parent
WEEKLY = str(ROOT / "examples" / "drink_shops" / "pipelines.py") + ":weekly"
EXPERIMENT = str(ROOT / "examples" / "drink_shops" / "pipelines.py") + ":experiment"
"""The drink shops' configured templates: a pipeline with every parameter given a default."""


def _compile_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "compile.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "VERTEX_LOCAL_ROOT": str(cwd)},
    )


def test_compile_writes_every_pipeline_and_component_with_the_given_image(tmp_path: Path) -> None:
    result = _compile_cli("compile", "--out", "out", "--component-image", "eu.pkg.dev/p/r/c:7",
                          cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    for name in catalog.PIPELINES:
        spec = yaml.safe_load((tmp_path / "out" / "pipelines" / f"{name}.yaml").read_text())
        images = {e["container"]["image"] for e in spec["deploymentSpec"]["executors"].values()}
        # GCPC's steps (the failure notice's e-mail) keep GCPC's image.
        gcpc = {image for image in images if "google-cloud-pipeline-components" in image}
        assert images - gcpc == {"eu.pkg.dev/p/r/c:7"}
        assert name in result.stdout
    for name in catalog.COMPONENTS:
        assert (tmp_path / "out" / "components" / f"{name}.yaml").is_file()
    # The names a run shows, not KFP's task keys; the data gate first, the build after it.
    assert result.stdout.startswith("weekly-retraining  ->  ")  # no blank line before
    assert "steps: data-window -> extract-window -> data-gate -> " in result.stdout
    steps = result.stdout.split("steps: ")[1].split("\n")[0].split(" -> ")
    assert steps.index("data-gate") < steps.index("build")
    assert {"register-champion", "register-challenger-full", "stop-before-training"} <= set(steps)
    assert not {"check-data", "register-model-4", "build-container"} & set(steps)
    assert "on-demand" in result.stdout and "Spot" in result.stdout
    # The region priced, as `estimate --location` prices another: the templates name none.
    assert "priced in us-central1 (the default: the pipeline names no region)" in result.stdout
    assert "placeholder" not in result.stdout


def test_compile_without_an_image_says_the_components_name_the_placeholder(
    tmp_path: Path,
) -> None:
    result = _compile_cli("compile", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "component image: the placeholder us-docker.pkg.dev/vertex-retrain/" in result.stdout
    assert "pass --component-image" in result.stdout


def test_compile_refuses_an_image_uri_with_spaces(tmp_path: Path) -> None:
    result = _compile_cli("compile", "--out", "out", "--component-image", "bad image", cwd=tmp_path)
    assert result.returncode == 2
    assert "container image URI" in result.stderr


@dsl.pipeline(name="impossible-defaults")
def _impossible(accelerator_count: int = 3) -> None:
    train_custom_job(
        backend="local",
        display_name="x",
        base_output_directory="gs://bucket/out",
        python_module="m",
        package_uris=["gs://bucket/p.whl"],
        executor_image_uri="us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
        accelerator_count=accelerator_count,
        project="p",
        location="l",
    ).set_caching_options(False)  # the cache-key check would refuse it first


def test_compile_stops_on_an_impossible_default_training_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog, "PIPELINES", {"impossible": f"{__name__}:_impossible"})
    monkeypatch.setattr(catalog, "COMPONENTS", {})
    out = io.StringIO()
    code = cli_compile(argparse.Namespace(out=str(tmp_path), component_image=None), out=out)
    assert code == 1
    text = out.getvalue()
    assert "INVALID default training job" in text
    assert "acceleratorCount" in text and "4" in text


def test_estimate_prints_breakdown_with_assumptions(capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(name=WEEKLY, param=["tune=true"], training_hours=3.0)
    out = io.StringIO()
    assert cli_estimate(args, out=out) == 0
    text = out.getvalue()
    assert "tune (all trials)" in text and "train:" in text
    assert "3 h on one GPU" in text
    assert "prices: us-central1 (the default: the pipeline names no region)" in text
    # Spot comes from Compute Engine Spot x 1.15, which is shown as an assumption.
    assert "Spot priced at" not in text and "derived, assumed: S9 x 1.15" in text
    assert "assumed: No Vertex Spot training price is published" in text


@pytest.mark.parametrize(
    ("location", "t4_on_demand"),
    [
        ("us-central1", "0.4025  quoted: S7, 2024-09-02"),
        ("europe-west4", "0.4226  derived: S10 x 1.15, undated"),
        ("asia-east1", "0.4025  derived: S10 x 1.15, undated"),
    ],
)
def test_estimate_prices_each_line_in_the_given_location(location: str, t4_on_demand: str) -> None:
    args = argparse.Namespace(name=EXPERIMENT, param=[], training_hours=None, location=location)
    out = io.StringIO()
    assert cli_estimate(args, out=out) == 0
    text = out.getvalue()
    assert f"prices: {location} (--location)" in text
    assert f"unit prices in {location}, USD per hour:" in text
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("    ")}
    assert t4_on_demand in rows["NVIDIA_TESLA_T4"]
    assert "derived: S9 x 1.15, 2026-07-30" in rows["n1-standard-8"]
    assert "S9: Cyclenerd" in text  # every cited source is listed once, with its date


def test_estimate_json_carries_totals_labels_and_sources() -> None:
    import json

    args = argparse.Namespace(
        name=EXPERIMENT, param=[], training_hours=3.0, location="europe-west4", json=True
    )
    out = io.StringIO()
    assert cli_estimate(args, out=out) == 0
    document = json.loads(out.getvalue())  # the whole output is one JSON document
    assert document["location"] == "europe-west4"
    assert document["assumed_training_hours"] == 3.0
    (step,) = document["steps"]
    lines = {line["item"]: line for line in step["lines"]}
    assert lines["NVIDIA_TESLA_T4"]["on_demand"]["label"] == "derived"
    assert document["on_demand_cost"] > document["spot_cost"] > 0


def test_estimate_table_lists_each_step_and_the_total_without_ansi() -> None:
    args = argparse.Namespace(name=WEEKLY, param=["tune=true"], training_hours=2.0, location=None)
    out = io.StringIO()  # not a terminal: plain text
    assert cli_estimate(args, out=out) == 0
    lines = out.getvalue().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("STEP"))
    rows = {line.split()[0]: line.split() for line in lines[header + 1 : header + 4]}
    assert set(rows) == {"tune", "train", "total"}
    assert rows["total"][2:4] == ["10.00", "18.00"]  # 8 h of trials, 2 at a time, + 2 h
    assert "\x1b[" not in out.getvalue()


def test_estimate_help_says_which_location_is_the_default() -> None:
    parser = build_parser()
    args = parser.parse_args(["estimate", "train-only", "--location", "europe-west4"])
    assert args.location == "europe-west4"
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    estimate = subparsers.choices["estimate"]
    [location] = [a for a in estimate._actions if a.dest == "location"]
    assert location.metavar == "REGION" and location.default is None
    assert "the pipeline's location parameter when it names a region, else us-central1" in str(
        location.help
    )


def test_estimate_takes_the_pipeline_location_when_it_names_a_region() -> None:
    args = argparse.Namespace(
        name=EXPERIMENT, param=["location=europe-west4"], training_hours=None, location=None
    )
    out = io.StringIO()
    assert cli_estimate(args, out=out) == 0
    assert "prices: europe-west4 (the pipeline's location parameter)" in out.getvalue()


def test_estimate_shows_an_unknown_price_as_unknown() -> None:
    params = ["machine_type=a4-highgpu-8g", "accelerator_type=NVIDIA_B200", "accelerator_count=8"]
    args = argparse.Namespace(name=EXPERIMENT, param=params, training_hours=None, location=None)
    out = io.StringIO()
    assert cli_estimate(args, out=out) == 0
    text = out.getvalue()
    row = next(line for line in text.splitlines() if line.strip().startswith("a4-highgpu-8g +"))
    assert row.split()[-4:] == ["unknown"] * 4
    assert "on-demand: unknown" in text and "Spot: unknown" in text
    assert "unknown prices: a4-highgpu-8g on-demand, a4-highgpu-8g Spot" in text


def test_estimate_refuses_a_location_without_prices_in_one_line(tmp_path: Path) -> None:
    result = _compile_cli("estimate", EXPERIMENT, "--location", "mars-north1", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert (
        "'mars-north1'" in result.stderr
        and "asia-east1, europe-west4, us-central1" in result.stderr
    )


@pytest.mark.parametrize(
    ("params", "gpus", "hours"),
    [
        ([], 1, TRAINING.expected_training_hours),
        (["expected_training_hours=3", "accelerator_count=2"], 2, 3.0),
    ],
)
def test_estimate_prices_the_compiled_defaults_under_the_overrides(
    params: list[str], gpus: int, hours: float
) -> None:
    args = argparse.Namespace(name=WEEKLY, param=params, training_hours=None)
    out = io.StringIO()
    assert cli_estimate(args, out=out) == 0
    text = out.getvalue()
    assert f"train: {gpus} GPU(s)" in text
    assert f"one training job takes {hours:g} h on one GPU" in text


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("accelerator_count=3", "acceleratorCount"),
        ("epochs", "NAME=VALUE"),
        ("training_arg=3", "training_args"),
    ],
)
def test_estimate_refuses_bad_overrides_clearly(
    param: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(name=WEEKLY, param=[param], training_hours=2.0)
    assert cli_estimate(args, out=io.StringIO()) == 2
    assert message in capsys.readouterr().err


def test_run_refuses_unknown_pipeline_and_missing_vertex_flags(tmp_path: Path) -> None:
    unknown = _compile_cli("run", "weekly", "--local", cwd=tmp_path)
    assert unknown.returncode == 2 and "no pipeline named 'weekly'" in unknown.stderr
    assert "train-only, weekly-retraining" in unknown.stderr
    missing = _compile_cli("run", "train-only", "--project", "p", cwd=tmp_path)
    assert missing.returncode == 2
    assert "--location" in missing.stderr and "--pipeline-root" in missing.stderr


def test_run_refuses_a_backend_override(tmp_path: Path) -> None:
    result = _compile_cli("run", "train-only", "--local", "--param", "backend=vertex", cwd=tmp_path)
    assert result.returncode == 2
    assert "the backend follows from the command" in result.stderr


class _FakeJob:
    def __init__(self, state: str, fails: bool = False) -> None:
        self.state = type("State", (), {"name": state})()
        self.fails = fails

    def wait(self) -> None:
        if self.fails:
            raise RuntimeError("Job failed with: task train failed")


@pytest.mark.parametrize(
    ("job", "code"),
    [
        (_FakeJob("PIPELINE_STATE_SUCCEEDED"), 0),
        (_FakeJob("PIPELINE_STATE_CANCELLED"), 1),
        (_FakeJob("PIPELINE_STATE_FAILED", fails=True), 1),
    ],
)
def test_run_submits_to_vertex_and_exits_by_the_final_state(
    job: _FakeJob, code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.cli import run_command as cli_run
    from vertex_retrain.cli import vertex_submit

    built: dict = {}

    def fake_build(template: str, **kwargs: object) -> _FakeJob:
        built.update(kwargs, template=template)
        return job

    monkeypatch.setattr(vertex_submit, "build_pipeline_job", fake_build)
    monkeypatch.setattr(vertex_submit, "submit", lambda j, service_account=None: "jobs/1")
    args = argparse.Namespace(
        name=EXPERIMENT,
        param=['training_args=["--epochs", "2"]'],
        local=False,
        project="drink-shops",
        location="asia-east1",
        pipeline_root="gs://drink-shops-ml/root",
        service_account="retrain@drink-shops.iam.gserviceaccount.com",
        component_image="eu.pkg.dev/p/r/c:1",
        no_wait=False,
        no_cache=False,
        verbose=False,
    )
    assert cli_run.cli_run(args, out=io.StringIO()) == code
    assert built["enable_caching"] is None  # each task keeps its compiled caching
    assert built["project"] == "drink-shops" and built["location"] == "asia-east1"
    assert built["parameter_values"] == {"backend": "vertex", "training_args": ["--epochs", "2"]}


def test_compile_shows_a_dict_parameters_whole_numbers_as_integers(tmp_path: Path) -> None:
    # The spec stores the hyperparameters' embedding_dim 32 as 32.0; the listing says 32.
    result = _compile_cli("compile", "--out", "out", WEEKLY, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(row for row in result.stdout.splitlines() if row.strip().startswith("hyperpar"))
    assert "'embedding_dim': 32," in line and "'learning_rate': 0.005" in line

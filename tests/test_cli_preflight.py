"""``compile.py preflight``: one test per check, bad input, and the refusals of run, upload and
schedule, which happen before any network call."""

from __future__ import annotations

import argparse
import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.examples import DRINK_SHOPS, example_module
from tests.preflight_flags import SUBMISSION_FLAGS
from vertex_retrain.backends.vertex.preflight_online import online_problems
from vertex_retrain.cli import preflight as preflight_module
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.main import main
from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems
from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE
from vertex_retrain.pipelines import weekly_retraining

CHAIN = example_module(DRINK_SHOPS, "pipelines")
EXPERIMENT = f"{DRINK_SHOPS / 'pipelines.py'}:experiment"
"""The drink shops' experiment: the train_only template with every parameter given."""

IMAGE = "europe-west4-docker.pkg.dev/drink-shops/ml/vertex-retrain:1"
ACCOUNT = "retrain@drink-shops.iam.gserviceaccount.com"
SUBMIT = Settings(
    project="drink-shops",
    location="europe-west4",
    pipeline_root="gs://drink-shops-ml/root",
    service_account=ACCOUNT,
    submission=True,
)


@pytest.fixture(scope="module")
def train_only() -> dict[str, Any]:
    return compile_to_dict(CHAIN.experiment, component_image=IMAGE)


def _codes(problems: list, severity: str | None = None) -> list[str]:
    return [p.code for p in problems if severity is None or p.severity == severity]


def _problems(spec: dict[str, Any], settings: Settings = SUBMIT, **overrides: Any) -> list:
    return pipeline_problems(spec, {**default_arguments(spec), **overrides}, settings)


def test_preflight_passes_a_pipeline_with_a_real_image_and_every_setting(
    train_only: dict[str, Any],
) -> None:
    assert _codes(_problems(train_only), "error") == []


def test_preflight_refuses_the_placeholder_component_image() -> None:
    spec = compile_to_dict(CHAIN.experiment)
    errors = [p for p in _problems(spec) if p.severity == "error"]
    assert _codes(errors) == ["component-image-placeholder"]
    assert errors[0].value == DEFAULT_COMPONENT_IMAGE
    assert any("build-image" in a for a in errors[0].alternatives)


def test_preflight_warns_when_the_component_registry_is_outside_the_region(
    train_only: dict[str, Any],
) -> None:
    settings = Settings(**{**SUBMIT.__dict__, "location": "asia-east1"})
    (problem,) = [p for p in _problems(train_only, settings) if p.value == IMAGE]
    assert problem.code == "registry-region" and "outside asia-east1" in problem.message


def _wheel(path: Path, requires_python: str) -> Path:
    """A minimal wheel: only the metadata preflight reads."""
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "mytrainer-1.0.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: mytrainer\nVersion: 1.0\n"
            f"Requires-Python: {requires_python}\n",
        )
    return path


def test_preflight_refuses_a_python_38_executor_image_for_a_package_needing_310(
    train_only: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gs:// package is read offline where a local run keeps Cloud Storage files.
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    (tmp_path / "gcs" / "b").mkdir(parents=True)
    _wheel(tmp_path / "gcs" / "b" / "mytrainer-1.0-py3-none-any.whl", ">=3.10")
    problems = _problems(
        train_only,
        package_uri="gs://b/mytrainer-1.0-py3-none-any.whl",
        executor_image_uri="us-docker.pkg.dev/vertex-ai/training/pytorch-tpu.2-0:latest",
        training_code="python_package",
    )
    # The image is also past its end of availability (2025-05-15): an error of its own.
    assert "executor-image-retired" in _codes(problems, "error")
    (refusal,) = [p for p in problems if p.code == "package-python"]
    assert refusal.code == "package-python"
    assert "mytrainer" in refusal.message and "Python 3.8" in refusal.message
    assert refusal.field.startswith("task ")  # checked once, for the first task that runs it


def test_preflight_refuses_a_prebuilt_image_outside_the_catalog_by_its_tags_python(
    train_only: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    (tmp_path / "gcs" / "b").mkdir(parents=True)
    _wheel(tmp_path / "gcs" / "b" / "mytrainer-1.0-py3-none-any.whl", ">=3.10")
    problems = _problems(
        train_only,
        package_uri="gs://b/mytrainer-1.0-py3-none-any.whl",
        executor_image_uri="us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.1-13.py38:latest",
        training_code="python_package",
    )
    (refusal,) = [p for p in problems if p.severity == "error"]
    assert refusal.code == "package-python" and "Python 3.8 read from its tag" in refusal.message


def test_preflight_refuses_an_executor_image_that_is_not_prebuilt(
    train_only: dict[str, Any],
) -> None:
    problems = _problems(train_only, executor_image_uri=IMAGE, training_code="python_package")
    assert "executor-image" in _codes(problems, "error")
    # The container path (the default) runs no executor image: nothing is said of it.
    assert "executor-image" not in _codes(_problems(train_only, executor_image_uri=IMAGE), "error")


def test_preflight_warns_on_a_machine_not_offered_in_the_region(
    train_only: dict[str, Any],
) -> None:
    iowa = Settings(**{**SUBMIT.__dict__, "location": "us-central1"})
    problems = _problems(
        train_only, iowa, machine_type="a3-megagpu-8g", accelerator_type="NVIDIA_H100_MEGA_80GB",
        accelerator_count=8,
    )  # fmt: skip
    (problem,) = [p for p in problems if p.code == "region-availability"]
    assert problem.severity == "warning" and problem.value == "a3-megagpu-8g"
    assert "europe-west4" in problem.alternatives[0]  # where prices.yaml records an offer
    unknown = Settings(**{**SUBMIT.__dict__, "location": "me-west1"})
    assert "region-unknown" in _codes(_problems(train_only, unknown), "warning")


def test_preflight_refuses_an_invalid_training_job(train_only: dict[str, Any]) -> None:
    errors = _problems(train_only, accelerator_count=3)
    assert "gpu-count" in _codes(errors, "error")


def test_preflight_refuses_a_cached_task_that_could_serve_another_weeks_output() -> None:
    spec = {
        "pipelineInfo": {"name": "stale"},
        "root": {
            "dag": {
                "tasks": {
                    "prepare": {
                        "cachingOptions": {"enableCache": True},
                        "componentRef": {"name": "comp-prepare"},
                        "taskInfo": {"name": "prepare"},
                        "inputs": {"parameters": {"uri": {"componentInputParameter": "uri"}}},
                    },
                    # A week makes the cache-key rule apply.
                    "window": {"componentRef": {"name": "comp-window"}},
                }
            },
            "inputDefinitions": {"parameters": {"uri": {"parameterType": "STRING"}}},
        },
        "components": {
            "comp-prepare": {"executorLabel": "exec-prepare"},
            "comp-window": {"executorLabel": "exec-window"},
        },
        "deploymentSpec": {
            "executors": {
                "exec-prepare": {"container": {"image": IMAGE}},
                "exec-window": {
                    "container": {"image": IMAGE, "args": ["--function_to_execute", "data_window"]}
                },
            }
        },
    }
    (problem,) = [p for p in _problems(spec) if p.severity == "error"]
    assert problem.code == "cache-key" and "prepare" in problem.message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"service_account": None}, "--service-account"),
        ({"service_account": "retrain"}, "--service-account"),
        ({"pipeline_root": None}, "--pipeline-root"),
        ({"pipeline_root": "/tmp/root"}, "--pipeline-root"),
    ],
)
def test_preflight_needs_a_service_account_and_a_gs_pipeline_root(
    train_only: dict[str, Any], change: dict[str, Any], field: str
) -> None:
    settings = Settings(**{**SUBMIT.__dict__, **change})
    (problem,) = [p for p in _problems(train_only, settings) if p.severity == "error"]
    assert problem.field == field


def test_preflight_accepts_the_projects_default_compute_account(
    train_only: dict[str, Any],
) -> None:
    settings = Settings(
        **{**SUBMIT.__dict__, "service_account": "123456789-compute@developer.gserviceaccount.com"}
    )
    assert [p for p in _problems(train_only, settings) if p.severity == "error"] == []


@pytest.mark.parametrize(
    ("emails", "message"),
    [
        (["a@x.com", "b@x.com", "c@x.com", "d@x.com"], "at most 3"),
        (["not-an-email"], "Not an e-mail address"),
    ],
)
def test_preflight_refuses_notification_emails_vertex_would_refuse(
    emails: list[str], message: str
) -> None:
    spec = compile_to_dict(CHAIN.weekly)
    arguments = {**default_arguments(spec), "notification_emails": emails}
    problems = pipeline_problems(spec, arguments, SUBMIT)
    assert any(
        p.severity == "error" and p.field == "--param notification_emails" and message in p.message
        for p in problems
    ), problems


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "no pipeline named 'nope'"),
        ([EXPERIMENT, "--param", "selection_periods=x"], "expects NUMBER_INTEGER"),
        ([EXPERIMENT, "--param", "nope=1"], "nope"),
    ],
)
def test_preflight_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["preflight", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_preflight_of_a_file_that_is_not_a_compiled_pipeline_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "component.yaml"
    path.write_text(yaml.safe_dump({"name": "x"}))
    assert main(["preflight", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a compiled KFP pipeline" in err and err.count("\n") == 1


def test_preflight_reports_json_and_exit_1_on_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["preflight", EXPERIMENT, "--location", "europe-west4", "--json", *SUBMISSION_FLAGS]
    assert main(argv) == 1
    (result,) = json.loads(capsys.readouterr().out)
    assert result["pipeline"] == "drink-shops-experiment" and result["errors"] == 1
    assert result["problems"][0]["code"] == "component-image-placeholder"


class FakeChecker:
    """The online checks' answers, set per test."""

    def __init__(
        self,
        images: dict[str, bool | None],
        bucket: str | None,
        account: bool,
        granted: dict[str, frozenset[str] | None] | None = None,
    ) -> None:
        self.images, self.bucket, self.account = images, bucket, account
        self.granted = granted or {}
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def image_exists(self, image_uri: str) -> bool | None:
        return self.images.get(image_uri, True)

    def bucket_location(self, bucket: str) -> str | None:
        return self.bucket

    def service_account_exists(self, email: str) -> bool | None:
        return self.account

    def bucket_permissions(self, bucket: str, permissions: Any) -> frozenset[str] | None:
        self.asked.append((bucket, tuple(permissions)))
        return self.granted.get(bucket, frozenset(permissions))


def test_online_checks_find_a_missing_image_bucket_and_account() -> None:
    checker = FakeChecker({IMAGE: False}, "", False)
    problems = online_problems(
        checker,
        images=[("image", IMAGE), ("other", IMAGE)],
        region="europe-west4",
        pipeline_root="gs://drink-shops-ml/root",
        service_account=ACCOUNT,
    )
    assert _codes(problems, "error") == [
        "image-missing",
        "bucket-missing",
        "service-account-missing",
    ]


def test_online_checks_warn_on_a_bucket_in_another_region_and_unknown_answers() -> None:
    checker = FakeChecker({IMAGE: None}, "us", True)
    problems = online_problems(
        checker,
        images=[("image", IMAGE)],
        region="europe-west4",
        pipeline_root="gs://drink-shops-ml/root",
        service_account=ACCOUNT,
    )
    assert _codes(problems, "error") == []
    assert _codes(problems, "warning") == ["unchecked", "bucket-region"]
    eu = online_problems(
        FakeChecker({}, "eu", True),
        images=[],
        region="europe-west4",
        pipeline_root="gs://b/r",
        service_account=None,
    )
    assert eu == []


def test_preflight_with_project_runs_the_online_checks_through_the_factory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = argparse.Namespace(
        pipelines=[EXPERIMENT], component_image=IMAGE, param=[], project="drink-shops",
        location="europe-west4", pipeline_root="gs://drink-shops-ml/root",
        service_account=ACCOUNT, json=False,
    )  # fmt: skip
    asked: list[str] = []

    def factory(project: str) -> FakeChecker:
        asked.append(project)
        return FakeChecker({IMAGE: False}, "europe-west4", True)

    assert preflight_module.cli_preflight(args, checker_factory=factory) == 1
    assert asked == ["drink-shops"]
    out = capsys.readouterr().out
    assert "preflight drink-shops-experiment: 1 error(s)" in out
    # One line for the image, naming the first executor that runs it.
    assert (
        f'error: deploymentSpec.executors.exec-build-container.container.image = "{IMAGE}": '
        "The registry has no such image" in out
    )


def test_preflight_online_checks_data_readable_package_writable_and_serving_image(
    capsys: pytest.CaptureFixture[str],
) -> None:
    serving = CHAIN.COMMON["serving_image_uri"]
    args = argparse.Namespace(
        pipelines=[f"{DRINK_SHOPS / 'pipelines.py'}:weekly"], component_image=IMAGE,
        param=["package_destination=gs://packages-elsewhere/p"], project="drink-shops",
        location="europe-west4", pipeline_root="gs://drink-shops-ml/root",
        service_account=ACCOUNT, json=True,
    )  # fmt: skip
    checker = FakeChecker(
        {serving: False},
        "europe-west4",
        True,
        # Data readable only with object get (no list); the package bucket read-only.
        {
            "drink-shops-ml": frozenset({"storage.objects.get", "storage.objects.create"}),
            "packages-elsewhere": frozenset({"storage.objects.get", "storage.objects.list"}),
        },
    )
    assert preflight_module.cli_preflight(args, checker_factory=lambda _: checker) == 1
    (result,) = json.loads(capsys.readouterr().out)
    errors = {(p["field"], p["code"]) for p in result["problems"] if p["severity"] == "error"}
    assert ("--param data_uri", "bucket-not-readable") in errors
    assert ("--param package_destination", "bucket-not-writable") in errors
    assert ("--param serving_image_uri", "image-missing") in errors
    assert ("--param output_root", "bucket-not-writable") not in errors  # create is granted
    assert ("drink-shops-ml", ("storage.objects.get", "storage.objects.list")) in checker.asked


def test_preflight_refuses_an_examples_bucket_and_image_in_another_pipeline() -> None:
    spec = compile_to_dict(CHAIN.weekly, component_image=IMAGE)
    own = _codes(_problems(spec))
    assert "borrowed-location" not in own  # the example's own pipeline uses its own bucket
    template = compile_to_dict(weekly_retraining, component_image=IMAGE)
    borrowed = {
        name: value
        for name, value in default_arguments(spec).items()
        if name in ("data_uri", "serving_image_uri", "output_root", "executor_image_uri")
    }
    problems = [p for p in _problems(template, **borrowed) if p.code == "borrowed-location"]
    assert sorted(p.field for p in problems) == [
        "--param data_uri",
        "--param output_root",
        "--param serving_image_uri",
    ]  # Google's public training image belongs to no example
    assert "belongs to the example examples/drink_shops" in problems[0].message


def test_preflight_without_credentials_says_the_online_checks_were_skipped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = argparse.Namespace(
        pipelines=[EXPERIMENT], component_image=IMAGE, param=[], project="drink-shops",
        location="europe-west4", pipeline_root="gs://drink-shops-ml/root",
        service_account=ACCOUNT, json=True,
    )  # fmt: skip

    def no_credentials(project: str) -> Any:
        raise RuntimeError("Your default credentials were not found")

    assert preflight_module.cli_preflight(args, checker_factory=no_credentials) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert "online-skipped" in [p["code"] for p in result["problems"]]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every attempt to open a connection is recorded and refused."""
    attempts: list[tuple[Any, ...]] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def test_run_project_with_the_placeholder_image_is_refused_before_any_network_call(
    no_network: list[tuple[Any, ...]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vertex_retrain.cli import vertex_submit

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a refused run builds no PipelineJob")

    monkeypatch.setattr(vertex_submit, "build_pipeline_job", never)
    code = main(
        ["run", EXPERIMENT, "--project", "drink-shops", "--location", "europe-west4",
         "--pipeline-root", "gs://drink-shops-ml/root", "--service-account", ACCOUNT]
    )  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err[0].startswith("run: error: deploymentSpec.executors")
    assert "placeholder component image" in err[0]
    assert err[-1].startswith("run: refused by preflight (1 error(s)); nothing was sent")
    assert no_network == []


def test_upload_to_artifact_registry_refuses_a_template_with_the_placeholder_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_network: list[tuple[Any, ...]]
) -> None:
    from vertex_retrain.cli.compiling import write_spec

    template = tmp_path / "train-only.yaml"
    write_spec(compile_to_dict(CHAIN.experiment), template)
    clients: list[str] = []
    code = preflight_upload(template, lambda host: clients.append(host))
    assert code == 2 and clients == []
    assert "placeholder component image" in capsys.readouterr().err
    assert no_network == []


def preflight_upload(template: Path, factory: Any) -> int:
    from vertex_retrain.cli.upload_command import cli_upload

    args = argparse.Namespace(
        files=[str(template)], project="drink-shops", location="europe-west4",
        repository="pipelines", registry_dir=None, tag=[],
    )  # fmt: skip
    return cli_upload(args, client_factory=factory)


def test_schedule_refuses_before_calling_vertex_when_preflight_finds_an_error(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from test_schedule_reconcile import WEEKLY_FILE

    from vertex_retrain.cli import schedule_command

    class Untouchable:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"a refused schedule calls no Vertex method ({name})")

    host = "https://europe-west4-kfp.pkg.dev/drink-shops/pipelines"
    args = argparse.Namespace(
        project="drink-shops", location="europe-west4", service_account=ACCOUNT,
        pipeline_root="gs://drink-shops-ml/root",
        template_version=[f"{host}/weekly-retraining/sha256:{'a' * 64}"],
        repository=None, dry_run=False, schedules=str(WEEKLY_FILE),
    )  # fmt: skip
    monkeypatch.setattr(
        "vertex_retrain.cli.preflight_checks._SERVICE_ACCOUNT", __import__("re").compile("^$")
    )
    assert schedule_command.cli_schedule(args, client=Untouchable()) == 2
    assert "schedule: refused by preflight" in capsys.readouterr().err

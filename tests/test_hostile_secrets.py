"""Secrets in the environment never reach compiled YAML, logs, job records or the registry;
the job's service account travels in the payload.

A fake API key and a fake service-account key file are put in the environment of
`compile.py compile` and of a local CustomJob (trained and registered through the
components' own step functions); then every byte written is searched for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from data.hostile.support import REPO

from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.storage import local_root
from vertex_retrain.specs import check_payload_parses
from vertex_retrain.specs.defaults import PIPELINE_SERVICE_ACCOUNT
from vertex_retrain.steps.job_request import TrainingRequest, custom_job_payload
from vertex_retrain.steps.register import RegistrationRequest, register
from vertex_retrain.steps.train import train
from vertex_retrain.steps.tune import TuningRequest, tuning_job_payload

pytestmark = pytest.mark.slow

API_KEY = "sk-live-7f3a9c1e5b2d4f6081a3c5e7d9b1f3a5"
PRIVATE_KEY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-fake-private-key-c0ffee"
SERVICE_ACCOUNT = "retrain-trainer@drink-shops.iam.gserviceaccount.com"
SECRETS = (API_KEY.encode(), PRIVATE_KEY.encode())


def _credentials_file(folder: Path) -> Path:
    path = folder / "sa-key.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "client_email": SERVICE_ACCOUNT,
                "private_key": f"-----BEGIN PRIVATE KEY-----\n{PRIVATE_KEY}\n-----END...",
            }
        )
    )
    return path


def _leaks(folder: Path, *extra: bytes) -> list[str]:
    """Files under `folder` (and extra blobs) holding any secret, with the secret found."""
    found = []
    blobs = [(str(p), p.read_bytes()) for p in folder.rglob("*") if p.is_file()]
    blobs += [(f"extra[{i}]", blob) for i, blob in enumerate(extra)]
    for name, blob in blobs:
        found += [f"{name}: {secret[:8]!r}..." for secret in SECRETS if secret in blob]
    return found


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, bytes]]:
    work = tmp_path_factory.mktemp("compile-secrets")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "API_KEY": API_KEY,
        "GOOGLE_APPLICATION_CREDENTIALS": str(_credentials_file(work)),
        "VERTEX_LOCAL_ROOT": str(work / "root"),
    }
    result = subprocess.run(
        [sys.executable, str(REPO / "compile.py"), "compile", "--out", str(work / "dist")],
        cwd=work,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    yield work / "dist", result.stdout + result.stderr


def test_compiled_yaml_and_compile_output_hold_no_secret_from_the_environment(
    compiled: tuple[Path, bytes],
) -> None:
    dist, output = compiled
    assert sorted(p.name for p in (dist / "pipelines").iterdir()) == [
        "train-only.yaml",
        "weekly-retraining.yaml",
    ]
    assert _leaks(dist, output) == []
    assert b"sa-key.json" not in output  # nor the path of the key file


def _service_account_inputs(spec: dict, dag: dict) -> dict[str, str]:
    """Task path -> where its `service_account` input comes from, through nested DAGs."""
    found = {}
    for name, task in dag.get("tasks", {}).items():
        source = task.get("inputs", {}).get("parameters", {}).get("service_account")
        if source is not None:
            found[name] = source.get("componentInputParameter", f"constant {source}")
        component = spec["components"][task["componentRef"]["name"]]
        if "dag" in component:
            nested = _service_account_inputs(spec, component["dag"])
            found.update({f"{name}/{path}": value for path, value in nested.items()})
    return found


def test_compiled_pipelines_pass_the_service_account_parameter_to_every_job_step(
    compiled: tuple[Path, bytes],
) -> None:
    dist, _ = compiled
    spec = next(yaml.safe_load_all((dist / "pipelines" / "weekly-retraining.yaml").read_text()))
    # The pipeline's own account by default (Vertex resolves GCPC's placeholder), never a
    # named account baked into the template.
    default = spec["root"]["inputDefinitions"]["parameters"]["service_account"]["defaultValue"]
    assert default == PIPELINE_SERVICE_ACCOUNT
    sources = _service_account_inputs(spec, spec["root"]["dag"])
    steps = {path.rsplit("/", 1)[-1] for path in sources}
    assert {"train-custom-job", "hp-tune", "deploy-model"} <= steps
    # Wired from the pipeline parameter, never a constant baked into the template.
    assert set(sources.values()) <= {"service_account", "pipelinechannel--service_account"}


def _training_request(**changes: object) -> TrainingRequest:
    fields: dict = dict(
        backend="vertex",
        display_name="t",
        base_output_directory="gs://b/out",
        python_module="trainer.task",
        image_uri=f"us-docker.pkg.dev/p/training/trainer-cuda@sha256:{'a' * 64}",
        service_account=SERVICE_ACCOUNT,
    )
    fields.update(changes)
    return TrainingRequest(**fields)


def test_training_and_tuning_payloads_carry_the_service_account() -> None:
    payload = custom_job_payload(_training_request())
    check_payload_parses(payload, "custom_job")
    assert payload["jobSpec"]["serviceAccount"] == SERVICE_ACCOUNT
    tuning = tuning_job_payload(
        TuningRequest(
            trial=_training_request(),
            parameter_specs=[{"parameterId": "epochs", "discreteValueSpec": {"values": [1, 2]}}],
            metric_id="ndcg_at_10",
            max_trial_count=2,
            parallel_trial_count=1,
        )
    )
    check_payload_parses(tuning, "tuning_job")
    assert tuning["trialJobSpec"]["serviceAccount"] == SERVICE_ACCOUNT
    # Without one, the field is absent (Vertex then uses the project's default account).
    assert (
        "serviceAccount" not in custom_job_payload(_training_request(service_account=""))["jobSpec"]
    )


TASK = """\
import json, os, pathlib
print("API_KEY present:", bool(os.environ.get("API_KEY")), flush=True)
model_dir = pathlib.Path(os.environ["GCS_FUSE_ROOT"], os.environ["AIP_MODEL_DIR"][len("gs://"):])
model_dir.mkdir(parents=True, exist_ok=True)
(model_dir / "model.json").write_text(json.dumps({"bias": 1}))
"""


def test_local_training_and_registration_record_no_secret_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("API_KEY", API_KEY)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_credentials_file(tmp_path)))
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "task.py").write_text(TASK)
    (context / "Dockerfile").write_text(
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY task.py /app/\n"
        'ENTRYPOINT ["python", "task.py"]\n'
    )
    image = build_container_image(context, image_uri="us-docker.pkg.dev/p/r/job:v1").uri
    gcp_resources = tmp_path / "gcp_resources"
    trained = train(
        TrainingRequest(
            backend="local",
            display_name="secret probe",
            base_output_directory="gs://b/out",
            image_uri=image,
            accelerator_type="",  # a CPU image: the default T4 would warn about CUDA
            service_account=SERVICE_ACCOUNT,
            labels={"team": "drinks"},
        ),
        gcp_resources_path=str(gcp_resources),
    )
    assert trained.state == "JOB_STATE_SUCCEEDED"
    registered = register(
        RegistrationRequest(
            backend="local",
            artifact_uri=trained.model_uri,
            display_name="recs",
            serving_image_uri="us-docker.pkg.dev/p/r/serve:v1",
            serving_command=["python", "-m", "trainer.serve"],
            labels={"team": "drinks"},
            evaluation_metrics={"ndcg_at_10": 0.5},
            sample_instances=[{"member_id": 1}],
            pipeline_run="run-1",
        )
    )
    assert registered.version_id == "1"
    captured = capfd.readouterr()
    logs = list((local_root() / "jobs").rglob("*.log"))
    # The job did see the key (it runs as this user), so the search below is not vacuous.
    assert any(b"API_KEY present: True" in log.read_bytes() for log in logs)
    assert (local_root() / "registry.db").exists()
    assert _leaks(local_root(), gcp_resources.read_bytes(), captured.out.encode()) == []
    assert _leaks(local_root(), captured.err.encode()) == []

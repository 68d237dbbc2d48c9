"""From component inputs to validated CustomJob and tuning payloads."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vertex_retrain.specs import JobSpecError, check_payload_parses
from vertex_retrain.specs.defaults import TRAINING, TUNING
from vertex_retrain.steps.evaluate import evaluation_request
from vertex_retrain.steps.job_request import (
    TrainingRequest,
    custom_job_payload,
    format_flag_value,
    merged_package_uris,
    program_args,
    training_request,
)
from vertex_retrain.steps.tune import TuningRequest, tuning_job_payload, tuning_request

INPUTS = {
    "backend": "vertex",
    "display_name": "t",
    "base_output_directory": "gs://b/out",
    "python_module": "trainer.task",
    "package_uri": "gs://b/a.whl",
    "package_uris": ["gs://b/b.whl", "gs://b/a.whl"],
    "args": [5.0, "--x"],
    "labels": {"team": 2.0},
    "dataset": SimpleNamespace(uri="gs://b/data"),
    "machine_type": "n1-highmem-8",
    "model": SimpleNamespace(uri="gs://b/model"),  # an output: not part of the request
}
"""A training component's inputs, as its body receives them."""

# Requests of the package path on an image that is served: the shipped catalog's have all ended.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")


def _request(**changes: object) -> TrainingRequest:
    fields: dict = dict(
        backend="vertex",
        display_name="t",
        base_output_directory="gs://b/out",
        python_module="trainer.task",
        package_uris=["gs://b/p/trainer-1.0.0-py3-none-any.whl"],
        executor_image_uri="us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
        machine_type="n1-standard-8",
        accelerator_type="NVIDIA_TESLA_T4",
        accelerator_count=1,
        scheduling_strategy="SPOT",
    )
    fields.update(changes)
    return TrainingRequest(**fields)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(5.0, "5"), ("5.0", "5.0"), (0.005, "0.005"), ("1.5E3", "1.5E3"), (True, "true"), ("x", "x")],
)
def test_format_flag_value_writes_integral_floats_as_integers_and_keeps_strings(
    value: object, expected: str
) -> None:
    assert format_flag_value(value) == expected


@pytest.mark.parametrize(
    ("package_uri", "package_uris", "expected"),
    [
        ("gs://b/a.whl", [], ["gs://b/a.whl"]),
        ("", ["gs://b/a.whl", "gs://b/b.whl"], ["gs://b/a.whl", "gs://b/b.whl"]),
        ("gs://b/a.whl", ["gs://b/b.whl", "gs://b/a.whl"], ["gs://b/a.whl", "gs://b/b.whl"]),
        ("", [], []),
    ],
)
def test_merged_package_uris_puts_package_uri_first_and_drops_repeats(
    package_uri: str, package_uris: list[str], expected: list[str]
) -> None:
    assert merged_package_uris(package_uri, package_uris) == expected


def test_program_args_appends_hyperparameters_then_dataset() -> None:
    request = _request(
        args=["--seed", "3"],
        hyperparameters={"epochs": 4.0, "learning_rate": 0.01},
        dataset_uri="gs://b/data",
    )
    assert program_args(request) == [
        "--seed",
        "3",
        "--epochs=4",
        "--learning_rate=0.01",
        "--data=gs://b/data",
    ]


def test_custom_job_payload_parses_into_aiplatform_proto() -> None:
    payload = custom_job_payload(_request(worker_count=2, distribution="ddp"))
    check_payload_parses(payload, "custom_job")
    pools = payload["jobSpec"]["workerPoolSpecs"]
    assert [pool["replicaCount"] for pool in pools] == ["1", "2"]
    assert payload["jobSpec"]["scheduling"]["strategy"] == "SPOT"


def test_custom_job_payload_refuses_impossible_gpu_count() -> None:
    with pytest.raises(JobSpecError) as raised:
        custom_job_payload(_request(accelerator_count=3))
    assert "acceleratorCount" in str(raised.value)
    assert "4" in str(raised.value)


def test_tuning_job_payload_parses_and_keeps_bayesian_default() -> None:
    payload = tuning_job_payload(
        TuningRequest(
            trial=_request(),
            parameter_specs=[
                {
                    "parameterId": "learning_rate",
                    "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1},
                    "scaleType": "UNIT_LOG_SCALE",
                }
            ],
            metric_id="ndcg_at_10",
            max_trial_count=4,
            parallel_trial_count=2,
        )
    )
    check_payload_parses(payload, "tuning_job")
    assert "algorithm" not in payload["studySpec"]


def test_tuning_job_payload_refuses_parallel_above_max() -> None:
    with pytest.raises(JobSpecError) as raised:
        tuning_job_payload(
            TuningRequest(
                trial=_request(),
                parameter_specs=[{"parameterId": "a", "discreteValueSpec": {"values": [1, 2]}}],
                metric_id="m",
                max_trial_count=2,
                parallel_trial_count=3,
            )
        )
    assert "parallelTrialCount" in str(raised.value)


def test_training_request_reads_the_inputs_by_name() -> None:
    request = training_request(INPUTS)
    assert request.package_uris == ["gs://b/a.whl", "gs://b/b.whl"]
    assert request.args == ["5", "--x"]
    assert request.labels == {"team": "2"}
    assert request.dataset_uri == "gs://b/data"
    assert request.machine_type == "n1-highmem-8"
    assert request.accelerator_type == TRAINING.accelerator_type


def test_training_request_takes_an_ellipsis_input_as_unset() -> None:
    request = training_request({**INPUTS, "machine_type": ..., "timeout_seconds": ...})
    assert (request.machine_type, request.timeout_seconds) == (
        TRAINING.machine_type,
        TRAINING.timeout_seconds,
    )


def test_training_request_without_a_dataset_has_no_dataset_uri() -> None:
    assert training_request({**INPUTS, "dataset": None}).dataset_uri == ""


def test_tuning_request_puts_the_labels_on_the_study_and_the_trial_shape_on_the_trial() -> None:
    study = tuning_request(
        {**INPUTS, "parameter_specs": [{"parameterId": "lr"}], "metric_id": "m", "goal": ...}
    )
    assert study.labels == {"team": "2"} and study.trial.labels == {}
    assert study.trial.machine_type == "n1-highmem-8"
    assert study.goal == TUNING.goal
    assert study.parameter_specs == [{"parameterId": "lr"}]


def test_evaluation_request_reads_artifacts_and_the_output_directory() -> None:
    request = evaluation_request(
        {
            **INPUTS,
            "candidate": SimpleNamespace(uri="gs://b/cand"),
            "model_display_name": "m",
            "evaluation_declaration": {"primary": "x"},
        }
    )
    assert (request.candidate_uri, request.dataset_uri) == ("gs://b/cand", "gs://b/data")
    assert request.output_directory == "gs://b/out"
    assert request.package_uris == ["gs://b/a.whl", "gs://b/b.whl"]
    assert request.args == ["5", "--x"]


def test_container_job_runs_the_module_in_the_image_and_the_image_otherwise() -> None:
    image = f"us-docker.pkg.dev/p/training/trainer@sha256:{'a' * 64}"
    payload = custom_job_payload(_request(image_uri=image, hyperparameters={"lr": 0.1}))
    check_payload_parses(payload, "custom_job")
    (pool,) = payload["jobSpec"]["workerPoolSpecs"]
    assert "pythonPackageSpec" not in pool
    spec = pool["containerSpec"]
    assert spec["imageUri"] == image
    # One image holds training and evaluation: the module picks the entry point.
    assert spec["command"] == ["python", "-m", "trainer.task"]
    assert spec["args"] == ["--lr=0.1"]
    own = custom_job_payload(_request(image_uri=image, python_module=""))
    assert "command" not in own["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]


@pytest.mark.parametrize("count", [0, 1])
def test_custom_job_payload_cpu_job_ignores_the_default_accelerator_count(count: int) -> None:
    payload = custom_job_payload(_request(accelerator_type="", accelerator_count=count))
    assert "acceleratorCount" not in payload["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]


def test_custom_job_payload_refuses_an_accelerator_count_without_a_type() -> None:
    with pytest.raises(JobSpecError) as raised:
        custom_job_payload(_request(accelerator_type="", accelerator_count=3))
    assert "acceleratorCount" in str(raised.value) and "acceleratorType" in str(raised.value)

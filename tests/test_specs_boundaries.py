"""Both sides of each limit the validation rules enforce (the one-line mutations that survived
the table-driven cases: `<` against `<=`, a limit off by one)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_specs_cases import CPU_IMAGE, LR, N1_T4, RS_IMAGE, TF_TPU_215, job, pool, study
from vertex_retrain.rules.job_failure import JobFailure
from vertex_retrain.rules.spot_fallback import MIN_FALLBACK_SECONDS, FallbackPolicy, decide_fallback
from vertex_retrain.specs import validate_custom_job, validate_tuning_job
from vertex_retrain.specs.problems import errors_of


def _fields(problems: list[Any]) -> list[str]:
    return [p.field for p in errors_of(problems)]


def _labels_refused(problems: list[Any]) -> bool:
    return any(field.startswith("labels") for field in _fields(problems))


@pytest.mark.parametrize(("length", "valid"), [(63, True), (64, False)])
def test_label_value_length_limit_is_63(length: int, valid: bool) -> None:
    problems = validate_custom_job(job(N1_T4, labels={"team": "a" * length}))
    assert _labels_refused(problems) is not valid


@pytest.mark.parametrize(("length", "valid"), [(63, True), (64, False)])
def test_label_key_length_limit_is_63(length: int, valid: bool) -> None:
    problems = validate_custom_job(job(N1_T4, labels={"k" * length: "v"}))
    assert _labels_refused(problems) is not valid


@pytest.mark.parametrize("labels", [{"team": "ml\n"}, {"team\n": "ml"}, {"Team": "ml"}])
def test_label_with_a_trailing_newline_or_capital_is_refused(labels: dict[str, str]) -> None:
    assert _labels_refused(validate_custom_job(job(N1_T4, labels=labels)))


def _package_job(count: int) -> dict[str, Any]:
    pool = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": "1",
        "pythonPackageSpec": {
            "executorImageUri": CPU_IMAGE,
            "packageUris": [f"gs://b/p{i}.tar.gz" for i in range(count)],
            "pythonModule": "mypackage.task",
        },
    }
    return job(pool)


@pytest.mark.parametrize(("count", "valid"), [(0, False), (1, True), (100, True), (101, False)])
def test_package_uris_take_one_to_one_hundred(count: int, valid: bool) -> None:
    fields = _fields(validate_custom_job(_package_job(count)))
    assert ("jobSpec.workerPoolSpecs[0].pythonPackageSpec.packageUris" in fields) is not valid


@pytest.mark.parametrize(
    ("max_trials", "parallel", "valid"), [(3, 2, True), (3, 3, True), (3, 4, False)]
)
def test_parallel_trials_may_equal_but_not_exceed_the_total(
    max_trials: int, parallel: int, valid: bool
) -> None:
    problems = validate_tuning_job(
        study([LR], maxTrialCount=max_trials, parallelTrialCount=parallel)
    )
    assert ("parallelTrialCount" in _fields(problems)) is not valid


@pytest.mark.parametrize(("max_trials", "valid"), [(0, False), (1, True)])
def test_max_trial_count_floor_is_one(max_trials: int, valid: bool) -> None:
    problems = validate_tuning_job(study([LR], maxTrialCount=max_trials, parallelTrialCount=1))
    assert ("maxTrialCount" in _fields(problems)) is not valid


@pytest.mark.parametrize(
    ("left", "falls_back"),
    [
        (MIN_FALLBACK_SECONDS - 1, False),
        (MIN_FALLBACK_SECONDS, True),
        (MIN_FALLBACK_SECONDS + 1, True),
    ],
)
def test_spot_fallback_needs_at_least_the_minimum_time_left(left: int, falls_back: bool) -> None:
    decision = decide_fallback(
        strategy="SPOT",
        failure=JobFailure(state="JOB_STATE_FAILED", message="STOCKOUT: no capacity"),
        policy=FallbackPolicy(enabled=True, deadline_seconds=600),
        elapsed_seconds=600 - left,
        job_timeout_seconds=0,
    )
    assert decision.fall_back is falls_back
    if falls_back:
        assert decision.timeout_seconds == left


def _warns_no_distribution(payload: dict[str, Any]) -> bool:
    return any(problem.code == "no-distribution" for problem in validate_custom_job(payload))


TWO_T4_WORKERS = pool("n1-standard-8", "NVIDIA_TESLA_T4", 1, replicas=2)
TPU_WORKERS = pool("ct5lp-hightpu-4t", replicas=2, image=TF_TPU_215)
REDUCTION_SERVERS = pool("n1-highcpu-16", replicas=2, image=RS_IMAGE)


@pytest.mark.parametrize(
    ("pools", "warns"),
    [
        ((N1_T4, TWO_T4_WORKERS), True),  # GPU workers count
        ((pool("ct5lp-hightpu-4t", image=TF_TPU_215), {}, {}, TPU_WORKERS), False),  # nor TPUs
        ((N1_T4, {}, {}, TWO_T4_WORKERS), True),  # the fourth pool is read
        ((N1_T4, {}, {}, {}, TWO_T4_WORKERS), False),  # a fifth is not (refused elsewhere)
    ],
)
def test_undeclared_distribution_counts_gpu_replicas_of_the_four_compute_pools(
    pools: tuple[dict[str, Any], ...], warns: bool
) -> None:
    assert _warns_no_distribution(job(*pools)) is warns


def test_a_reduction_server_pool_declares_the_distribution() -> None:
    one_t4_worker = pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)
    assert _warns_no_distribution(job(N1_T4, one_t4_worker))
    assert not _warns_no_distribution(job(N1_T4, one_t4_worker, REDUCTION_SERVERS))


def test_refused_label_suggests_the_key_and_value_written_validly() -> None:
    problems = validate_custom_job(job(N1_T4, labels={"Team Name": "ML Ops!"}))
    (refused,) = [problem for problem in problems if problem.code == "labels"]
    assert list(refused.alternatives) == ["team_name=ml_ops_"]


def _error_fields(payload: dict[str, Any]) -> list[str]:
    return _fields(validate_custom_job(payload))


def test_pool_checks_skip_an_empty_pool_and_read_the_next() -> None:
    fields = _error_fields(job(N1_T4, {}, pool("n1-nonexistent-8", replicas=2)))
    assert "jobSpec.workerPoolSpecs[2].machineSpec.machineType" in fields


def test_pool_checks_read_four_pools_and_not_a_fifth() -> None:
    bad = pool("n1-nonexistent-8")
    fields = _error_fields(job(N1_T4, {}, {}, bad, bad))
    assert "jobSpec.workerPoolSpecs[3].machineSpec.machineType" in fields
    assert not any(field.startswith("jobSpec.workerPoolSpecs[4].machineSpec") for field in fields)


def test_gpu_pool_image_warning_names_the_pool_it_is_about() -> None:
    problems = validate_custom_job(job(N1_T4, pool("n1-standard-8", "NVIDIA_TESLA_T4", 1,
                                                   image="python:3.11-slim")))  # fmt: skip
    fields = [problem.field for problem in problems if problem.code.startswith("gpu-image")]
    assert fields == ["jobSpec.workerPoolSpecs[1].containerSpec.imageUri"]


def test_tpu_runtime_error_names_the_tpu_generation() -> None:
    payload = job(pool("ct6e-standard-1t", topology="1x1", image="gcr.io/p/trainer.py39:1"))
    (refused,) = [p for p in validate_custom_job(payload) if p.code == "tpu-runtime"]
    assert refused.message.startswith("TPU v6e needs Python 3.10+")

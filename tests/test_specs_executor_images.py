"""Executor images: availability dates, what a tag says, no retired recommendation, and no
"ready to submit" when a package's fit to its image is unknown."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

from tests.examples import DRINK_SHOPS
from vertex_retrain.build.package_metadata import read_package_metadata
from vertex_retrain.cli.preflight import report
from vertex_retrain.specs.containers import load_containers
from vertex_retrain.specs.executor_images import (
    RETIRING_WITHIN,
    available_training_images,
    executor_image_problems,
)
from vertex_retrain.specs.package_compat import package_problems
from vertex_retrain.specs.pool_rules import check_pool_structure
from vertex_retrain.specs.problems import errors_of, warning
from vertex_retrain.specs.validate import validate_custom_job

GPU_310 = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
END = dt.date(2026, 7, 24)  # its end of availability (containers.yaml, T1 and T2)
TAG_38 = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.1-13.py38:latest"
FIELD = "jobSpec.workerPoolSpecs[0].pythonPackageSpec.packageUris[0]"
TODAY = dt.date(2026, 12, 2)
LAST_END = dt.date(2026, 10, 23)  # pytorch-xla.2-2.py310's, the catalog's latest torch date


def _codes(problems: list) -> list[str]:
    return [p.code for p in problems]


def test_executor_image_within_90_days_of_its_end_is_a_warning_and_not_before() -> None:
    (near,) = executor_image_problems(GPU_310, "f", today=END - RETIRING_WITHIN + dt.timedelta(1))
    assert near.code == "executor-image-retiring" and near.severity == "warning"
    assert "2026-07-24 (89 days)" in near.message
    # The day before the 90-day window: only the (long past) end of patch is said.
    assert _codes(executor_image_problems(GPU_310, "f", today=END - RETIRING_WITHIN)) == [
        "executor-image-unpatched"
    ]
    (last_day,) = executor_image_problems(GPU_310, "f", today=END)
    assert last_day.code == "executor-image-retiring"


def test_executor_image_past_its_end_names_no_retired_alternative() -> None:
    (retired,) = executor_image_problems(GPU_310, "f", today=END + dt.timedelta(1))
    assert retired.code == "executor-image-retired" and "2026-07-24" in retired.message
    catalog = load_containers()
    names = [i.name for i in catalog.training.values()]
    for alternative in retired.alternatives:
        gone = [n for n in names if n in alternative]
        assert all(
            catalog.training[n].end_of_availability >= END + dt.timedelta(1)  # type: ignore[operator]
            for n in gone
        ), alternative
    assert any("custom container" in a for a in retired.alternatives)


def test_available_training_images_leave_out_those_past_their_end() -> None:
    catalog = load_containers()
    before = [i.name for i in available_training_images(catalog, framework="torch", today=END)]
    after = [i.name for i in available_training_images(catalog, framework="torch", today=LAST_END)]
    assert "pytorch-gpu.2-4.py310" in before and "pytorch-gpu.2-4.py310" not in after
    # The last torch training image the catalog records ends the day before.
    next_day = LAST_END + dt.timedelta(1)
    assert available_training_images(catalog, framework="torch", today=next_day) == []
    assert after == ["pytorch-xla.2-2.py310"]


def test_package_python_is_checked_against_the_tag_of_an_image_outside_the_catalog() -> None:
    assert load_containers().lookup(TAG_38) is None
    metadata = read_package_metadata(DRINK_SHOPS / "trainer")
    (refusal,) = errors_of(package_problems(metadata, TAG_38, FIELD, today=TODAY))
    assert refusal.code == "package-python"
    assert "Python 3.8 read from its tag" in refusal.message
    assert "requires Python >=3.10" in refusal.message
    # Nothing available today is recommended in its place: every torch image has ended.
    assert not any("pytorch-gpu" in a for a in refusal.alternatives)
    (unknown,) = executor_image_problems(TAG_38, "f", today=TODAY)
    assert unknown.code == "executor-image-unknown" and "Python 3.8" in unknown.message


def test_package_recommends_only_images_available_that_day() -> None:
    metadata = read_package_metadata(DRINK_SHOPS / "trainer")
    (refusal,) = errors_of(package_problems(metadata, TAG_38, FIELD, today=END))
    assert any("pytorch-gpu.2-4.py310" in a for a in refusal.alternatives)


def test_preflight_report_with_unknown_compatibility_is_not_ready_to_submit() -> None:
    unknown = warning("f", "x", "unknown", code="package-python-unknown")
    out = io.StringIO()
    report("p", [unknown], out)
    assert "0 error(s), 1 warning(s): not ready" in out.getvalue()
    assert "ready to submit" not in out.getvalue()
    known = io.StringIO()
    report("p", [warning("f", "x", "slow", code="registry-region")], known)
    assert "ready to submit" in known.getvalue()


def test_preflight_report_with_a_retired_image_would_fail_and_a_retiring_one_is_ready() -> None:
    (retired,) = executor_image_problems(GPU_310, "f", today=END + dt.timedelta(1))
    assert retired.severity == "error"
    out = io.StringIO()
    report("p", [retired], out)
    assert "1 error(s), 0 warning(s): would fail on Vertex" in out.getvalue()
    (retiring,) = executor_image_problems(GPU_310, "f", today=END - dt.timedelta(10))
    assert retiring.code == "executor-image-retiring" and retiring.severity == "warning"
    soon = io.StringIO()
    report("p", [retiring], soon)
    assert "ready to submit" in soon.getvalue()  # still available: a warning only


def _package_job(image: str) -> dict:
    package = {"executorImageUri": image, "pythonModule": "m", "packageUris": ["gs://b/p.whl"]}
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1}
    return {
        "displayName": "j",
        "jobSpec": {"workerPoolSpecs": [{**pool, "pythonPackageSpec": package}]},
    }


def test_validate_refuses_a_retired_executor_image_and_warns_within_90_days() -> None:
    field = "jobSpec.workerPoolSpecs[0].pythonPackageSpec.executorImageUri"

    def found(today: dt.date) -> list:
        problems = validate_custom_job(_package_job(GPU_310), today=today, check_fields=False)
        return [(p.severity, p.code) for p in problems if p.field == field]

    assert found(END + dt.timedelta(1)) == [("error", "executor-image-retired")]
    assert found(END) == [("warning", "executor-image-retiring")]
    assert found(END - RETIRING_WITHIN + dt.timedelta(1)) == [
        ("warning", "executor-image-retiring")
    ]
    assert found(END - RETIRING_WITHIN) == []
    (retired,) = [
        p
        for p in validate_custom_job(_package_job(GPU_310), today=TODAY, check_fields=False)
        if p.field == field
    ]
    assert not any("pytorch" in a for a in retired.alternatives)  # none available that day
    assert any("custom container" in a for a in retired.alternatives)


def test_validate_refuses_a_retired_prebuilt_image_run_as_the_container() -> None:
    field = "jobSpec.workerPoolSpecs[0].containerSpec.imageUri"
    pool = {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1}

    def found(image: str, today: dt.date) -> list:
        job = {
            "displayName": "j",
            "jobSpec": {"workerPoolSpecs": [{**pool, "containerSpec": {"imageUri": image}}]},
        }
        problems = validate_custom_job(job, today=today, check_fields=False)
        return [(p.severity, p.code) for p in problems if p.field == field]

    assert found(GPU_310, END + dt.timedelta(1)) == [("error", "executor-image-retired")]
    assert found(GPU_310, END - RETIRING_WITHIN + dt.timedelta(1)) == [
        ("warning", "executor-image-retiring")
    ]
    assert found(GPU_310, END - RETIRING_WITHIN) == []
    # The team's own image has no end of availability here.
    assert found("us-central1-docker.pkg.dev/p/r/trainer@sha256:" + "a" * 64, TODAY) == []


def test_validate_never_recommends_a_retired_executor_image() -> None:
    package = {"pythonModule": "m", "packageUris": ["gs://b/p.whl"]}
    pools = [{"machineSpec": {"machineType": "n1-standard-4"}, "pythonPackageSpec": package}]
    (missing,) = [
        p for p in check_pool_structure(pools, "jobSpec") if "executorImageUri" in p.field
    ]
    catalog = load_containers()
    for alternative in missing.alternatives:
        for name, image in catalog.training.items():
            if name in alternative:
                assert image.end_of_availability and image.end_of_availability >= TODAY


def test_validate_gpu_image_and_dockerfile_advice_name_no_retired_image() -> None:
    from vertex_retrain.build.dockerfile_lint import lint_dockerfile, parse_dockerfile
    from vertex_retrain.specs.image_rules import check_gpu_image

    pool = {
        "machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4"},
        "containerSpec": {"imageUri": "europe-west4-docker.pkg.dev/p/r/trainer:1"},
    }
    (advice,) = check_gpu_image(pool, "jobSpec.workerPoolSpecs[0]")
    info = parse_dockerfile('FROM python:3.12-slim-trixie\nENTRYPOINT ["python"]\n')
    (lint,) = [f for f in lint_dockerfile(info, context=Path("."), files=[], gpu=True)]
    said = [*advice.alternatives, lint.message]
    retired = [
        name
        for name, image in load_containers().training.items()
        if image.end_of_availability and image.end_of_availability < TODAY
    ]
    assert not [(n, s) for n in retired for s in said if n.split(".py")[0] in s]
    assert any("nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04" in s for s in said)

"""Builders: payload shape, proto round trip for every builder, refusal and warnings."""

from __future__ import annotations

import datetime as dt
import warnings

import pytest

from vertex_retrain.specs import (
    CategoricalParameter,
    Conditional,
    ContainerCode,
    CustomJobSpec,
    DiscreteParameter,
    Disk,
    DoubleParameter,
    IntegerParameter,
    JobSpecError,
    JobSpecWarning,
    Machine,
    Metric,
    PayloadProtoError,
    PythonPackageCode,
    ReservationAffinity,
    Scheduling,
    TuningJobSpec,
    WorkerPool,
    canonical_payload,
    check_payload_parses,
    reduction_server_pool,
    validate_custom_job,
)
from vertex_retrain.specs.problems import errors_of

# These tests are about the other rules, on prebuilt images that Google serves: every
# training image of the shipped catalog has ended, which test_specs_executor_images tests.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")

TODAY = dt.date(2026, 11, 29)
GPU_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"


def _t4_pool(count: int = 2, replicas: int = 1) -> WorkerPool:
    return WorkerPool(
        Machine("n1-standard-16", "NVIDIA_TESLA_T4", count),
        ContainerCode(GPU_IMAGE, args=("--epochs=3",), env={"SEED": "1"}),
        replica_count=replicas,
        disk=Disk("pd-ssd", 200),
    )


def _full_job() -> CustomJobSpec:
    return CustomJobSpec(
        display_name="recommender",
        primary=_t4_pool(),
        workers=_t4_pool(replicas=3),
        reduction_server=reduction_server_pool(2),
        evaluators=WorkerPool(
            Machine("n1-standard-4"),
            PythonPackageCode(
                GPU_IMAGE.replace("gpu", "cpu"), ("gs://b/t.tar.gz",), "trainer.eval"
            ),
        ),
        scheduling=Scheduling(
            timeout_s=7200,
            strategy="SPOT",
            restart_job_on_worker_restart=True,
            disable_retries=True,
        ),
        service_account="trainer@p.iam.gserviceaccount.com",
        network="projects/1/global/networks/default",
        base_output_dir="gs://bucket/runs/1",
        labels={"team": "recsys"},
        tensorboard="projects/p/locations/us-central1/tensorboards/1",
        distribution="ddp",
    )


def _tuning_job(trial: CustomJobSpec, **kw: object) -> TuningJobSpec:
    params = (
        DoubleParameter("lr", 1e-4, 1e-1, scale="log"),
        IntegerParameter(
            "layers", 1, 4, children=(Conditional((3, 4), IntegerParameter("width", 32, 256)),)
        ),
        DiscreteParameter("batch", (32, 64, 128)),
        CategoricalParameter(
            "optimizer",
            ("adam", "sgd"),
            children=(Conditional(("sgd",), DoubleParameter("momentum", 0.0, 0.99)),),
        ),
    )
    args: dict[str, object] = {
        "display_name": "tune",
        "trial_job": trial,
        "metrics": (Metric("accuracy", "MAXIMIZE"),),
        "parameters": params,
        "max_trial_count": 20,
        "parallel_trial_count": 4,
        "max_failed_trial_count": 3,
        "measurement_selection": "BEST_MEASUREMENT",
    }
    args.update(kw)
    return TuningJobSpec(**args)  # type: ignore[arg-type]


def test_custom_job_spec_payload_places_pools_by_role() -> None:
    payload = _full_job().to_payload(today=TODAY)
    pools = payload["jobSpec"]["workerPoolSpecs"]
    assert [p["replicaCount"] for p in pools] == ["1", "3", "2", "1"]
    assert "reductionserver" in pools[2]["containerSpec"]["imageUri"]
    assert pools[2]["machineSpec"] == {"machineType": "n1-highcpu-16"}
    assert pools[3]["pythonPackageSpec"]["pythonModule"] == "trainer.eval"
    assert payload["jobSpec"]["scheduling"]["strategy"] == "SPOT"
    assert payload["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://bucket/runs/1"}
    assert payload["labels"] == {"team": "recsys", "distribution": "ddp"}


def test_custom_job_spec_payload_round_trips_through_proto() -> None:
    payload = _full_job().to_payload(today=TODAY)
    assert canonical_payload(payload, "custom_job") == payload


def test_custom_job_spec_minimal_and_flex_start_round_trip() -> None:
    minimal = CustomJobSpec(
        "cpu", WorkerPool(Machine("n1-standard-4"), ContainerCode("gcr.io/p/t:1"))
    )
    flex = CustomJobSpec(
        "flex",
        WorkerPool(
            Machine(
                "a2-highgpu-1g",
                "NVIDIA_TESLA_A100",
                1,
                reservation=ReservationAffinity(
                    "SPECIFIC_RESERVATION", ("projects/p/zones/z/reservations/r",)
                ),
            ),
            ContainerCode(GPU_IMAGE),
        ),
        scheduling=Scheduling(strategy="FLEX_START", max_wait_s=3600),
    )
    for spec in (minimal, flex):
        payload = spec.to_payload(today=TODAY)
        assert canonical_payload(payload, "custom_job") == payload
    assert flex.to_payload(today=TODAY)["jobSpec"]["scheduling"]["maxWaitDuration"] == "3600s"


def test_tpu_job_spec_round_trips_through_proto() -> None:
    spec = CustomJobSpec(
        "tpu",
        WorkerPool(
            Machine("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", tpu_topology="2x2"),
            ContainerCode("us-docker.pkg.dev/vertex-ai/training/tf-tpu.2-15.py310:latest"),
        ),
    )
    payload = spec.to_payload(today=TODAY)
    assert canonical_payload(payload, "custom_job") == payload


def test_tuning_job_spec_payload_round_trips_through_proto() -> None:
    payload = _tuning_job(_full_job()).to_payload(today=TODAY)
    assert "algorithm" not in payload["studySpec"]  # Bayesian = ALGORITHM_UNSPECIFIED
    assert canonical_payload(payload, "tuning_job") == payload
    children = payload["studySpec"]["parameters"][1]["conditionalParameterSpecs"]
    assert children[0]["parentIntValues"] == {"values": ["3", "4"]}


def test_tuning_job_spec_grid_and_random_round_trip() -> None:
    trial = CustomJobSpec("t", _t4_pool(count=1))
    grid = TuningJobSpec(
        "grid",
        trial,
        (Metric("loss", "MINIMIZE"),),
        (DiscreteParameter("batch", (32, 64)), CategoricalParameter("opt", ("adam", "sgd"))),
        max_trial_count=4,
        parallel_trial_count=2,
        algorithm="GRID_SEARCH",
    )
    random = TuningJobSpec(
        "random",
        trial,
        (Metric("loss", "MINIMIZE"),),
        (DoubleParameter("lr", 0.001, 0.1),),
        max_trial_count=4,
        parallel_trial_count=2,
        algorithm="RANDOM_SEARCH",
    )
    for spec in (grid, random):
        payload = spec.to_payload(today=TODAY)
        assert canonical_payload(payload, "tuning_job") == payload
    assert grid.to_payload(today=TODAY)["studySpec"]["algorithm"] == "GRID_SEARCH"


def test_check_payload_parses_refuses_unknown_field() -> None:
    payload = _full_job().to_payload(today=TODAY)
    payload["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["gpuCount"] = 2
    with pytest.raises(PayloadProtoError, match="gpuCount"):
        check_payload_parses(payload, "custom_job")


def test_custom_job_spec_to_payload_raises_with_every_error() -> None:
    spec = CustomJobSpec(
        "bad",
        WorkerPool(
            Machine("n1-standard-8", "NVIDIA_TESLA_T4", 3),
            ContainerCode(GPU_IMAGE),
            replica_count=2,
        ),
        scheduling=Scheduling(strategy="SPOT", max_wait_s=60),
        distribution="ddp",
    )
    with pytest.raises(JobSpecError) as info:
        spec.to_payload(today=TODAY)
    text = str(info.value)
    assert "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount = 3" in text
    assert "acceleratorCount 2; acceleratorCount 4" in text
    assert "jobSpec.workerPoolSpecs[0].replicaCount" in text
    assert "jobSpec.scheduling.maxWaitDuration" in text and "strategy FLEX_START" in text
    assert len(info.value.errors) == 3
    assert isinstance(info.value, ValueError)


def test_custom_job_spec_refuses_parameter_servers_with_reduction_server() -> None:
    spec = CustomJobSpec(
        "both",
        _t4_pool(),
        workers=_t4_pool(replicas=2),
        parameter_servers=WorkerPool(Machine("n1-standard-8"), ContainerCode("gcr.io/p/ps:1")),
        reduction_server=reduction_server_pool(1),
        distribution="ddp",
    )
    with pytest.raises(JobSpecError) as raised:
        spec.to_payload(today=TODAY)
    role = [p for p in raised.value.errors if p.code == "pool-order"]
    assert [(p.field, p.value, p.message, p.alternatives) for p in role] == [
        ("parameter_servers", "parameter_servers and reduction_server",
         "Both use pool [2]; a job has parameter servers or a Reduction Server.",
         ("parameter_servers=None", "reduction_server=None")),
    ]  # fmt: skip


def test_custom_job_spec_emits_warnings_for_soft_pitfalls() -> None:
    spec = CustomJobSpec(
        "risky",
        WorkerPool(
            Machine("n1-highmem-2", "NVIDIA_TESLA_T4", 1), ContainerCode("gcr.io/p/train:1")
        ),
        workers=WorkerPool(
            Machine("n1-standard-8", "NVIDIA_TESLA_T4", 1), ContainerCode(GPU_IMAGE)
        ),
        scheduling=Scheduling(strategy="SPOT"),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        payload = spec.to_payload(today=TODAY)
    messages = [str(w.message) for w in caught if issubclass(w.category, JobSpecWarning)]
    assert payload["jobSpec"]["scheduling"]["strategy"] == "SPOT"
    codes = {p.code for p in spec.validate(today=TODAY)}
    assert codes == {
        "gpu-machine-too-small",
        "gpu-image-not-cuda",
        "spot-no-checkpoint",
        "no-distribution",
    }
    assert len(messages) == 4
    assert any("n1-highmem-2" in m and "n1-highmem-4" in m for m in messages)


def test_worker_pool_base_image_silences_cuda_warning() -> None:
    pool = WorkerPool(
        Machine("n1-standard-8", "NVIDIA_TESLA_T4", 1),
        ContainerCode("gcr.io/p/train:1"),
        base_image="nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04",
    )
    payload = CustomJobSpec("ok", pool).to_payload(today=TODAY)
    assert {p.code for p in validate_custom_job(payload, today=TODAY)} == set()
    env = payload["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
    assert {
        "name": "VERTEX_RETRAIN_BASE_IMAGE",
        "value": "nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04",
    } in env


def test_validate_custom_job_warns_on_cpu_prebuilt_image_with_gpu() -> None:
    payload = CustomJobSpec(
        "cpu-img",
        WorkerPool(
            Machine("n1-standard-8", "NVIDIA_TESLA_T4", 1),
            ContainerCode(GPU_IMAGE.replace("-gpu.", "-cpu.")),
        ),
    ).unvalidated_payload()
    [problem] = validate_custom_job(payload, today=TODAY)
    assert problem.code == "gpu-image-not-cuda" and problem.alternatives == (GPU_IMAGE,)


def test_validate_custom_job_warns_before_retirement_date() -> None:
    payload = CustomJobSpec(
        "p100",
        WorkerPool(Machine("n1-standard-8", "NVIDIA_TESLA_P100", 1), ContainerCode(GPU_IMAGE)),
    ).unvalidated_payload()
    before = validate_custom_job(payload, today=dt.date(2026, 9, 1))
    after = validate_custom_job(payload, today=dt.date(2026, 9, 15))
    assert [(p.severity, p.code) for p in before] == [("warning", "gpu-retiring")]
    assert [(p.severity, p.code) for p in after] == [("error", "gpu-retired")]


def test_validate_custom_job_accepts_snake_case_and_gcloud_body() -> None:
    body = {
        "worker_pool_specs": [
            {
                "machine_spec": {
                    "machine_type": "n1-standard-8",
                    "accelerator_type": "NVIDIA_TESLA_T4",
                    "accelerator_count": 3,
                },
                "replica_count": 1,
                "container_spec": {"image_uri": GPU_IMAGE},
            }
        ]
    }
    problems = errors_of(validate_custom_job(body, today=TODAY))
    assert [p.field for p in problems] == [
        "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount"
    ]


def test_tuning_job_spec_refuses_grid_over_double() -> None:
    trial = CustomJobSpec("t", _t4_pool(count=1))
    spec = _tuning_job(trial, algorithm="GRID_SEARCH")
    with pytest.raises(JobSpecError, match=r"studySpec.parameters\[0\].doubleValueSpec"):
        spec.to_payload(today=TODAY)


def test_custom_job_spec_judges_on_the_catalog_and_the_day_it_is_given() -> None:
    from dataclasses import replace

    from vertex_retrain.specs.machine_catalog import load_catalog

    catalog = load_catalog()
    smaller = replace(catalog, machines={k: v for k, v in catalog.machines.items()
                                         if k != "n1-standard-4"})  # fmt: skip
    own = CustomJobSpec("own", WorkerPool(Machine("n1-standard-4"), ContainerCode("gcr.io/p/t:1")))
    assert errors_of(own.validate(today=TODAY)) == []
    assert errors_of(own.validate(catalog=smaller, today=TODAY))
    with pytest.raises(JobSpecError):
        own.to_payload(catalog=smaller, today=TODAY)
    prebuilt = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    retired = CustomJobSpec("p", WorkerPool(Machine("n1-standard-4"), ContainerCode(prebuilt)))
    # This module's catalog serves its training images until 2099-12-31.
    assert errors_of(retired.validate(today=dt.date(2099, 12, 1))) == []
    assert errors_of(retired.validate(today=dt.date(2100, 1, 1)))
    with pytest.raises(JobSpecError):
        retired.to_payload(today=dt.date(2100, 1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # retiring within 90 days: a warning
        retired.to_payload(today=dt.date(2099, 12, 1))

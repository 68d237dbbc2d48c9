"""The exact problems the job, study and registry rules report: field, value, words, code.

The case tables (tests/test_specs_cases.py) check that a rule fires at the right field; these
pin down what it says, on both sides of each limit, so a rule that loses its message, its
alternatives or its code fails a test (docs/mutation-testing.md).
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests.test_specs_cases import CPU_IMAGE, DDP, N1_T4, RS_IMAGE, job, pool
from vertex_retrain.specs import validate_custom_job
from vertex_retrain.specs.job_rules import (
    _check_scheduling,
    check_job_spec,
    check_labels,
    declares_checkpoints,
    declares_distribution,
)
from vertex_retrain.specs.machine_catalog import load_catalog
from vertex_retrain.specs.problems import Problem
from vertex_retrain.specs.registry_rules import (
    RegistryLocation,
    image_location_problems,
    is_region,
    placeholder_problems,
    registry_location,
    serves_region,
)
from vertex_retrain.specs.scheduling import Scheduling
from vertex_retrain.specs.tuning_rules import check_study

# The other rules, on prebuilt images that Google serves (the shipped catalog's have ended:
# test_specs_executor_images).
pytestmark = pytest.mark.usefixtures("catalog_still_serving")

_LR = {
    "parameterId": "lr",
    "doubleValueSpec": {"minValue": 1e-4, "maxValue": 1e-1},
    "scaleType": "UNIT_LOG_SCALE",
}
_STUDY = {"metrics": [{"metricId": "auc", "goal": "MAXIMIZE"}], "parameters": [_LR]}


def _error(field: str, value: Any, message: str, *alternatives: str, code: str) -> Problem:
    return Problem("error", field, value, message, alternatives, code)


def _warning(field: str, value: Any, message: str, *alternatives: str, code: str) -> Problem:
    return Problem("warning", field, value, message, alternatives, code)


def _counts(**counts: Any) -> list[Problem]:
    return check_study({"studySpec": _STUDY, **counts})


# --- trial counts ----------------------------------------------------------------------------


def test_study_trial_counts_are_required_except_failures() -> None:
    assert _counts() == [
        _error(
            "maxTrialCount",
            None,
            "A tuning job needs maxTrialCount.",
            "maxTrialCount 10",
            code="trial-counts",
        ),
        _error(
            "parallelTrialCount",
            None,
            "A tuning job needs parallelTrialCount.",
            "parallelTrialCount 10",
            code="trial-counts",
        ),
    ]


def test_study_trial_count_floors_in_words() -> None:
    assert _counts(maxTrialCount=0, parallelTrialCount="x", maxFailedTrialCount=-1) == [
        _error(
            "maxTrialCount",
            0,
            "maxTrialCount must be an integer >= 1.",
            "maxTrialCount 1",
            code="trial-counts",
        ),
        _error(
            "parallelTrialCount",
            "x",
            "parallelTrialCount must be an integer >= 1.",
            "parallelTrialCount 1",
            code="trial-counts",
        ),
        _error(
            "maxFailedTrialCount",
            -1,
            "maxFailedTrialCount must be an integer >= 0.",
            "maxFailedTrialCount 1",
            code="trial-counts",
        ),
    ]


@pytest.mark.parametrize(("failed", "valid"), [(0, True), (-1, False)])
def test_study_max_failed_trial_count_floor_is_zero(failed: int, valid: bool) -> None:
    fields = [
        p.field
        for p in _counts(maxTrialCount=2, parallelTrialCount=1, **{"maxFailedTrialCount": failed})
    ]
    assert ("maxFailedTrialCount" in fields) is not valid


def test_study_more_parallel_than_total_names_both_fixes() -> None:
    assert _counts(maxTrialCount=4, parallelTrialCount=5) == [
        _error(
            "parallelTrialCount",
            5,
            "More parallel trials than trials in total (4).",
            "parallelTrialCount 4 or fewer",
            "maxTrialCount 5 or more",
            code="parallel-over-max",
        )
    ]


@pytest.mark.parametrize(
    ("max_trials", "failed", "suggested"), [(4, 5, "2"), (1, 2, "1"), (3, 4, "1")]
)
def test_study_more_failures_than_trials_is_a_warning(
    max_trials: int, failed: int, suggested: str
) -> None:
    assert _counts(maxTrialCount=max_trials, parallelTrialCount=1, maxFailedTrialCount=failed) == [
        _warning(
            "maxFailedTrialCount",
            failed,
            f"More allowed failures than trials ({max_trials}); the limit can never trigger.",
            f"maxFailedTrialCount {suggested}",
            code="trial-counts",
        )
    ]


@pytest.mark.parametrize("failed", [3, 4])
def test_study_failures_up_to_the_total_are_fine(failed: int) -> None:
    assert _counts(maxTrialCount=4, parallelTrialCount=4, maxFailedTrialCount=failed) == []


def test_study_counts_given_as_strings_are_read_as_integers() -> None:
    assert _counts(maxTrialCount="4", parallelTrialCount="4", maxFailedTrialCount="0") == []
    assert [p.code for p in _counts(maxTrialCount="4", parallelTrialCount="5")] == [
        "parallel-over-max"
    ]


# --- study -----------------------------------------------------------------------------------

_COUNTS = {"maxTrialCount": 4, "parallelTrialCount": 2}


def test_study_missing_in_words() -> None:
    assert check_study({"studySpec": 3, **_COUNTS}) == [
        _error(
            "studySpec",
            3,
            "A tuning job needs a studySpec.",
            "{metrics: [...], parameters: [...]}",
            code="study-missing",
        )
    ]


def test_study_fields_in_words() -> None:
    study = {
        "algorithm": "BAYES",
        "measurementSelectionType": "X",
        "metrics": [{}, {"metricId": "auc", "goal": "MINIMIZE"}],
        "parameters": [],
    }
    assert check_study({"studySpec": study, **_COUNTS}) == [
        _error(
            "studySpec.algorithm",
            "BAYES",
            "Unknown search algorithm.",
            "leave unset for Bayesian optimisation",
            "GRID_SEARCH",
            "RANDOM_SEARCH",
            code="algorithm",
        ),
        _error(
            "studySpec.measurementSelectionType",
            "X",
            "Unknown measurement selection.",
            "LAST_MEASUREMENT",
            "BEST_MEASUREMENT",
            code="measurement",
        ),
        _error(
            "studySpec.metrics[0].metricId",
            None,
            "A metric needs an id.",
            "accuracy",
            code="metrics",
        ),
        _error(
            "studySpec.metrics[0].goal",
            None,
            "A metric goal is MAXIMIZE or MINIMIZE.",
            "MAXIMIZE",
            "MINIMIZE",
            code="metrics",
        ),
        _error(
            "studySpec.parameters",
            [],
            "List at least one parameter to tune.",
            "[{parameterId: learning_rate, doubleValueSpec: {minValue: 1e-4, maxValue: 1e-1}, "
            "scaleType: UNIT_LOG_SCALE}]",
            code="parameters",
        ),
    ]


@pytest.mark.parametrize("metrics", [None, [], {"metricId": "auc"}])
def test_study_without_metrics_in_words(metrics: Any) -> None:
    study = {"metrics": metrics, "parameters": [_LR]}
    assert check_study({"studySpec": study, **_COUNTS}) == [
        _error(
            "studySpec.metrics",
            metrics,
            "Name the metric to optimise and its goal "
            "(what the trainer reports with cloudml-hypertune).",
            "[{metricId: accuracy, goal: MAXIMIZE}]",
            code="metrics",
        )
    ]


@pytest.mark.parametrize(
    "study",
    [
        {
            **_STUDY,
            "algorithm": "GRID_SEARCH",
            "parameters": [{"parameterId": "n", "discreteValueSpec": {"values": [1, 2]}}],
        },
        {**_STUDY, "algorithm": "RANDOM_SEARCH"},
        {**_STUDY, "algorithm": "ALGORITHM_UNSPECIFIED"},
        {**_STUDY, "measurementSelectionType": "BEST_MEASUREMENT"},
        {**_STUDY, "measurementSelectionType": "MEASUREMENT_SELECTION_TYPE_UNSPECIFIED"},
        {**_STUDY, "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}]},
    ],
)
def test_study_valid_choices_pass(study: dict[str, Any]) -> None:
    assert check_study({"studySpec": study, **_COUNTS}) == []


def test_study_parameters_are_checked_each_at_its_index() -> None:
    study = {**_STUDY, "parameters": [_LR, {"parameterId": "x"}]}
    assert {p.field.split(".")[1] for p in check_study({"studySpec": study, **_COUNTS})} == {
        "parameters[1]"
    }


# --- labels and scheduling -------------------------------------------------------------------


def test_labels_refusals_in_words() -> None:
    assert check_labels({"Team": "ML x", "distribution": "mpi"}, "labels") == [
        _error(
            "labels.Team",
            "ML x",
            "Label keys start with a lowercase letter; keys and values use only lowercase "
            "letters, digits, '_' and '-' (at most 63 characters).",
            "team=ml_x",
            code="labels",
        ),
        _error(
            "labels.distribution",
            "mpi",
            "Unknown distributed-training setup.",
            "ddp",
            "mirrored",
            "multi_worker_mirrored",
            "parameter_server",
            "reduction_server",
            "model_parallel",
            code="distribution",
        ),
    ]
    assert check_labels(["a"], "labels") == [
        _error("labels", ["a"], "labels must be a map of strings.", code="labels")
    ]
    assert check_labels(None, "labels") == []
    assert check_labels({"team": "ml", "distribution": "ddp", "k": ""}, "labels") == []


def test_scheduling_refusals_in_words() -> None:
    scheduling = {
        "strategy": "LOW_COST",
        "timeout": "1h",
        "maxWaitDuration": "10s",
        "restartJobOnWorkerRestart": "yes",
        "disableRetries": 1,
    }
    assert _check_scheduling(scheduling, "s") == [
        _warning(
            "s.strategy",
            "LOW_COST",
            "LOW_COST is deprecated in the v1 API.",
            "strategy SPOT",
            code="strategy",
        ),
        _error(
            "s.timeout",
            "1h",
            "Durations are strings of seconds with an 's' suffix.",
            '"3600s"',
            '"86400s"',
            code="duration",
        ),
        _error(
            "s.maxWaitDuration",
            "10s",
            "maxWaitDuration only applies to strategy FLEX_START (Dynamic Workload Scheduler); "
            "the strategy is LOW_COST.",
            "strategy FLEX_START",
            "remove maxWaitDuration",
            code="max-wait-without-flex",
        ),
        _error(
            "s.restartJobOnWorkerRestart",
            "yes",
            "Must be true or false.",
            "true",
            "false",
            code="type",
        ),
        _error("s.disableRetries", 1, "Must be true or false.", "true", "false", code="type"),
    ]
    assert _check_scheduling({"strategy": "FAST"}, "s") == [
        _error(
            "s.strategy",
            "FAST",
            "Unknown scheduling strategy.",
            "strategy STANDARD",
            "strategy SPOT",
            "strategy FLEX_START",
            code="strategy",
        )
    ]
    assert _check_scheduling(3, "s") == [
        _error("s", 3, "scheduling must be an object.", code="type")
    ]
    assert [p.message for p in _check_scheduling({"maxWaitDuration": "10s"}, "s")] == [
        "maxWaitDuration only applies to strategy FLEX_START (Dynamic Workload Scheduler); "
        "the strategy is unset (STANDARD)."
    ]
    flex = {"strategy": "FLEX_START", "maxWaitDuration": "10s", "timeout": "60s"}
    assert _check_scheduling(flex, "s") == []
    assert _check_scheduling({"disableRetries": False, "strategy": "ON_DEMAND"}, "s") == [
        _warning(
            "s.strategy",
            "ON_DEMAND",
            "ON_DEMAND is deprecated in the v1 API.",
            "strategy STANDARD",
            code="strategy",
        )
    ]


@pytest.mark.parametrize(
    ("scheduling", "payload"),
    [
        (Scheduling(), {}),
        (
            Scheduling(
                timeout_s=3600,
                strategy="FLEX_START",
                max_wait_s=600,
                restart_job_on_worker_restart=True,
                disable_retries=True,
            ),
            {
                "timeout": "3600s",
                "restartJobOnWorkerRestart": True,
                "strategy": "FLEX_START",
                "disableRetries": True,
                "maxWaitDuration": "600s",
            },
        ),
        (Scheduling(timeout_s=0, max_wait_s=0), {"timeout": "0s", "maxWaitDuration": "0s"}),
    ],
)
def test_scheduling_payload_writes_each_field_set(
    scheduling: Scheduling, payload: dict[str, Any]
) -> None:
    assert scheduling.to_payload() == payload


@pytest.mark.parametrize(
    ("spec", "declared"),
    [
        ({}, False),
        ({"baseOutputDirectory": {"outputUriPrefix": "gs://b/r"}}, True),
        ({"baseOutputDirectory": {"outputUriPrefix": ""}}, False),
        (
            {
                "workerPoolSpecs": [
                    {
                        "containerSpec": {
                            "env": [{"name": "AIP_CHECKPOINT_DIR", "value": "gs://b/c"}]
                        }
                    }
                ]
            },
            True,
        ),
        ({"workerPoolSpecs": [{"containerSpec": {"args": ["--Checkpoint-Dir=gs://b"]}}]}, True),
        ({"workerPoolSpecs": [{"containerSpec": {"args": ["--epochs=3"]}}]}, False),
    ],
)
def test_declares_checkpoints_reads_each_declaration(spec: dict[str, Any], declared: bool) -> None:
    assert declares_checkpoints(spec) is declared


# --- registries ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "host", "location"),
    [
        ("europe-west4-docker.pkg.dev/p/r/i:1", "europe-west4-docker.pkg.dev", "europe-west4"),
        ("us-docker.pkg.dev/p/r/i", "us-docker.pkg.dev", "us"),
        ("eu.gcr.io/p/i", "eu.gcr.io", "europe"),
        ("gcr.io/p/i", "gcr.io", "us"),
        ("asia.gcr.io/p/i", "asia.gcr.io", "asia"),
        ("python:3.11", "docker.io", None),
        ("ghcr.io/o/i", "ghcr.io", None),
    ],
)
def test_registry_location_reads_the_host(image: str, host: str, location: str | None) -> None:
    assert registry_location(image) == RegistryLocation(host, location)


@pytest.mark.parametrize(
    ("location", "region", "serves"),
    [
        ("europe-west4", "europe-west4", True),
        ("europe", "europe-west4", True),
        ("us", "us-central1", True),
        ("us", "europe-west4", False),
        ("europe-west1", "europe-west4", False),
        ("eu", "europe-west4", False),
    ],
)
def test_serves_region(location: str, region: str, serves: bool) -> None:
    assert serves_region(location, region) is serves


@pytest.mark.parametrize(
    ("location", "region"), [("europe-west4", True), ("us-east1", True), ("us", False)]
)
def test_is_region(location: str, region: bool) -> None:
    assert is_region(location) is region


def test_placeholder_problems_name_up_to_four_executors() -> None:
    fix = ("vertex-retrain build-image", "--image IMAGE")
    images = [
        (f"deploymentSpec.executors.exec-{i}.container.image", "PLACEHOLDER") for i in range(6)
    ]
    assert placeholder_problems([*images, ("x.y", "real")], "PLACEHOLDER", fix) == [
        _error(
            "deploymentSpec.executors[*].container.image",
            "PLACEHOLDER",
            "The placeholder component image exists in no registry: 6 executor(s) (exec-0, "
            "exec-1, exec-2, exec-3 and 2 more) would fail to start on Vertex.",
            *fix,
            code="component-image-placeholder",
        )
    ]
    four = placeholder_problems(images[:4], "PLACEHOLDER", fix)
    assert "(exec-0, exec-1, exec-2, exec-3) would" in four[0].message
    one = placeholder_problems([("a.b", "PLACEHOLDER")], "PLACEHOLDER", fix)
    assert one[0].field == "a.b"
    assert "1 executor(s) (a.b) would" in one[0].message
    assert placeholder_problems([("a.b", "real")], "PLACEHOLDER", fix) == []


def test_image_location_problems_in_words() -> None:
    images = [
        ("a", "python:3.11"),
        ("b", "us-docker.pkg.dev/p/r/i"),
        ("c", "europe-docker.pkg.dev/p/r/i"),
    ]
    assert image_location_problems(images, "europe-west4", what="trainer image") == [
        _warning(
            "a",
            "python:3.11",
            "The trainer image is not in Artifact Registry: Vertex pulls it only if the "
            "registry is public or gives its service agent access.",
            "europe-west4-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE:TAG",
            code="registry-not-google",
        ),
        _warning(
            "b",
            "us-docker.pkg.dev/p/r/i",
            "The trainer image is stored in us, outside europe-west4: each task start pulls "
            "it across regions (slower, and network egress is billed).",
            "europe-west4-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE:TAG",
            code="registry-region",
        ),
    ]
    hinted = image_location_problems(images[1:2], "europe-west4", build_hint="make image")
    assert hinted[0].alternatives[1:] == ("make image",)
    assert hinted[0].message.startswith("The image is stored in us")


@pytest.mark.parametrize(
    ("spec", "labels", "declared"),
    [
        ({}, {"distribution": "ddp"}, True),
        ({}, {"distribution": "mpi"}, False),
        ({}, {}, False),
        ({"workerPoolSpecs": [{"containerSpec": {"command": ["torchrun", "t.py"]}}]}, {}, True),
        ({"workerPoolSpecs": [{"containerSpec": {"args": ["--epochs=3"]}}]}, {}, False),
        (
            {"workerPoolSpecs": [{"containerSpec": {"command": ["accelerate", "launch", "t.py"]}}]},
            {},
            True,
        ),
        (
            {
                "workerPoolSpecs": [
                    {"containerSpec": {"imageUri": "x"}},
                    {"containerSpec": {"imageUri": RS_IMAGE}},
                ]
            },
            {},
            True,
        ),
    ],
)
def test_declares_distribution_reads_each_declaration(
    spec: dict[str, Any], labels: dict[str, str], declared: bool
) -> None:
    assert declares_distribution(spec, labels) is declared


# --- the whole job spec ----------------------------------------------------------------------

_NO_DISTRIBUTION = (
    "distribution='ddp' (label distribution=ddp) for PyTorch DDP",
    "distribution='mirrored' (one machine, several GPUs, TensorFlow)",
    "distribution='multi_worker_mirrored' (several machines, TensorFlow)",
    "acceleratorCount 1 and replicaCount 1",
)


def _job_problems(*pools: dict[str, Any], **spec: Any) -> list[Problem]:
    return validate_custom_job(job(*pools, **spec))


def test_job_spec_must_be_an_object() -> None:
    catalog = load_catalog()
    today = datetime.date(2026, 1, 1)
    assert check_job_spec(3, "jobSpec", catalog, labels={}, labels_path="l", today=today) == [
        _error("jobSpec", 3, "The job spec must be an object.", code="type")
    ]


@pytest.mark.parametrize(("prefix", "valid"), [("gs://b/run", True), ("/tmp/run", False)])
def test_job_output_directory_is_on_cloud_storage(prefix: str, valid: bool) -> None:
    problems = _job_problems(N1_T4, baseOutputDirectory={"outputUriPrefix": prefix})
    assert problems == (
        []
        if valid
        else [
            _error(
                "jobSpec.baseOutputDirectory.outputUriPrefix",
                prefix,
                "The base output directory must be a Cloud Storage URI.",
                "gs://BUCKET/runs/RUN_ID",
                code="output-dir",
            )
        ]
    )


@pytest.mark.parametrize(
    ("output", "warned"), [(None, True), ({"outputUriPrefix": "gs://b"}, False)]
)
def test_job_on_spot_without_checkpoints_is_warned(output: Any, warned: bool) -> None:
    spec = {"scheduling": {"strategy": "SPOT"}}
    if output:
        spec["baseOutputDirectory"] = output
    expected = _warning(
        "jobSpec.baseOutputDirectory",
        None,
        "Spot VMs can be reclaimed at any time; without a checkpoint directory a preempted "
        "job restarts from step 0 and the savings are lost.",
        "baseOutputDirectory.outputUriPrefix gs://BUCKET/run (gives AIP_CHECKPOINT_DIR)",
        "an AIP_CHECKPOINT_DIR env var or a --checkpoint-dir argument",
        code="spot-no-checkpoint",
    )
    assert _job_problems(N1_T4, **spec) == ([expected] if warned else [])


@pytest.mark.parametrize(("gpus", "warned"), [(1, False), (2, True)])
def test_job_with_more_than_one_gpu_declares_its_distribution(gpus: int, warned: bool) -> None:
    problems = _job_problems(pool("n1-standard-8", "NVIDIA_TESLA_T4", gpus))
    expected = _warning(
        "labels.distribution",
        None,
        f"{gpus} GPU(s) on 1 replica(s) but no distributed setup declared: without DDP or a "
        "tf.distribute strategy only one GPU does the work.",
        *_NO_DISTRIBUTION,
        code="no-distribution",
    )
    assert problems == ([expected] if warned else [])
    assert (
        validate_custom_job(job(pool("n1-standard-8", "NVIDIA_TESLA_T4", gpus), labels=DDP)) == []
    )


@pytest.mark.parametrize(("workers", "warned"), [(0, False), (1, True), (2, True)])
def test_job_on_several_cpu_replicas_declares_its_distribution(workers: int, warned: bool) -> None:
    pools = [pool("n1-standard-4", image=CPU_IMAGE)]
    if workers:
        pools.append(pool("n1-standard-4", image=CPU_IMAGE, replicas=workers))
    expected = (
        [
            (
                "labels.distribution",
                f"0 GPU(s) on {1 + workers} replica(s) but no distributed setup declared",
            )
        ]
        if warned
        else []
    )
    assert [(p.field, p.message.split(":")[0]) for p in _job_problems(*pools)] == expected


def test_scheduling_strategy_unspecified_is_accepted() -> None:
    assert _check_scheduling({"strategy": "STRATEGY_UNSPECIFIED"}, "s") == []


@pytest.mark.parametrize(
    ("field", "shown"),
    [
        ("deploymentSpec.executors.exec-a.container", "exec-a"),
        ("deploymentSpec.executors.exec-a", "deploymentSpec.executors.exec-a"),
    ],
)
def test_placeholder_problems_name_the_executor_of_a_field(field: str, shown: str) -> None:
    (problem,) = placeholder_problems([(field, "P")], "P", ())
    assert f"1 executor(s) ({shown}) would" in problem.message


@pytest.mark.parametrize(("count", "more"), [(4, ""), (5, " and 1 more")])
def test_placeholder_problems_show_four_executors_then_a_count(count: int, more: str) -> None:
    images = [(f"d.e.exec-{i}.c", "P") for i in range(count)]
    (problem,) = placeholder_problems(images, "P", ())
    assert f"(exec-0, exec-1, exec-2, exec-3{more}) would" in problem.message

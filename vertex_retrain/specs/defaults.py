"""The one definition of every default a training, tuning or evaluation job gets.

Read by the request types (:class:`vertex_retrain.steps.job_request.TrainingRequest`,
:class:`vertex_retrain.steps.tune.TuningRequest`), the pipelines' signatures
(``pipelines/weekly.py``, ``pipelines/experiment.py``) and the cost estimate's fallbacks, so
a run and its estimate start from the same job shape.

Component signatures (``components/*.py``) cannot name this module in their source: KFP
embeds a lightweight component's source and runs it on its own, so a default such as
``= TRAINING.machine_type`` would raise ``NameError`` in the executor. They write ``...``, and
``components/signature_defaults.py`` sets the value from here when the component is declared,
before KFP reads its signature.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CONTAINER",
    "EVALUATION",
    "PIPELINE_SERVICE_ACCOUNT",
    "PYTHON_PACKAGE",
    "RUN_PLACEHOLDERS",
    "TRAINING",
    "TUNING",
    "EvaluationDefaults",
    "RunPlaceholders",
    "TrainingDefaults",
    "TuningDefaults",
]


PIPELINE_SERVICE_ACCOUNT = "{{$.pipeline_service_account}}"
"""The account jobs, trials, evaluation jobs and deployed models run as by default: the
pipeline's own. GCPC's placeholder (``google_cloud_pipeline_components._placeholders
.SERVICE_ACCOUNT_PLACEHOLDER``): Vertex resolves it to the PipelineJob's service account (its
default account when the job sets none). A ``service_account`` parameter overrides it."""


CONTAINER = "container"
"""The templates' default ``training_code``: the jobs run a custom container built from the
team's Dockerfile (``containerSpec``), which no prebuilt-image lifecycle ends."""

PYTHON_PACKAGE = "python_package"
"""The other ``training_code``: the jobs run the team's package on a prebuilt training image
(``pythonPackageSpec.executorImageUri``), refused once Google no longer serves it."""


@dataclass(frozen=True)
class RunPlaceholders:
    """What a component's ``project``, ``location`` and ``service_account`` default to: the
    pipeline run's own, as GCPC's placeholders that Vertex resolves (the local backend's kfp
    adapter resolves them to its stand-ins).

    Attributes:
        project: The run's Google Cloud project.
        location: The run's region.
        service_account: The run's service account (:data:`PIPELINE_SERVICE_ACCOUNT`).
    """

    project: str = "{{$.pipeline_google_cloud_project_id}}"
    location: str = "{{$.pipeline_google_cloud_location}}"
    service_account: str = PIPELINE_SERVICE_ACCOUNT


@dataclass(frozen=True)
class TrainingDefaults:
    """Defaults of one training job (``train_custom_job`` and each ``hp_tune`` trial).

    The shape suits a custom PyTorch model of moderate size: a GPU (not a TPU: custom ops
    and branching), one T4 as the cost-efficient start, and Spot, which needs a trainer that
    checkpoints on SIGTERM and resumes (docs/components.md#trainer-contract).

    Attributes:
        machine_type: Machine type of every pool.
        accelerator_type: Accelerator enum name (``""``: CPU only).
        accelerator_count: Accelerators per replica.
        worker_count: Replicas in the workers pool (0: single node).
        distribution: Declared distributed setup, written as the ``distribution`` label.
        scheduling_strategy: ``STANDARD``, ``SPOT`` or ``FLEX_START``.
        timeout_seconds: Maximum run time of one job (or trial): twice the expected time.
        executor_image_uri: Prebuilt training image of a Python-package job (the explicit
            ``training_code="python_package"`` path): the container catalog's newest GPU
            PyTorch image (``specs/containers.yaml``: Python 3.10, torch 2.4), past its end of
            availability since 2026-07-24, so preflight, validate and local runs refuse it and
            name the alternatives. The templates' default jobs run a custom container built
            from the team's Dockerfile instead (:data:`CONTAINER`).
        dataset_flag: The flag that carries the dataset URI to the training code.
        expected_training_hours: Expected run time of one training job on the default
            machine, for cost estimates: a budget figure, not a measurement.
        expected_warm_training_hours: The same for a warm start from the champion
            (:mod:`vertex_retrain.rules.warm_start`): a fifth of a full retrain, the aim of
            the reference trainer's warm start, again a budget figure.
    """

    machine_type: str = "n1-standard-8"
    accelerator_type: str = "NVIDIA_TESLA_T4"
    accelerator_count: int = 1
    worker_count: int = 0
    distribution: str = "ddp"
    scheduling_strategy: str = "SPOT"
    timeout_seconds: int = 4 * 3600
    executor_image_uri: str = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
    dataset_flag: str = "--data"
    expected_training_hours: float = 2.0
    expected_warm_training_hours: float = 0.4


@dataclass(frozen=True)
class TuningDefaults:
    """Defaults of a hyperparameter tuning study (``hp_tune``).

    Attributes:
        goal: ``MAXIMIZE`` or ``MINIMIZE``.
        max_trial_count: Trials in total.
        parallel_trial_count: Trials at once.
        max_failed_trial_count: Failed trials tolerated before the study fails.
        measurement_selection: ``BEST_MEASUREMENT`` or ``LAST_MEASUREMENT``.
    """

    goal: str = "MAXIMIZE"
    max_trial_count: int = 8
    parallel_trial_count: int = 2
    max_failed_trial_count: int = 2
    measurement_selection: str = "BEST_MEASUREMENT"


@dataclass(frozen=True)
class EvaluationDefaults:
    """Defaults of the evaluation job ``evaluate_model`` runs (one CPU replica, on demand).

    Attributes:
        executor_image_uri: Prebuilt image that runs the package (the training one: the
            package's framework is already there).
        machine_type: Machine of the job: scoring one held-out week needs CPUs, not a GPU.
        timeout_seconds: Maximum run time of the job.
    """

    executor_image_uri: str = TrainingDefaults.executor_image_uri
    machine_type: str = "n1-standard-8"
    timeout_seconds: int = 2 * 3600


RUN_PLACEHOLDERS = RunPlaceholders()
"""The run's placeholders."""

TRAINING = TrainingDefaults()
"""The training defaults."""

TUNING = TuningDefaults()
"""The tuning defaults."""

EVALUATION = EvaluationDefaults()
"""The evaluation job's defaults."""

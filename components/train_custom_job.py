"""train_custom_job: run a validated Vertex AI CustomJob and hand back its model directory."""

from typing import NamedTuple

from kfp.dsl import Dataset, Input, Metrics, Model, Output, OutputPath

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS, TRAINING


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(TRAINING, RUN_PLACEHOLDERS)
def train_custom_job(
    backend: str,
    display_name: str,
    base_output_directory: str,
    model: Output[Model],
    metrics: Output[Metrics],
    gcp_resources: OutputPath(str),
    python_module: str = "",
    package_uri: str = "",
    package_uris: list = [],  # noqa: B006 - KFP reads defaults from the signature
    executor_image_uri: str = ...,
    image_uri: str = "",
    args: list = [],  # noqa: B006
    dataset: Input[Dataset] = None,
    dataset_flag: str = ...,
    hyperparameters: dict = {},  # noqa: B006
    machine_type: str = ...,
    accelerator_type: str = ...,
    accelerator_count: int = ...,
    worker_count: int = ...,
    distribution: str = ...,
    scheduling_strategy: str = ...,
    timeout_seconds: int = ...,
    max_wait_seconds: int = 0,
    restart_job_on_worker_restart: bool = False,
    service_account: str = ...,
    network: str = "",
    labels: dict = {},  # noqa: B006
    reservation_name: str = "",
    local_preemption_after_seconds: float = 0.0,
    spot_fallback: bool = False,
    spot_fallback_deadline_seconds: int = 0,
    project: str = ...,
    location: str = ...,
    warm_start_args: list = [],  # noqa: B006
) -> NamedTuple("Outputs", [("state", str), ("goodput", float), ("restarts", int)]):
    """Builds the CustomJob with the validated core, runs it, and outputs its model directory.

    An impossible machine/accelerator/topology combination fails here, before the job is
    submitted. On Vertex the job runs through GCPC's launcher, so ``gcp_resources`` links
    it in the console, a restarted launcher resumes it, and cancelling the pipeline cancels
    it. Locally every replica runs as a process with the Vertex environment.

    Args:
        backend: ``"vertex"`` or ``"local"``.
        display_name: The job's display name.
        base_output_directory: ``gs://`` folder; the job writes ``model/``,
            ``checkpoints/`` and ``logs/`` under ``<it>/<key>/train`` (``AIP_*`` variables),
            where the key is a digest of this task's inputs: a retry or a re-run of the same
            week finds the same folder and job, and the task needs no run name (its cache key
            stays the week's).
        model: Output: the trained model directory (``AIP_MODEL_DIR``).
        metrics: Output: goodput, restarts and wall time of the job.
        gcp_resources: Output: the Vertex job resource (for the console and cancellation).
        python_module: Module to run for a Python-package job.
        package_uri: ``gs://`` URI of the training package (Python-package job).
        package_uris: More package URIs (used after ``package_uri``, each once).
        executor_image_uri: Prebuilt training image for a Python-package job.
        image_uri: Custom container image (instead of a Python package).
        args: Arguments for the training code.
        dataset: Training data (e.g. from ``prepare_dataset``); its URI is passed to the
            training code as ``DATASET_FLAG=URI``.
        dataset_flag: The flag that carries the dataset URI.
        hyperparameters: Extra ``--name=value`` flags (e.g. ``hp_tune``'s best parameters).
        machine_type: Machine type of every pool.
        accelerator_type: Accelerator enum name, or ``""`` for CPU only.
        accelerator_count: Accelerators per replica.
        worker_count: Replicas in the workers pool (0: single-node training).
        distribution: Declared distributed setup (``ddp``, ``multi_worker_mirrored``,
            ``parameter_server``, ``reduction_server`` or ``""``).
        scheduling_strategy: ``STANDARD``, ``SPOT`` or ``FLEX_START``.
        timeout_seconds: Maximum run time.
        max_wait_seconds: FLEX_START only: how long to wait for capacity.
        restart_job_on_worker_restart: Restart the whole job when a worker restarts.
        service_account: Service account the job runs as; by default the pipeline's own
            (GCPC's pipeline service account placeholder, which Vertex resolves).
        network: VPC network for the job.
        labels: Labels on the job.
        reservation_name: Compute Engine reservation to consume, if any.
        local_preemption_after_seconds: Local backend, SPOT only: rehearse a preemption
            this many seconds into each attempt (0 disables).
        spot_fallback: When a SPOT job loses its capacity (preempted past Vertex's six
            restarts, or STOCKOUT), run it again on demand (STANDARD) in the same output
            directory, resuming from the Spot attempts' checkpoints.
        spot_fallback_deadline_seconds: Seconds from the start of this step by which the
            on-demand job must end (its timeout is cut to fit); 0: only ``timeout_seconds``.
        project: Google Cloud project.
        location: Google Cloud region.
        warm_start_args: Flags placed after ``args`` that start the job from an earlier
            model (``plan_training``'s output: the trainer's declared flag and the
            champion's model folder); empty for a full retrain.

    Returns:
        state: The job's final state (``JOB_STATE_SUCCEEDED``...).
        goodput: Useful steps / executed steps; -1.0 when unknown (the job records no step
            progress: always on Vertex, locally when the trainer writes no progress file).
        restarts: Restarts after preemption; -1 when unknown (Vertex records none).
    """
    inputs = dict(locals())  # every input, by name
    from dataclasses import replace

    from vertex_retrain.rules.spot_fallback import FallbackPolicy
    from vertex_retrain.steps.job_request import keyed_output, training_request
    from vertex_retrain.steps.train import train

    # The warm start's flags follow the team's own.
    request = training_request({**inputs, "args": [*args, *warm_start_args]})
    directory, key = keyed_output("train", base_output_directory, request)
    result = train(
        replace(request, base_output_directory=directory),
        gcp_resources_path=gcp_resources,
        request_key=key,
        fallback=FallbackPolicy(spot_fallback, spot_fallback_deadline_seconds),
    )
    model.uri = result.model_uri
    model.metadata.update(result.model_metadata)
    for name, value in result.metrics.items():
        metrics.log_metric(name, value)
    # KFP outputs cannot be None: -1 says unknown, and the metrics leave the value out.
    goodput = -1.0 if result.goodput is None else result.goodput
    return (result.state, goodput, -1 if result.restarts is None else result.restarts)

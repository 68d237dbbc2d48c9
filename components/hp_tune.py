"""hp_tune: a Vertex AI HyperparameterTuningJob and its best trial."""

from typing import NamedTuple

from kfp.dsl import HTML, Dataset, Input, Metrics, Model, Output, OutputPath

from vertex_retrain.components.exec_launch import lightweight_component


# The study and trial-shape defaults below are literal copies of
# vertex_retrain.specs.defaults.TUNING and TRAINING: KFP embeds this function's source and runs
# it on its own, where a reference to that module would be a NameError.
# tests/test_specs_defaults.py fails when a copy differs.
@lightweight_component
def hp_tune(
    backend: str,
    display_name: str,
    base_output_directory: str,
    parameter_specs: list,
    metric_id: str,
    best_model: Output[Model],
    trials_report: Output[HTML],
    metrics: Output[Metrics],
    gcp_resources: OutputPath(str),
    goal: str = "MAXIMIZE",
    algorithm: str = "",
    max_trial_count: int = 8,
    parallel_trial_count: int = 2,
    max_failed_trial_count: int = 2,
    measurement_selection: str = "BEST_MEASUREMENT",
    python_module: str = "",
    package_uri: str = "",
    package_uris: list = [],  # noqa: B006 - KFP reads defaults from the signature
    executor_image_uri: str = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
    image_uri: str = "",
    args: list = [],  # noqa: B006
    hyperparameters: dict = {},  # noqa: B006
    dataset: Input[Dataset] = None,
    dataset_flag: str = "--data",
    machine_type: str = "n1-standard-8",
    accelerator_type: str = "NVIDIA_TESLA_T4",
    accelerator_count: int = 1,
    scheduling_strategy: str = "SPOT",
    timeout_seconds: int = 14400,
    service_account: str = "{{" + "$.pipeline_service_account}}",
    network: str = "",
    labels: dict = {},  # noqa: B006
    local_preemption_after_seconds: float = 0.0,
    spot_fallback: bool = False,
    spot_fallback_deadline_seconds: int = 0,
    # The placeholders are split so that kfp.local, which scans the embedded source for the
    # placeholders it cannot resolve, runs the component; Vertex sees the whole value.
    project: str = "{{" + "$.pipeline_google_cloud_project_id}}",
    location: str = "{{" + "$.pipeline_google_cloud_location}}",
) -> NamedTuple(
    "Outputs", [("best_parameters", dict), ("best_metric", float), ("best_trial_id", str)]
):
    """Runs a tuning study (Bayesian by default) and outputs its best trial.

    GCPC has had no best-trial op since 2.0; this component returns the best trial's
    parameters, metric and model directory directly. A failed or infeasible trial is never
    chosen. Each trial reports its metric with ``cloudml-hypertune``; a trial that never
    reports counts as failed.

    Args:
        backend: ``"vertex"`` or ``"local"``.
        display_name: The tuning job's display name.
        base_output_directory: ``gs://`` folder; trial ``N`` writes under
            ``<it>/<key>/tune/N/``, the key a digest of this task's inputs (a retry finds
            the same study; the task needs no run name).
        parameter_specs: Study parameters in Vertex REST form (``parameterId``,
            ``doubleValueSpec``/``integerValueSpec``/``categoricalValueSpec``/
            ``discreteValueSpec``, ``scaleType``, ``conditionalParameterSpecs``).
        metric_id: The metric the trials report (e.g. ``rmse``).
        best_model: Output: the best trial's model directory.
        trials_report: Output: HTML with the metric per trial and the trials table.
        metrics: Output: the trials run and succeeded and, after a Spot fallback,
            ``spot_fallback``, ``spot_seconds``, ``on_demand_seconds``, ``spot_trials_kept``
            and ``on_demand_trials``.
        gcp_resources: Output: the Vertex job resource.
        goal: ``MAXIMIZE`` or ``MINIMIZE``.
        algorithm: ``""`` (Bayesian), ``GRID_SEARCH`` or ``RANDOM_SEARCH``.
        max_trial_count: Trials in total.
        parallel_trial_count: Trials at once.
        max_failed_trial_count: Failed trials tolerated before the study fails.
        measurement_selection: ``BEST_MEASUREMENT`` or ``LAST_MEASUREMENT``.
        python_module: Module to run for Python-package trials.
        package_uri: ``gs://`` URI of the training package.
        package_uris: More package URIs (used after ``package_uri``, each once).
        executor_image_uri: Prebuilt training image for Python-package trials.
        image_uri: Custom container image (instead of a Python package).
        args: Fixed arguments; each trial appends ``--PARAMETER=VALUE`` flags.
        hyperparameters: Fixed ``--name=value`` flags every trial gets.
        dataset: Training data (e.g. from ``prepare_dataset``); its URI is passed to each
            trial as ``DATASET_FLAG=URI``.
        dataset_flag: The flag that carries the dataset URI.
        machine_type: Machine type of each trial.
        accelerator_type: Accelerator enum name, or ``""``.
        accelerator_count: Accelerators per trial.
        scheduling_strategy: ``STANDARD`` or ``SPOT`` for the trials.
        timeout_seconds: Maximum run time of one trial.
        service_account: Service account the trials run as; by default the pipeline's own
            (GCPC's pipeline service account placeholder, which Vertex resolves).
        network: VPC network for the trials.
        labels: Labels on the job.
        local_preemption_after_seconds: Local backend, SPOT only: rehearse a preemption
            this many seconds into each attempt of each trial (0 disables).
        spot_fallback: When the SPOT study fails from lost capacity (a trial preempted past
            Vertex's six restarts, or STOCKOUT), keep its succeeded trials and run the rest
            of ``max_trial_count`` as an on-demand (STANDARD) study; the best trial is chosen
            over both (the on-demand trials' ids follow the Spot study's).
        spot_fallback_deadline_seconds: Seconds from the start of this step by which the
            on-demand study must end (each trial's timeout is cut to fit); 0: only
            ``timeout_seconds``.
        project: Google Cloud project.
        location: Google Cloud region.

    Returns:
        best_parameters: The best trial's parameters.
        best_metric: Its metric value.
        best_trial_id: Its trial id.
    """
    from dataclasses import replace

    from vertex_retrain.rules.spot_fallback import FallbackPolicy
    from vertex_retrain.steps.job_request import (
        TrainingRequest,
        format_flag_value,
        keyed_output,
        merged_package_uris,
    )
    from vertex_retrain.steps.tune import TuningRequest, tune

    request = TuningRequest(
        trial=TrainingRequest(
            backend=backend,
            display_name=display_name,
            base_output_directory=base_output_directory,
            python_module=python_module,
            package_uris=merged_package_uris(package_uri, package_uris),
            executor_image_uri=executor_image_uri,
            image_uri=image_uri,
            args=[format_flag_value(arg) for arg in args],
            hyperparameters=dict(hyperparameters),
            dataset_uri=dataset.uri if dataset is not None else "",
            dataset_flag=dataset_flag,
            machine_type=machine_type,
            accelerator_type=accelerator_type,
            accelerator_count=accelerator_count,
            scheduling_strategy=scheduling_strategy,
            timeout_seconds=timeout_seconds,
            service_account=service_account,
            network=network,
            local_preemption_after_seconds=local_preemption_after_seconds,
            project=project,
            location=location,
        ),
        parameter_specs=list(parameter_specs),
        metric_id=metric_id,
        goal=goal,
        algorithm=algorithm,
        max_trial_count=max_trial_count,
        parallel_trial_count=parallel_trial_count,
        max_failed_trial_count=max_failed_trial_count,
        measurement_selection=measurement_selection,
        labels={str(k): format_flag_value(v) for k, v in labels.items()},
    )
    directory, key = keyed_output("tune", base_output_directory, request)
    result = tune(
        replace(request, trial=replace(request.trial, base_output_directory=directory)),
        gcp_resources_path=gcp_resources,
        request_key=key,
        report_path=trials_report.path,
        fallback=FallbackPolicy(spot_fallback, spot_fallback_deadline_seconds),
    )
    best_model.uri = result.best_model_uri
    best_model.metadata.update({"trial_id": result.best_trial_id, metric_id: result.best_metric})
    for name, value in result.metrics.items():
        metrics.log_metric(name, value)
    return (result.best_parameters, result.best_metric, result.best_trial_id)

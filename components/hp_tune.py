"""hp_tune: a Vertex AI HyperparameterTuningJob and its best trial."""

from typing import NamedTuple

from kfp.dsl import HTML, Dataset, Input, Metrics, Model, Output, OutputPath

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS, TRAINING, TUNING


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(TUNING, TRAINING, RUN_PLACEHOLDERS)
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
    goal: str = ...,
    algorithm: str = "",
    max_trial_count: int = ...,
    parallel_trial_count: int = ...,
    max_failed_trial_count: int = ...,
    measurement_selection: str = ...,
    python_module: str = "",
    package_uri: str = "",
    package_uris: list = [],  # noqa: B006 - KFP reads defaults from the signature
    executor_image_uri: str = ...,
    image_uri: str = "",
    args: list = [],  # noqa: B006
    hyperparameters: dict = {},  # noqa: B006
    dataset: Input[Dataset] = None,
    dataset_flag: str = ...,
    machine_type: str = ...,
    accelerator_type: str = ...,
    accelerator_count: int = ...,
    scheduling_strategy: str = ...,
    timeout_seconds: int = ...,
    service_account: str = ...,
    network: str = "",
    labels: dict = {},  # noqa: B006
    local_preemption_after_seconds: float = 0.0,
    spot_fallback: bool = False,
    spot_fallback_deadline_seconds: int = 0,
    project: str = ...,
    location: str = ...,
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
    inputs = dict(locals())  # every input, by name
    from dataclasses import replace

    from vertex_retrain.rules.spot_fallback import FallbackPolicy
    from vertex_retrain.steps.job_request import keyed_output
    from vertex_retrain.steps.tune import tune, tuning_request

    request = tuning_request(inputs)
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

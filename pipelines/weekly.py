"""weekly_retraining: the scheduled retraining flow, from source to a served champion.

data window (the run's week) -> data gate -> prepare dataset (rows before as_of, split into
train, selection and gate periods) -> (optional) tune -> plan the training (a warm start from
the champion, or a full retrain: :mod:`vertex_retrain.rules.warm_start`) -> train (Spot,
checkpointed) -> evaluate against the champion on the gate period -> if better: register as
champion and deploy; else: register as a challenger with traffic untouched and, when the
refused candidate was warm-started, retrain fully and judge that in the same run. Tuning and
training get the dataset with the gate period withheld, so nothing they choose sees the data
the candidate is judged on. Once the data gate passes, beside the dataset's preparation, the
training code is hashed (source digest) and built: a container image from its Dockerfile, which
the jobs run (:mod:`.training_image`), and the package a local deployment serves from. A gate
breach stops the run before any build or training (no Cloud Build to pay for), with the gate's
report as the error. An exit handler writes a run summary either way, and records the
week (local registry database, or a Vertex AI Experiments run). The whole run sits under the
failure notice: Vertex e-mails ``notification_emails`` when it ends. A Spot training job or
tuning study that loses its capacity falls back to on-demand (``spot_fallback``).

It is a template: the team's own trainer (``source_uri``, ``training_module``,
``evaluation_module``), data (``data_uri`` with its ``dataset_declaration``) and metrics
(``evaluation_declaration``) are parameters with no default. Give them per run, in a schedule's
parameter values, or once with :func:`vertex_retrain.pipelines.configure`
(examples/*/pipelines.py).

Cache keys: every cached task takes the week (``data_window``'s ``as_of``), the source digest
or an output of a task that does, so Vertex reuses an output only for the same week and the
same code; the tasks that read the clock, the source or the registry run with caching off
(``vertex-retrain compile`` checks this, :mod:`vertex_retrain.cli.cache_keys`). No cached task
takes a per-run value (the run's name, a task id): a re-run of a week that failed at
evaluation reuses its finished training. Jobs find themselves again by a key made of their
inputs (:mod:`vertex_retrain.rules.idempotency`), not by the run's name.
"""

from collections.abc import Callable
from typing import Any

from kfp import dsl

from vertex_retrain.components.build_container import build_container
from vertex_retrain.components.deploy_model import deploy_model
from vertex_retrain.components.evaluate_model import evaluate_model
from vertex_retrain.components.fixed_hyperparameters import fixed_hyperparameters
from vertex_retrain.components.hp_tune import hp_tune
from vertex_retrain.components.plan_training import plan_training
from vertex_retrain.components.register_model import register_model
from vertex_retrain.components.run_summary import run_summary
from vertex_retrain.components.source_digest import source_digest
from vertex_retrain.components.train_custom_job import train_custom_job
from vertex_retrain.rules.warm_start import FULL_RETRAIN_GROUP, REFUSAL_RETRAIN_LABELS, WARM
from vertex_retrain.specs.defaults import CONTAINER, PIPELINE_SERVICE_ACCOUNT, TRAINING, TUNING

from .branches import name_branches
from .data_week import gated_week
from .failure_notice import with_failure_notice
from .retries import retry_google_calls
from .training_image import training_image

PIPELINE_NAME = "weekly-retraining"

DESCRIPTION = (
    "Weekly retraining of a custom model: data gate, train, evaluate against the champion, "
    "register, deploy."
)


def _register_and_deploy(
    trained: Any,
    evaluation: Any,
    training_labels: Any,
    registration: dict[str, Any],
    deployment: dict[str, Any],
    on_refusal: Callable[[Any], None] | None = None,
    suffix: str = "",
) -> None:
    """Registers the evaluated candidate: as the deployed champion when the gate accepts it,
    else as a challenger with traffic untouched, then ``on_refusal`` adds its tasks (given the
    challenger's registration, which they follow). Its
    tasks' display names end in ``suffix`` (the full retrain's: ``-full``)."""
    candidate = dict(
        model=trained.outputs["model"],
        evaluation=evaluation.outputs["metrics"],
        training_labels=training_labels,
        **registration,
    )
    with dsl.If(evaluation.outputs["is_better"] == True, name=f"better{suffix}"):  # noqa: E712
        champion = register_model(make_champion=True, **candidate).set_display_name(
            f"register-champion{suffix}"
        )
        # It moves the registry's aliases and records this run (lineage): it runs every
        # time, found again by its key (model and artifact) when it registered before.
        champion.set_caching_options(False)
        deploy_model(vertex_model=champion.outputs["vertex_model"], **deployment).set_display_name(
            f"deploy{suffix}"
        )
    with dsl.Else(name=f"not-better{suffix}") as not_better:
        challenger = register_model(make_champion=False, **candidate).set_display_name(
            f"register-challenger{suffix}"
        )
        challenger.set_caching_options(False)
        if on_refusal is not None:
            on_refusal(challenger)
    name_branches(not_better, f"champion-or-challenger{suffix}")


@dsl.pipeline(name=f"{PIPELINE_NAME}-week", description=DESCRIPTION)
def weekly_week(
    data_uri: str,
    dataset_declaration: dict,
    evaluation_declaration: dict,
    source_uri: str,
    package_destination: str,
    training_module: str,
    evaluation_module: str,
    output_root: str,
    model_display_name: str,
    serving_image_uri: str,
    backend: str = "vertex",
    project: str = "{{$.pipeline_google_cloud_project_id}}",
    location: str = "{{$.pipeline_google_cloud_location}}",
    endpoint_display_name: str = "",
    executor_image_uri: str = TRAINING.executor_image_uri,
    serving_command: list = [],  # noqa: B006 - KFP reads defaults from the signature
    serving_extras: list = [],  # noqa: B006
    sample_instances: list = [],  # noqa: B006
    as_of: str = "",
    data_time_zone: str = "UTC",
    data_gate_thresholds: dict = {},  # noqa: B006
    data_gate_accept: str = "",
    selection_periods: int = 1,
    gate_periods: int = 1,
    training_args: list = [],  # noqa: B006
    hyperparameters: dict = {},  # noqa: B006
    tune: bool = False,
    tuning_parameters: list = [],  # noqa: B006
    tuning_metric: str = "",
    tuning_goal: str = TUNING.goal,
    max_trial_count: int = TUNING.max_trial_count,
    parallel_trial_count: int = TUNING.parallel_trial_count,
    machine_type: str = TRAINING.machine_type,
    accelerator_type: str = TRAINING.accelerator_type,
    accelerator_count: int = TRAINING.accelerator_count,
    worker_count: int = TRAINING.worker_count,
    scheduling_strategy: str = TRAINING.scheduling_strategy,
    timeout_seconds: int = TRAINING.timeout_seconds,
    # Budget figure for the cost in the run summary; `vertex-retrain estimate` reads it too.
    expected_training_hours: float = TRAINING.expected_training_hours,
    service_account: str = PIPELINE_SERVICE_ACCOUNT,
    force_decision: str = "",
    force_reason: str = "",
    traffic_percentage: int = 100,
    keep_last_n: int = 2,
    local_preemption_after_seconds: float = 0.0,
    spot_fallback: bool = True,
    spot_fallback_deadline_seconds: int = 28800,
    notification_emails: list = [],  # noqa: B006
    training_code: str = CONTAINER,
    image_destination: str = "",
    dockerfile: str = "Dockerfile",
    warm_start: bool = True,
    full_retrain_every_weeks: int = 4,
    expected_warm_training_hours: float = TRAINING.expected_warm_training_hours,
) -> None:
    """The weekly retraining flow of any team's model; see docs/components.md for each input.

    ``as_of`` (``YYYY-MM-DD``) replays a past week; empty, the run's schedule time (else its
    creation time) in ``data_time_zone`` gives the week. ``training_args`` go to
    ``python -m training_module`` before the hyperparameter flags (``hyperparameters``, or
    the best trial's when ``tune``) and ``--data=<prepared dataset>``. ``tuning_parameters``
    are Vertex ``StudySpec.ParameterSpec`` objects; the trainer reports ``tuning_metric``
    with cloudml-hypertune. ``data_gate_thresholds`` overrides the gate's thresholds by name;
    ``data_gate_accept`` lists checks a person accepts for this run. The newest
    ``gate_periods`` judge the candidate, the ``selection_periods`` before them are what
    training and tuning choose on. ``force_decision`` (``better``/``worse``) overrides the
    evaluation gate and needs ``force_reason``, which the summary and the history keep.

    ``warm_start`` continues the champion when the trainer declares a warm-start flag
    (``[tool.vertex-retrain] warm-start-flag`` in its ``pyproject.toml``), except every
    ``full_retrain_every_weeks`` weeks (0: never by age), on tuning weeks and replays; a
    refused warm-started candidate gets a full retrain in the same run. The summary prices a
    warm start at ``expected_warm_training_hours``.

    ``spot_fallback`` reruns a Spot training job that lost its capacity (preempted past
    Vertex's six restarts, or STOCKOUT) on demand, resuming from its checkpoints, within
    ``spot_fallback_deadline_seconds`` of the start of training; a Spot tuning study that
    lost its capacity keeps its succeeded trials and runs the rest on demand, within the
    same deadline counted from the start of tuning. ``notification_emails``
    (at most three) get Vertex's e-mail when the run ends (``with_failure_notice``).

    The jobs run a custom container by default (``training_code="container"``): the source's
    ``dockerfile`` built into ``image_destination`` (an Artifact Registry image, no tag) and
    run by digest, ``python -m training_module`` (or ``evaluation_module``) in it.
    ``training_code="python_package"`` runs the package built from the source on the prebuilt
    ``executor_image_uri`` instead. The package is built either way: a local deployment
    serves from it.
    """
    summary = run_summary(
        backend=backend,
        pipeline_root=dsl.PIPELINE_ROOT_PLACEHOLDER,
        run_name=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
        machine_type=machine_type,
        accelerator_type=accelerator_type,
        accelerator_count=accelerator_count,
        worker_count=worker_count,
        scheduling_strategy=scheduling_strategy,
        expected_training_hours=expected_training_hours,
        expected_warm_training_hours=expected_warm_training_hours,
        model_display_name=model_display_name,
        notification_emails=notification_emails,
        project=project,
        location=location,
    ).set_display_name("run-summary")
    # It reports this run's outcome: an earlier run's summary is never the answer.
    summary.set_caching_options(False)
    with (
        dsl.ExitHandler(summary, name="weekly-retraining-run"),
        gated_week(
            backend=backend,
            data_uri=data_uri,
            dataset_declaration=dataset_declaration,
            as_of=as_of,
            time_zone=data_time_zone,
            thresholds=data_gate_thresholds,
            accept=data_gate_accept,
            selection_periods=selection_periods,
            gate_periods=gate_periods,
            project=project,
            location=location,
        ) as (week, data),
    ):
        # Built only once the data passed, beside prepare-dataset. Never cached: the
        # code's digest, read afresh; the build below is keyed on it.
        code = source_digest(
            backend=backend, source_uri=source_uri, kind="python_package"
        ).set_display_name("source-digest")
        code.set_caching_options(False)
        package = build_container(
            backend=backend,
            source_uri=source_uri,
            destination=package_destination,
            kind="python_package",
            source_digest=code.output,
            project=project,
            location=location,
        ).set_display_name("build")
        image = training_image(
            backend=backend,
            training_code=training_code,
            source_uri=source_uri,
            image_destination=image_destination,
            dockerfile=dockerfile,
            staging_uri=output_root,
            project=project,
            location=location,
        )
        # Tuning and training read the dataset without its gate period.
        common = dict(
            backend=backend,
            display_name=model_display_name,
            base_output_directory=output_root,
            python_module=training_module,
            package_uri=package.outputs["reference"],
            image_uri=image,
            dataset=data.outputs["training_dataset"],
            args=training_args,
            executor_image_uri=executor_image_uri,
            machine_type=machine_type,
            accelerator_type=accelerator_type,
            accelerator_count=accelerator_count,
            scheduling_strategy=scheduling_strategy,
            timeout_seconds=timeout_seconds,
            service_account=service_account,
            spot_fallback=spot_fallback,
            spot_fallback_deadline_seconds=spot_fallback_deadline_seconds,
            project=project,
            location=location,
        )
        with dsl.If(tune == True, name="tuning"):  # noqa: E712 - KFP builds a condition from ==
            study = hp_tune(
                parameter_specs=tuning_parameters,
                metric_id=tuning_metric,
                goal=tuning_goal,
                max_trial_count=max_trial_count,
                parallel_trial_count=parallel_trial_count,
                hyperparameters=hyperparameters,
                **common,
            ).set_display_name("tune")
            tuned = fixed_hyperparameters(values=study.outputs["best_parameters"])
            tuned.set_display_name("best-trial-hyperparameters")
            tuned.set_caching_options(False)  # a pass-through: nothing to save
        with dsl.Else(name="no-tuning") as no_tune:
            untuned = fixed_hyperparameters(values=hyperparameters)
            untuned.set_display_name("given-hyperparameters")
            untuned.set_caching_options(False)
        name_branches(no_tune, "tuning-or-not")
        # Never cached: it reads the registry's champion and the trainer's declaration.
        plan = plan_training(
            backend=backend,
            source_uri=source_uri,
            model_display_name=model_display_name,
            as_of=week,
            warm_start=warm_start,
            full_retrain_every_weeks=full_retrain_every_weeks,
            tune=tune,
            project=project,
            location=location,
        ).set_display_name("plan-training")
        plan.set_caching_options(False)
        trained = train_custom_job(
            hyperparameters=dsl.OneOf(tuned.output, untuned.output),
            worker_count=worker_count,
            local_preemption_after_seconds=local_preemption_after_seconds,
            warm_start_args=plan.outputs["warm_start_args"],
            **common,
        ).set_display_name("train")
        # The package's own scoring code (python -m evaluation_module) runs as a CPU job.
        judged = dict(
            backend=backend,
            dataset=data.outputs["dataset"],
            model_display_name=model_display_name,
            base_output_directory=output_root,
            evaluation_declaration=evaluation_declaration,
            python_module=evaluation_module,
            package_uri=package.outputs["reference"],
            image_uri=image,
            executor_image_uri=executor_image_uri,
            force_decision=force_decision,
            force_reason=force_reason,
            service_account=service_account,
            project=project,
            location=location,
        )
        evaluation = evaluate_model(candidate=trained.outputs["model"], **judged)
        evaluation.set_display_name("evaluate")
        # The decision reads the registry's champion, which is not among its inputs: a
        # cached decision could be about a champion that has changed since.
        evaluation.set_caching_options(False)
        registration = dict(
            backend=backend,
            display_name=model_display_name,
            serving_image_uri=serving_image_uri,
            serving_command=serving_command,
            serving_package_uri=package.outputs["reference"],
            serving_extras=serving_extras,
            sample_instances=sample_instances,
            # The version carries its data window (data_as_of, data_from) as labels.
            labels=data.outputs["window_labels"],
            pipeline_run=dsl.PIPELINE_JOB_NAME_PLACEHOLDER,
            project=project,
            location=location,
        )
        deployment = dict(
            backend=backend,
            endpoint_display_name=endpoint_display_name,
            traffic_percentage=traffic_percentage,
            keep_last_n=keep_last_n,
            service_account=service_account,
            project=project,
            location=location,
        )

        def retrain_fully(refused: Any) -> None:
            # A refused warm start gets a full retrain in the same run (tuning weeks are
            # planned full, so the untuned hyperparameters are the week's). It follows the
            # refused candidate's registration: the full retrain's registers last, so the
            # week's aliases are its decision's (in parallel, either could finish last).
            with dsl.If(plan.outputs["kind"] == WARM, name=FULL_RETRAIN_GROUP):
                retrained = train_custom_job(
                    worker_count=worker_count,
                    local_preemption_after_seconds=local_preemption_after_seconds,
                    labels=REFUSAL_RETRAIN_LABELS,
                    **{**common, "hyperparameters": hyperparameters},
                ).set_display_name("train-full")
                retrained.after(refused)
                reevaluation = evaluate_model(candidate=retrained.outputs["model"], **judged)
                reevaluation.set_display_name("evaluate-full")
                reevaluation.set_caching_options(False)
                _register_and_deploy(
                    retrained,
                    reevaluation,
                    plan.outputs["full_labels"],
                    registration,
                    deployment,
                    suffix="-full",
                )

        _register_and_deploy(
            trained,
            evaluation,
            plan.outputs["labels"],
            registration,
            deployment,
            on_refusal=retrain_fully,
        )
    retry_google_calls()  # every task that calls Google or runs a job: .retries


weekly_retraining = with_failure_notice(weekly_week, name=PIPELINE_NAME, description=DESCRIPTION)
"""The weekly flow as templates and schedules run it: ``weekly_week`` under the failure notice
(Vertex e-mails ``notification_emails`` when a run ends; see :mod:`.failure_notice`)."""

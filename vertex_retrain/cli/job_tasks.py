"""The CustomJobs and tuning jobs a compiled pipeline would submit, built before the run.

Any pipeline may use the library's job components: ``train_custom_job`` (a CustomJob),
``hp_tune`` (a HyperparameterTuningJob) and ``evaluate_model`` (its evaluation CustomJob).
Their tasks are found by the function their executor runs, in nested groups too
(:mod:`vertex_retrain.cli.spec_tasks`), and each task's request is built from its inputs with
the same request types and builders the components use (:mod:`vertex_retrain.steps.job_request`,
:mod:`vertex_retrain.steps.tune`, :mod:`vertex_retrain.steps.evaluate`): an input is matched to
the request field of the same name, as the components pass them.

An input known only at run time (another task's output) takes the component's default (the
job's code, a stand-in package). The payload fields it shapes (found by building the job
again with that input changed) are not checked: problems there are left out, and
:attr:`JobTask.unchecked` names the inputs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.cli.spec_tasks import LeafTask, leaf_tasks
from vertex_retrain.specs.defaults import PYTHON_PACKAGE
from vertex_retrain.specs.problems import JobSpecError, Problem

__all__ = ["JOB_FUNCTIONS", "JobTask", "job_tasks", "problems_by_task"]

JOB_FUNCTIONS = ("train_custom_job", "hp_tune", "evaluate_model")
"""The library components that submit a job, by the function their executor runs."""

STAND_IN_URI = "gs://known-at-run-time/artifact"
"""The URI given for an artifact input (the dataset, the candidate): set by the run."""

STAND_IN_IMAGE = f"us-docker.pkg.dev/known-at-run-time/images/training@sha256:{'0' * 64}"
"""The image given for an ``image_uri`` a task of the run builds (a container build)."""

# Tuning-study inputs of hp_tune and the payload fields they fill (the trial job's fields are
# found by building it; the study's layout is tuning_job_payload's).
_STUDY_FIELDS = {
    "parameter_specs": "studySpec.parameters",
    "metric_id": "studySpec.metrics",
    "goal": "studySpec.metrics",
    "algorithm": "studySpec.algorithm",
    "measurement_selection": "studySpec.measurementSelectionType",
    "max_trial_count": "maxTrialCount",
    "parallel_trial_count": "parallelTrialCount",
    "max_failed_trial_count": "maxFailedTrialCount",
}


@dataclass(frozen=True)
class JobTask:
    """One job a pipeline task would submit.

    Attributes:
        name: The task's name (its path through the groups when two job tasks share one).
        function: ``train_custom_job``, ``hp_tune`` or ``evaluate_model``.
        payload: The CustomJob or HyperparameterTuningJob payload (unvalidated; None when
            the study could not be built).
        problems: Validation problems of the checked fields (errors and warnings).
        unchecked: Inputs known only at run time, with the reason; the fields they shape
            were not checked.
        runs: Whether the task runs with these arguments (None: the run decides).
        package_uris: The training packages the job installs, when known.
        executor_image_uri: The prebuilt image of a Python-package job, when known.
    """

    name: str
    function: str
    payload: dict[str, Any] | None
    problems: tuple[Problem, ...] = ()
    unchecked: dict[str, str] = field(default_factory=dict)
    runs: bool | None = True
    package_uris: tuple[str, ...] = ()
    executor_image_uri: str = ""

    @property
    def tuning(self) -> bool:
        """A tuning job (its payload is a HyperparameterTuningJob)."""
        return self.function == "hp_tune"


def job_tasks(
    spec: Mapping[str, Any], arguments: Mapping[str, Any], *, today: dt.date | None = None
) -> list[JobTask]:
    """Every job of the library's job components in a compiled pipeline, validated.

    Args:
        spec: The compiled pipeline.
        arguments: Its parameter values (defaults with the overrides on top).
        today: Date for support and retirement checks (default: today).

    Returns:
        One per task, in spec order.
    """
    tasks = [task for task in leaf_tasks(spec, arguments) if task.function in JOB_FUNCTIONS]
    leaves = [task.path.rsplit("/", 1)[-1] for task in tasks]
    package_path = arguments.get("training_code") == PYTHON_PACKAGE
    return [
        _job(task, task.path if leaves.count(leaf) > 1 else leaf, today, package_path)
        for task, leaf in zip(tasks, leaves, strict=True)
    ]


def problems_by_task(found: Sequence[tuple[str, Problem]]) -> list[Problem]:
    """The problems of several jobs, each field prefixed with the task that has it; the same
    finding in several tasks is one problem naming them all, in the order first found.

    The weekly template's ``train`` and ``train-full`` (and ``evaluate``, ``evaluate-full``)
    build the same job from the same parameters, so a bad setting would otherwise be said
    once per task.

    Args:
        found: ``(task name, problem)`` pairs.
    """
    tasks: dict[str, list[str]] = {}
    first: dict[str, Problem] = {}
    for name, problem in found:
        line = problem.describe()  # the same line, printed twice, is the same finding
        first.setdefault(line, problem)
        if name not in tasks.setdefault(line, []):
            tasks[line].append(name)
    return [
        dataclasses.replace(
            problem,
            field=f"{'tasks' if len(tasks[line]) > 1 else 'task'} "
            f"{', '.join(tasks[line])}: {problem.field}",
        )
        for line, problem in first.items()
    ]


def _values(task: LeafTask, package_path: bool) -> dict[str, Any]:
    """The task's inputs; one the run decides takes the component default, or for the code a
    job runs (its package, module, image) the stand-in of a cost estimate, so the job can be
    built. An image the run builds is a container image (:data:`STAND_IN_IMAGE`) unless the
    templates' ``training_code`` says the jobs run the package (``package_path``)."""
    from vertex_retrain.specs.defaults import PIPELINE_SERVICE_ACCOUNT
    from vertex_retrain.steps.training_cost import request_for_shape

    stand_in = request_for_shape({})
    values = dict(task.parameters)
    if values.get("service_account") == PIPELINE_SERVICE_ACCOUNT:
        values["service_account"] = ""  # the run's own account, checked as --service-account
    for name in task.unknown:
        if name == "package_uri":
            values[name] = stand_in.package_uris[0]
        elif name in ("python_module", "package_uris"):
            values[name] = getattr(stand_in, name)
        elif name == "image_uri":
            values[name] = "" if package_path else STAND_IN_IMAGE
    return values


def _job(task: LeafTask, name: str, today: dt.date | None, package_path: bool) -> JobTask:
    from vertex_retrain.steps.job_request import job_spec_from_request

    values = _values(task, package_path)
    if task.function == "hp_tune":
        return _tuning_job(task, name, values)

    def build(values: Mapping[str, Any]) -> dict[str, Any]:
        return job_spec_from_request(_custom_request(values, task)).unvalidated_payload()

    request = _custom_request(values, task)
    problems = job_spec_from_request(request).validate(today=today)
    varying = _varying_fields(build, values, task.unknown)
    return JobTask(
        name, task.function, build(values), _checked(problems, varying), dict(task.unknown),
        task.runs, tuple(request.package_uris) if "package_uri" not in task.unknown else (),
        "" if request.image_uri else request.executor_image_uri,
    )  # fmt: skip


def _custom_request(values: Mapping[str, Any], task: LeafTask) -> Any:
    """The TrainingRequest of a training task, or of an evaluation task's scoring job."""
    if task.function == "train_custom_job":
        return _training_request(values, task)
    return _evaluation_job_request(values, task)


def _stand_ins(values: Mapping[str, Any], task: LeafTask) -> dict[str, Any]:
    """The inputs as the component receives them, with what only a run knows stood in for."""

    class _Artifact:  # an input artifact: only its URI is read
        uri = STAND_IN_URI

    return {
        **values,
        **{name: _Artifact() for name in task.artifacts},
        "backend": "vertex",
        "base_output_directory": str(values.get("base_output_directory", "")),
    }


def _training_request(values: Mapping[str, Any], task: LeafTask) -> Any:
    from vertex_retrain.steps.job_request import keyed_output, training_request

    given = {**_stand_ins(values, task), "display_name": values.get("display_name") or task.path}
    request = training_request(given)
    # The folder has the component's shape (base/<key>/train), keyed on the stand-in inputs.
    folder, _ = keyed_output("train", request.base_output_directory, request)
    return dataclasses.replace(request, base_output_directory=folder)


def _evaluation_job_request(values: Mapping[str, Any], task: LeafTask) -> Any:
    from vertex_retrain.steps.evaluate import evaluation_job_request, evaluation_request
    from vertex_retrain.steps.job_request import keyed_output

    model = values.get("model_display_name") or task.path
    request = evaluation_request({**_stand_ins(values, task), "model_display_name": model})
    folder, _ = keyed_output("evaluate", request.output_directory, request)
    # No champion is known before the run: its folder only adds one flag.
    return evaluation_job_request(dataclasses.replace(request, output_directory=folder), None)


def _tuning_job(task: LeafTask, name: str, values: dict[str, Any]) -> JobTask:
    from vertex_retrain.specs import validate_tuning_job
    from vertex_retrain.steps.job_request import job_spec_from_request
    from vertex_retrain.steps.tune import tuning_job_payload, tuning_request

    def request(values: Mapping[str, Any]) -> Any:
        display_name = values.get("display_name") or task.path
        return tuning_request({**_stand_ins(values, task), "display_name": display_name})

    def trial_payload(values: Mapping[str, Any]) -> dict[str, Any]:
        body = job_spec_from_request(request(values).trial).job_spec_payload()
        return {"trialJobSpec": body}

    tuning = request(values)
    payload: dict[str, Any] | None
    try:
        with warnings.catch_warnings():  # its warnings are read back below, as problems
            warnings.simplefilter("ignore")
            payload = tuning_job_payload(tuning)
        problems = validate_tuning_job(payload, check_fields=False)
    except JobSpecError as error:
        payload, problems = None, list(error.problems)
    study = {_STUDY_FIELDS[k] for k in task.unknown if k in _STUDY_FIELDS}
    varying = _varying_fields(trial_payload, values, task.unknown) | study
    return JobTask(
        name, task.function, payload, _checked(problems, varying), dict(task.unknown), task.runs,
        tuple(tuning.trial.package_uris) if "package_uri" not in task.unknown else (),
        "" if tuning.trial.image_uri else tuning.trial.executor_image_uri,
    )  # fmt: skip


def _probe(value: Any) -> Any:
    """Another value of the same type, to see which payload fields an input shapes."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, list):
        return [*value, "probe"]
    if isinstance(value, dict):
        return {**value, "probe": "probe"}
    return f"{value}-probe" if value else "probe"


def _varying_fields(
    build: Callable[[Mapping[str, Any]], dict[str, Any]],
    values: Mapping[str, Any],
    unknown: Mapping[str, str],
) -> set[str]:
    """The payload fields that change when an unknown input does."""
    base = _flatten(build(values))
    varying: set[str] = set()
    for name in unknown:
        try:
            probed = _flatten(build({**values, name: _probe(values.get(name))}))
        except (TypeError, ValueError):  # a probe the request refuses: every field may vary
            return {""}
        varying |= {
            path for path in base.keys() | probed.keys() if base.get(path) != probed.get(path)
        }
    return varying


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        found: dict[str, Any] = {}
        for key, item in value.items():
            found.update(_flatten(item, f"{path}.{key}" if path else str(key)))
        return found
    if isinstance(value, list) and any(isinstance(item, Mapping) for item in value):
        found = {}
        for index, item in enumerate(value):
            found.update(_flatten(item, f"{path}[{index}]"))
        return found
    return {path: value}


def _related(field_path: str, varying: str) -> bool:
    if not varying:
        return True
    return any(
        longer == shorter or longer.startswith((shorter + ".", shorter + "["))
        for longer, shorter in ((field_path, varying), (varying, field_path))
    )


def _checked(problems: list[Problem], varying: set[str]) -> tuple[Problem, ...]:
    """The problems of fields no unknown input shapes."""
    return tuple(p for p in problems if not any(_related(p.field, v) for v in varying))

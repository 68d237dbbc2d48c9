"""From a component's flat inputs to a validated CustomJob spec (shared by train and tune).

A request is built from the inputs in one place (:func:`training_request`, and
``tuning_request`` and ``evaluation_request`` beside their steps), for the components and for
``compile.py preflight``, which reads the same inputs from a compiled pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, cast

from vertex_retrain.rules.flags import format_flag_value, parameter_flags
from vertex_retrain.rules.idempotency import task_key
from vertex_retrain.specs import (
    ContainerCode,
    CustomJobSpec,
    Machine,
    PythonPackageCode,
    ReservationAffinity,
    Scheduling,
    WorkerPool,
)
from vertex_retrain.specs.defaults import TRAINING
from vertex_retrain.specs.job_rules import Distribution
from vertex_retrain.specs.scheduling import Strategy


@dataclass(frozen=True)
class TrainingRequest:
    """Everything ``train_custom_job`` (and each ``hp_tune`` trial) asks for, as plain values.

    Unset job-shape fields take :data:`vertex_retrain.specs.defaults.TRAINING`, as the
    component's inputs do.
    """

    backend: str
    display_name: str
    base_output_directory: str
    python_module: str = ""
    package_uris: list[str] = field(default_factory=list)
    executor_image_uri: str = TRAINING.executor_image_uri
    image_uri: str = ""
    args: list[str] = field(default_factory=list)
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    dataset_uri: str = ""
    dataset_flag: str = TRAINING.dataset_flag
    machine_type: str = TRAINING.machine_type
    accelerator_type: str = TRAINING.accelerator_type
    accelerator_count: int = TRAINING.accelerator_count
    worker_count: int = TRAINING.worker_count
    distribution: str = TRAINING.distribution
    scheduling_strategy: str = TRAINING.scheduling_strategy
    timeout_seconds: int = TRAINING.timeout_seconds
    max_wait_seconds: int = 0
    restart_job_on_worker_restart: bool = False
    service_account: str = ""
    network: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    reservation_name: str = ""
    local_preemption_after_seconds: float = 0.0
    project: str = ""
    location: str = ""


def resolved_service_account(value: str) -> str | None:
    """The account a job or deployment runs as, or None for Vertex's default.

    Raises:
        ValueError: ``value`` still holds a pipeline placeholder (``{{$.pipeline_service_account}}``
            outside a Vertex pipeline run, which alone resolves it).
    """
    if "{{$." in value:
        raise ValueError(
            f"service_account {value!r} is a placeholder only a Vertex pipeline run resolves "
            "(to the run's service account); outside one, pass an account e-mail or ''"
        )
    return value or None


def scoped_output_directory(base: str, scope: str, name: str) -> str:
    """``base/<scope>/<name>``: each task's work writes its own model, checkpoints and logs;
    ``base`` as given without a scope."""
    if not scope:
        return base
    return "/".join([base.rstrip("/"), scope, name or "task"])


def keyed_output(kind: str, base: str, request: Any) -> tuple[str, str]:
    """The output folder and request key of a task asked for ``request``.

    The key is :func:`vertex_retrain.rules.idempotency.task_key` of the request as given
    (with ``base`` unscoped): a retry of the task, or a re-run of the week with the same
    inputs, gets the same folder (the job finds its checkpoints) and the same key (the
    launcher adopts the job instead of starting another); other inputs, another folder.

    Args:
        kind: What the task does (``train``, ``tune``, ``evaluate``).
        base: The ``gs://`` folder the task was given.
        request: The task's request (a dataclass).

    Returns:
        ``(base/<key>/<kind>, key)``.
    """
    key = task_key(kind, asdict(request))
    return scoped_output_directory(base, key, kind), key


def merged_package_uris(package_uri: str, package_uris: Iterable[str]) -> list[str]:
    """The training packages a component asked for: ``package_uri`` first, each URI once.

    Pipelines pass their one package as the string ``package_uri``: a pipeline channel inside
    a list constant (``package_uris=[channel]``) compiles to a placeholder nested in the list,
    which Vertex may not resolve. ``package_uris`` stays for several packages.

    Args:
        package_uri: One package URI, or ``""``.
        package_uris: More package URIs.

    Returns:
        ``[package_uri, *package_uris]`` without ``""`` for an unset ``package_uri`` and
        without repeats, in order.
    """
    uris = ([package_uri] if package_uri else []) + [str(uri) for uri in package_uris]
    return list(dict.fromkeys(uris))


def request_fields(
    kind: type, inputs: Mapping[str, Any], exclude: Iterable[str] = ()
) -> dict[str, Any]:
    """The inputs that are fields of the request type ``kind`` (a dataclass), by name.

    An input whose value is ``...`` is left out, so the field's default applies: that is the
    value a component's embedded source holds for a default that
    :mod:`vertex_retrain.specs.defaults` defines (``components/signature_defaults.py``), should
    a backend ever call it without the value the compiled spec declares.

    Args:
        kind: The request type.
        inputs: Input name -> value; names that are not fields are ignored.
        exclude: Field names to leave out (the caller sets them).
    """
    names = {item.name for item in fields(kind)} - set(exclude)
    return {name: value for name, value in inputs.items() if name in names and value is not ...}


def flag_labels(labels: Mapping[Any, Any]) -> dict[str, str]:
    """Labels as a job carries them: string keys, values written as flag values are."""
    return {str(key): format_flag_value(value) for key, value in labels.items()}


def training_request(inputs: Mapping[str, Any]) -> TrainingRequest:
    """The training job a component's inputs describe.

    Args:
        inputs: Input name -> value, as ``train_custom_job`` (or ``hp_tune``, for its trials)
            received them: the request's fields by name, ``package_uri`` (the first package,
            before ``package_uris``) and ``dataset`` (an artifact, or None: its URI is
            ``dataset_uri``). Other names are ignored.

    Returns:
        The request, its ``args`` and ``labels`` written as flags are.
    """
    given = request_fields(TrainingRequest, inputs)
    given.update(
        code_fields(inputs),
        **artifact_uris(inputs, dataset="dataset_uri"),
        hyperparameters=dict(given.get("hyperparameters") or {}),
        labels=flag_labels(given.get("labels") or {}),
    )
    return TrainingRequest(**given)


def code_fields(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``package_uris`` (``package_uri`` first) and ``args`` (written as flags) of a job's
    inputs, as every request that runs the training package takes them."""
    return {
        "package_uris": merged_package_uris(
            str(inputs.get("package_uri") or ""), inputs.get("package_uris") or []
        ),
        "args": [format_flag_value(arg) for arg in inputs.get("args") or []],
    }


def artifact_uris(inputs: Mapping[str, Any], **names: str) -> dict[str, str]:
    """Field name -> URI of each artifact input given (``dataset="dataset_uri"``)."""
    return {
        field_name: str(inputs[artifact].uri)
        for artifact, field_name in names.items()
        if inputs.get(artifact) is not None and inputs[artifact] is not ...
    }


def program_args(request: TrainingRequest) -> list[str]:
    """The training code's arguments: ``args``, then hyperparameter flags, then the dataset."""
    rendered = [format_flag_value(arg) for arg in request.args]
    rendered += parameter_flags(dict(request.hyperparameters))
    if request.dataset_uri:
        rendered.append(f"{request.dataset_flag}={request.dataset_uri}")
    return rendered


def job_spec_from_request(request: TrainingRequest) -> CustomJobSpec:
    """Builds the typed CustomJob spec (not yet validated) from a request."""
    args = tuple(program_args(request))
    code: ContainerCode | PythonPackageCode
    if request.image_uri:
        # One image holds the training and the evaluation code: the module picks the entry
        # point (``python -m MODULE``, as a package job runs it); without one, the image's own.
        command = ("python", "-m", request.python_module) if request.python_module else ()
        code = ContainerCode(image_uri=request.image_uri, command=command, args=args)
    else:
        code = PythonPackageCode(
            executor_image_uri=request.executor_image_uri,
            package_uris=tuple(request.package_uris),
            python_module=request.python_module,
            args=args,
        )
    accelerator = request.accelerator_type or None
    count = int(request.accelerator_count)
    machine = Machine(
        machine_type=request.machine_type,
        accelerator_type=accelerator,
        # A CPU job (no type) keeps the default count of 1 harmlessly; a larger count without
        # a type is a mistake the job's validation names, never silently dropped.
        accelerator_count=count if accelerator or count > 1 else 0,
        reservation=(
            ReservationAffinity("SPECIFIC_RESERVATION", (request.reservation_name,))
            if request.reservation_name
            else None
        ),
    )
    workers = int(request.worker_count)
    return CustomJobSpec(
        display_name=request.display_name,
        primary=WorkerPool(machine=machine, code=code, replica_count=1),
        workers=WorkerPool(machine=machine, code=code, replica_count=workers) if workers else None,
        scheduling=Scheduling(
            timeout_s=int(request.timeout_seconds) or None,
            strategy=cast(Strategy, request.scheduling_strategy or "STANDARD"),
            max_wait_s=int(request.max_wait_seconds) or None,
            restart_job_on_worker_restart=bool(request.restart_job_on_worker_restart),
        ),
        service_account=resolved_service_account(request.service_account),
        network=request.network or None,
        base_output_dir=request.base_output_directory or None,
        labels=dict(request.labels),
        distribution=cast(Distribution, request.distribution) if request.distribution else None,
    )


def custom_job_payload(request: TrainingRequest) -> dict[str, Any]:
    """Validates the request and returns the CustomJob payload.

    Raises:
        JobSpecError: The job is impossible (the message names field, value and
            alternatives); nothing has been submitted.
    """
    return job_spec_from_request(request).to_payload()

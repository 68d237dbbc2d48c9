"""Runs a Vertex job through GCPC's in-process launcher, `JobRemoteRunner`.

GCPC's runner provides the behaviour a pipeline task needs: `gcp_resources` written right after
the job is created (the Vertex console links the task to the job), resume from that file after a
launcher restart, and a SIGTERM handler (GCPC's `ExecutionContext`) that cancels the job when the
pipeline is cancelled. Three gaps in GCPC 2.22 are closed here:

- `JobRemoteRunner.__init__` builds its `JobServiceClient` itself; we build it through an
  injectable factory so fakes can sit at the GAPIC client boundary.
- GCPC's `get_*_with_client` turn a `ConnectionError` into `sys.exit(13)`, and its own
  reconnect path calls `JobServiceClient(options, info)` positionally, which the keyword-only
  constructor of aiplatform >= 1.60 rejects. Connection errors are therefore retried here, with
  a fresh client from the factory, before GCPC sees them.
- Cancellation uses the GAPIC client's `cancel_*` method (the same `:cancel` REST call GCPC
  posts with `requests`), so it goes through the same client boundary.
- `JobRemoteRunner.create_job` hands its create function a copy of the spec cleaned by
  `json_util.recursive_remove_empty`, which drops the `{}` placeholder pools: a primary with
  evaluators ([0] and [3]) would reach Vertex as [0] and [1], and Vertex, which reads roles
  by position, would run the evaluators as workers. The request is built from our validated
  payload instead (`vertex_retrain.specs.pool_rules` refuses the layouts Vertex cannot express).
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.backends.vertex._protos import (
    REQUEST_KEY_LABEL,
    api_endpoint,
    job_failure,
    location_parent,
    parse_rest_json,
    request_key_label,
    to_rest_json,
    to_snake_json,
)
from vertex_retrain.rules.job_failure import fails_again

_LOG = logging.getLogger(__name__)

JobClientFactory = Callable[[Any, Any], Any]
"""Builds a JobServiceClient from (ClientOptions, ClientInfo)."""

# A job in one of these states is not adopted by a re-run; anything else (queued, running,
# succeeded) is the job the earlier attempt of this task started.
_DEAD_STATES = frozenset(
    {"JOB_STATE_FAILED", "JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}
)


@dataclass(frozen=True)
class JobKind:
    """What differs between the job types GCPC's runner launches."""

    resource_type: str
    message_cls: Any
    create_with_client: Callable[[Any, str, dict[str, Any]], Any]
    get_with_client: Callable[[Any, str], Any]
    list_method: str
    cancel_method: str


class VertexJobFailedError(RuntimeError):
    """The job ended in a state other than JOB_STATE_SUCCEEDED.

    Attributes:
        job: The final job resource in REST JSON form (`state`, `error`, ...).
    """

    def __init__(self, job: dict[str, Any], reason: str, note: str = "") -> None:
        self.job = job
        error = job.get("error", {})
        super().__init__(
            f"Vertex job {job.get('name', '?')} ended in {job.get('state', '?')}: "
            f"{error.get('message', reason)}{f'; {note}' if note else ''}"
        )


class EarlierAttemptFailedError(VertexJobFailedError):
    """A retry of a task found the job its earlier attempt started, failed for good."""

    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__(
            job,
            "failed",
            "started by an earlier attempt of this task in this pipeline run and not started "
            "again: a new job on the same inputs would fail the same way",
        )


class VertexUnreachableError(Exception):
    """Vertex AI could not be reached after the configured number of connection retries.

    Deliberately not a ConnectionError or RuntimeError: GCPC's runner would turn those into
    `sys.exit(13)` or into its broken reconnect path.
    """


class _TransientError(Exception):
    """A connection-level failure, carried past GCPC's `except (ConnectionError, RuntimeError)`."""


def _is_transient(err: BaseException) -> bool:
    import requests
    from google.api_core import exceptions as api_exceptions

    transient = (
        ConnectionError,  # builtin, e.g. ConnectionResetError
        requests.exceptions.ConnectionError,  # REST transport
        api_exceptions.ServiceUnavailable,  # gRPC UNAVAILABLE: the connection dropped
    )
    return isinstance(err, transient)


class _TransientErrorShield:
    """Wraps a client so connection errors surface as `_TransientError`."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except Exception as err:
                if _is_transient(err):
                    raise _TransientError(str(err)) from err
                raise

        return call


def default_job_client_factory(client_options: Any, client_info: Any) -> Any:
    """Builds the real `aiplatform_v1.JobServiceClient`, as GCPC's runner does."""
    from google.cloud import aiplatform_v1

    return aiplatform_v1.JobServiceClient(client_options=client_options, client_info=client_info)


def _new_runner(
    kind: JobKind, project: str, location: str, gcp_resources: str, factory: JobClientFactory
) -> Any:
    from google.api_core import client_options, gapic_v1
    from google_cloud_pipeline_components.container.v1.gcp_launcher import job_remote_runner

    class _Runner(job_remote_runner.JobRemoteRunner):
        def __init__(self) -> None:
            # Same attributes as JobRemoteRunner.__init__ in GCPC 2.22; only the client
            # construction differs (see the module docstring).
            self.job_type = kind.resource_type
            self.project = project
            self.location = location
            self.gcp_resources = gcp_resources
            self.client_options = client_options.ClientOptions(api_endpoint=api_endpoint(location))
            self.client_info = gapic_v1.client_info.ClientInfo(user_agent="vertex-retrain")
            self.job_client = factory(self.client_options, self.client_info)
            self.job_uri_prefix = f"https://{self.client_options.api_endpoint}/v1/"
            self.poll_job_name = ""

        def send_cancel_request(self, job_name: str) -> None:
            if job_name:
                _LOG.info("Cancelling %s", job_name)
                getattr(self.job_client, kind.cancel_method)(name=job_name)

        def reconnect(self) -> None:
            self.job_client = factory(self.client_options, self.client_info)

    return _Runner()


def _existing_job_name(runner: Any, kind: JobKind) -> str | None:
    from google.protobuf import json_format

    try:
        name: str | None = runner.check_if_job_exists()
    except (ValueError, json_format.ParseError) as err:
        raise ValueError(
            f"{runner.gcp_resources} exists but does not name one {kind.resource_type} under "
            f"{runner.job_uri_prefix}: {err}. This launcher writes that file after creating "
            "the job; if it belongs to another run or region, delete it to start a new job."
        ) from err
    return name


def _keyed_jobs(client: Any, kind: JobKind, parent: str, label_value: str) -> list[Any]:
    """Every job carrying this request key (the list filter, checked again here)."""
    jobs = getattr(client, kind.list_method)(
        request={"parent": parent, "filter": f'labels.{REQUEST_KEY_LABEL}="{label_value}"'}
    )
    return [job for job in jobs if job.labels.get(REQUEST_KEY_LABEL) == label_value]


def _newest(jobs: list[Any]) -> Any | None:
    """The job created last, or None."""
    if not jobs:
        return None
    return max(jobs, key=lambda job: job.create_time.timestamp() if job.create_time else 0)


def _live(jobs: list[Any]) -> Any | None:
    """The newest of `jobs` that has not failed or been cancelled: the one to adopt."""
    return _newest([job for job in jobs if job.state.name not in _DEAD_STATES])


RUN_LABEL = "vertex-ai-pipelines-run-billing-id"
"""The label Vertex AI Pipelines gives every resource its run creates (GCPC's
``attach_system_labels``): one value per pipeline run, the same for every attempt of a task."""


def _failed_attempt(jobs: list[Any], run: str) -> Any | None:
    """The job an earlier attempt of this task started in pipeline run `run`, when it failed
    in a way a new job would meet again (:func:`~vertex_retrain.rules.job_failure.
    fails_again`); None otherwise."""
    newest = _newest([job for job in jobs if job.labels.get(RUN_LABEL) == run])
    if newest is None or not fails_again(job_failure(to_rest_json(newest))):
        return None
    return newest


def run_job(
    kind: JobKind,
    payload: dict[str, Any],
    *,
    project: str,
    location: str,
    gcp_resources_path: str,
    request_key: str | None,
    job_client_factory: JobClientFactory | None,
    connection_retries: int,
    retry_wait_s: float,
) -> dict[str, Any]:
    """Creates (or resumes, or adopts) a job and polls it to a final state.

    See `vertex_retrain.backends.vertex.custom_job.run_custom_job_on_vertex` for the contract.
    """
    from google_cloud_pipeline_components.container.v1.gcp_launcher.utils import (
        gcp_labels_util,
    )

    if connection_retries < 1:
        raise ValueError(f"connection_retries must be >= 1, got {connection_retries}.")
    parent = location_parent(project, location)
    spec = to_snake_json(
        parse_rest_json(payload, kind.message_cls, f"{kind.resource_type} payload")
    )
    labels = dict(spec.get("labels", {}))
    label_value = request_key_label(request_key) if request_key is not None else None
    if label_value is not None:
        labels[REQUEST_KEY_LABEL] = label_value
    labels = gcp_labels_util.attach_system_labels(labels) or {}
    if labels:
        spec["labels"] = labels

    Path(gcp_resources_path).parent.mkdir(parents=True, exist_ok=True)
    runner = _new_runner(
        kind,
        project,
        location,
        gcp_resources_path,
        job_client_factory or default_job_client_factory,
    )

    def with_retries(call: Callable[[Any], Any], what: str, on_transient: Callable[[], Any]) -> Any:
        for attempt in range(1, connection_retries + 1):
            try:
                return call(_TransientErrorShield(runner.job_client))
            except _TransientError as err:
                found = on_transient()
                if found is not None:
                    return found
                if attempt == connection_retries:
                    raise VertexUnreachableError(
                        f"{what} failed after {connection_retries} attempts: {err}. Check "
                        f"network access to {api_endpoint(location)}; re-running the task "
                        "resumes the job recorded in gcp_resources."
                    ) from err
                _LOG.warning("%s: connection error (%s); retry %d", what, err, attempt)
                time.sleep(retry_wait_s)
                runner.reconnect()
        raise AssertionError("unreachable")  # pragma: no cover

    def get_job(_client: Any, name: str) -> Any:
        # GCPC passes its own job_client; ours may have been replaced by reconnect().
        return with_retries(
            lambda client: kind.get_with_client(client, name), f"get {name}", lambda: None
        )

    def create_job(_client: Any, parent_: str, _cleaned: dict[str, Any]) -> Any:
        # `_cleaned` lost its `{}` pools (module docstring); send the spec as validated. A
        # fresh copy per attempt: GCPC's create functions edit the dict they are given.
        if label_value is None:
            # Without a request key a retried create could start a second job.
            return _create_once(kind, runner, parent_, copy.deepcopy(spec))
        return with_retries(
            lambda client: kind.create_with_client(client, parent_, copy.deepcopy(spec)),
            f"create {kind.resource_type}",
            find_live_job,
        )

    def keyed_jobs() -> list[Any]:
        if label_value is None:
            return []
        jobs: list[Any] = with_retries(
            lambda client: _keyed_jobs(client, kind, parent, label_value),
            f"list {kind.resource_type}s",
            lambda: None,
        )
        return jobs

    def find_live_job() -> Any | None:
        return _live(keyed_jobs())

    job_name = _existing_job_name(runner, kind)
    if job_name is None:
        jobs = keyed_jobs()
        adopted = _live(jobs)
        run = labels.get(RUN_LABEL)
        # Outside a pipeline run no attempt is known to be this task's.
        failed = _failed_attempt(jobs, run) if adopted is None and run else None
        if failed is not None:
            # A retry of this task (its retry policy) would start the same job on the same
            # inputs; a failure of the code, its memory or a quota comes back, at full cost.
            raise EarlierAttemptFailedError(to_rest_json(failed))
        if adopted is not None:
            _LOG.info("Adopting %s started by an earlier attempt of this task", adopted.name)
            job_name = runner.create_job(lambda *_: adopted, json.dumps(spec))
        else:
            job_name = runner.create_job(create_job, json.dumps(spec))
    _LOG.info("Polling %s", job_name)
    try:
        final = runner.poll_job(get_job, job_name)
    except (ValueError, RuntimeError) as err:
        # GCPC raises without the resource; fetch it so the caller sees state and error.
        failed = to_rest_json(get_job(None, job_name))
        raise VertexJobFailedError(failed, str(err)) from err
    return to_rest_json(final)


def _create_once(kind: JobKind, runner: Any, parent: str, job_spec: dict[str, Any]) -> Any:
    try:
        return kind.create_with_client(_TransientErrorShield(runner.job_client), parent, job_spec)
    except _TransientError as err:
        raise VertexUnreachableError(
            f"create {kind.resource_type} failed with a connection error ({err}) and was not "
            "retried, because without a request_key a retry could start a duplicate job. Pass "
            "request_key (e.g. '<pipeline run>-<task>') to make create retries safe."
        ) from err

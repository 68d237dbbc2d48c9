"""In-memory stand-ins for the Google clients `vertex_retrain.backends.vertex` calls, for tests.

They sit at the client boundary: requests arrive as real `aiplatform_v1` / `cloudbuild_v1`
proto-plus messages (or GCPC's dicts, which are parsed into them, so unknown fields fail) and
answers are real messages. Server-side behaviour is modelled only as far as this package
relies on it, from the API reference; none of it has been compared with the live service.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

_LABEL_FILTER = re.compile(r'labels\.([\w-]+)="([^"]*)"')
_DISPLAY_NAME_FILTER = re.compile(r'display_name="((?:[^"\\]|\\.)*)"')
EPOCH = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)


def copy_message(message: Any) -> Any:
    """A deep copy of a proto-plus message, so callers cannot mutate the fake's state."""
    return type(message).deserialize(type(message).serialize(message))


def request_field(request: Any, name: str) -> Any:
    """Reads a field from a request given as a dict or as a proto-plus message."""
    return request[name] if isinstance(request, dict) else getattr(request, name)


def labels_match(labels: Any, filter_text: str) -> bool:
    """Evaluates the `labels.KEY="VALUE"` terms of a List filter (all must hold)."""
    return all(labels.get(k) == v for k, v in _LABEL_FILTER.findall(filter_text or ""))


def display_name_matches(display_name: str, filter_text: str) -> bool:
    """Evaluates the `display_name="..."` term of a List filter (absent: matches)."""
    match = _DISPLAY_NAME_FILTER.search(filter_text or "")
    if not match:
        return True
    wanted = re.sub(r"\\(.)", r"\1", match.group(1))
    return display_name == wanted


class FakeOperation:
    """A long-running operation as the GAPIC client returns it (`.operation.name`, `.result`).

    Args:
        result: The response (or a callable that completes the operation and returns it).
        name: The operation's name (empty for operations nobody resumes).
    """

    def __init__(self, result: Any, name: str = "") -> None:
        self._result = result
        self.operation = SimpleNamespace(name=name)

    def result(self, timeout: float | None = None) -> Any:
        """Returns the operation's response."""
        return self._result() if callable(self._result) else self._result


class FakeOperations:
    """Operations of one fake service, polled with `get_operation` as Vertex's are.

    An operation completes (its side effect runs and its response is fixed) once
    `pending_polls` further `get_operation` calls have seen it running; with 0 it completes
    when started. `cancel_operation` records the name.
    """

    def __init__(self) -> None:
        self.pending_polls = 0
        self.operations: dict[str, dict[str, Any]] = {}
        self.cancelled: list[str] = []

    def start(self, parent: str, complete: Callable[[], Any]) -> FakeOperation:
        """Starts an operation under `parent`; `complete()` applies it and returns the response."""
        name = f"{parent}/operations/{9000 + len(self.operations)}"
        entry: dict[str, Any] = {
            "polls": self.pending_polls,
            "complete": complete,
            "response": None,
        }
        self.operations[name] = entry
        if entry["polls"] == 0:
            entry["response"] = complete()
        return FakeOperation(lambda: self._finish(name), name)

    def _finish(self, name: str) -> Any:
        entry = self.operations[name]
        if entry["response"] is None:
            entry["polls"] = 0
            entry["response"] = entry["complete"]()
        return entry["response"]

    def get_operation(self, request: Any) -> Any:
        """Operations.GetOperation: running until `pending_polls` polls have passed."""
        from google.longrunning import operations_pb2
        from google.protobuf import any_pb2

        name = request_field(request, "name")
        entry = self.operations[name]
        if entry["response"] is None:
            if entry["polls"] > 0:
                entry["polls"] -= 1
                return operations_pb2.Operation(name=name, done=False)
            entry["response"] = entry["complete"]()
        response = entry["response"]
        packed = any_pb2.Any(value=type(response).serialize(response))
        return operations_pb2.Operation(name=name, done=True, response=packed)

    def cancel_operation(self, request: Any) -> None:
        """Operations.CancelOperation."""
        self.cancelled.append(request_field(request, "name"))


class FakeJobServiceClient:
    """JobService: each get advances a job one step through `states`.

    Args:
        states: States successive gets report; the last one sticks.
        trials: REST JSON trials a HyperparameterTuningJob reports once it has succeeded.
        get_errors: Exceptions raised by the first gets, one per call.
        create_errors: (exception, job_was_created) pairs raised by the first creates; with
            True the job exists although the caller saw an error (a lost response).
        record_path: Each call is appended there as a JSON line (for other processes).
        failure: The error (``google.rpc.Status`` in REST JSON, ``details`` with their
            ``@type``) a job that reaches JOB_STATE_FAILED reports; by default a replica's
            non-zero exit.
    """

    def __init__(
        self,
        states: Iterable[str] = ("JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"),
        *,
        trials: list[dict[str, Any]] | None = None,
        get_errors: Iterable[BaseException] = (),
        create_errors: Iterable[tuple[BaseException, bool]] = (),
        record_path: str | Path | None = None,
        failure: dict[str, Any] | None = None,
    ) -> None:
        self.states = list(states)
        self.failure = failure or {
            "code": 13,
            "message": "replica workerpool0-0 exited with status 1",
        }
        self.trials = trials or []
        self.get_errors = list(get_errors)
        self.create_errors = list(create_errors)
        self.record_path = Path(record_path) if record_path else None
        self.jobs: dict[str, Any] = {}
        self.calls: list[tuple[str, str]] = []
        self.created_payloads: list[dict[str, Any]] = []
        self.factory_calls = 0
        self._gets: dict[str, int] = {}

    def factory(self) -> Callable[[Any, Any], Any]:
        """A `job_client_factory` that returns this client and counts its calls."""

        def build(_options: Any, _info: Any) -> FakeJobServiceClient:
            self.factory_calls += 1
            return self

        return build

    def _record(self, method: str, name: str) -> None:
        self.calls.append((method, name))
        if self.record_path:
            with self.record_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"method": method, "name": name}) + "\n")

    def _create(self, collection: str, message_cls: Any, parent: str, spec: dict[str, Any]) -> Any:
        self._record(f"create_{collection}", parent)
        self.created_payloads.append(spec)
        job = message_cls(spec)  # proto-plus refuses unknown fields, like the real client
        job.name = f"{parent}/{collection}/{1000 + len(self.jobs)}"
        job.state = "JOB_STATE_PENDING"
        job.create_time = EPOCH + datetime.timedelta(seconds=len(self.jobs))
        if self.create_errors:
            error, committed = self.create_errors.pop(0)
            if committed:
                self.jobs[job.name] = job
            raise error
        self.jobs[job.name] = job
        return copy_message(job)

    def _get(self, name: str) -> Any:
        self._record("get", name)
        if self.get_errors:
            raise self.get_errors.pop(0)
        job = self.jobs[name]
        if job.state.name not in ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING"):
            step = self._gets.get(name, 0)
            self._gets[name] = step + 1
            job.state = self.states[min(step, len(self.states) - 1)]
            if job.state.name == "JOB_STATE_FAILED":
                from google.protobuf import json_format
                from google.rpc import error_details_pb2, status_pb2

                assert error_details_pb2  # registers ErrorInfo for the details' @type
                job.error = json_format.ParseDict(self.failure, status_pb2.Status())
            if job.state.name == "JOB_STATE_SUCCEEDED" and "trials" in type(job).meta.fields:
                from google.cloud import aiplatform_v1
                from google.protobuf import json_format

                for trial in self.trials:
                    pb = aiplatform_v1.Trial.pb(aiplatform_v1.Trial())
                    json_format.ParseDict(trial, pb)
                    job.trials.append(aiplatform_v1.Trial.wrap(pb))
                self.trials = []
        return copy_message(job)

    def _cancel(self, name: str) -> None:
        self._record("cancel", name)
        self.jobs[name].state = "JOB_STATE_CANCELLED"

    def _list(self, collection: str, request: Any) -> list[Any]:
        parent, filter_text = request_field(request, "parent"), request_field(request, "filter")
        self._record(f"list_{collection}", parent)
        return [
            copy_message(job)
            for name, job in self.jobs.items()
            if name.startswith(f"{parent}/{collection}/") and labels_match(job.labels, filter_text)
        ]

    def create_custom_job(self, parent: str, custom_job: dict[str, Any]) -> Any:
        """JobService.CreateCustomJob."""
        from google.cloud import aiplatform_v1

        return self._create("customJobs", aiplatform_v1.CustomJob, parent, custom_job)

    def get_custom_job(self, name: str, retry: Any = None) -> Any:
        """JobService.GetCustomJob."""
        return self._get(name)

    def cancel_custom_job(self, name: str) -> None:
        """JobService.CancelCustomJob."""
        self._cancel(name)

    def list_custom_jobs(self, request: Any) -> list[Any]:
        """JobService.ListCustomJobs (label filters only)."""
        return self._list("customJobs", request)

    def create_hyperparameter_tuning_job(
        self, parent: str, hyperparameter_tuning_job: dict[str, Any]
    ) -> Any:
        """JobService.CreateHyperparameterTuningJob."""
        from google.cloud import aiplatform_v1

        return self._create(
            "hyperparameterTuningJobs",
            aiplatform_v1.HyperparameterTuningJob,
            parent,
            hyperparameter_tuning_job,
        )

    def get_hyperparameter_tuning_job(self, name: str, retry: Any = None) -> Any:
        """JobService.GetHyperparameterTuningJob."""
        return self._get(name)

    def cancel_hyperparameter_tuning_job(self, name: str) -> None:
        """JobService.CancelHyperparameterTuningJob."""
        self._cancel(name)

    def list_hyperparameter_tuning_jobs(self, request: Any) -> list[Any]:
        """JobService.ListHyperparameterTuningJobs (label filters only)."""
        return self._list("hyperparameterTuningJobs", request)

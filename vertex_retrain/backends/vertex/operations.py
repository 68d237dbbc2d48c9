"""Long-running operations of register and deploy: recorded in ``gcp_resources``, resumed.

GCPC's ModelUploadOp and ModelDeployOp write the operation they start to the task's
``gcp_resources`` output as a ``VertexLro`` resource, so the Vertex console links the task to
it. This module does the same, and goes one step further: a restarted task that finds its
operation recorded waits for that operation instead of starting a second upload or deployment
(GCPC's LRO runner starts a new one). Waiting polls ``get_operation`` on the service client,
so fakes at the client boundary stand in for Vertex, and SIGTERM (a cancelled pipeline)
cancels the operation, as GCPC's runner does.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vertex_retrain.atomic_files import atomic_write_bytes
from vertex_retrain.backends.vertex._protos import resource_uri

__all__ = [
    "LRO_RESOURCE_TYPE",
    "OperationFailedError",
    "OperationTimeoutError",
    "record_operation",
    "recorded_operation",
    "wait_for_operation",
]

LRO_RESOURCE_TYPE = "VertexLro"
"""The ``resourceType`` GCPC's LRO launchers write."""

_LOG = logging.getLogger(__name__)


class OperationFailedError(RuntimeError):
    """The operation finished with an error (the message carries Vertex's code and text)."""


class OperationTimeoutError(TimeoutError):
    """The operation is still running after the wait; a re-run of the task resumes it."""


def record_operation(path: str, location: str, operation_name: str) -> None:
    """Writes ``gcp_resources`` naming the operation, in the form GCPC writes.

    Args:
        path: The task's ``gcp_resources`` output file (empty: record nothing).
        location: The Vertex AI region (for the operation's URI).
        operation_name: ``projects/.../operations/ID``.
    """
    if not path:
        return
    resources = {
        "resources": [
            {
                "resourceType": LRO_RESOURCE_TYPE,
                "resourceUri": resource_uri(location, operation_name),
            }
        ]
    }
    atomic_write_bytes(Path(path), json.dumps(resources, indent=2).encode("utf-8"))


def recorded_operation(path: str, location: str, parent: str) -> str | None:
    """The operation an earlier attempt of this task recorded, if it belongs under ``parent``.

    Args:
        path: The task's ``gcp_resources`` output file.
        location: The Vertex AI region.
        parent: The resource the operation must belong to (``projects/P/locations/L`` for an
            upload, the endpoint for a deployment).

    Returns:
        The operation name, or None when nothing (or something else) is recorded.

    Raises:
        ValueError: The file exists but is not ``gcp_resources`` JSON.
    """
    if not path or not Path(path).is_file() or not Path(path).stat().st_size:
        return None
    try:
        resources = json.loads(Path(path).read_text(encoding="utf-8")).get("resources", [])
    except (ValueError, AttributeError) as error:
        raise ValueError(
            f"{path} exists but is not gcp_resources JSON ({error}); delete it to start anew"
        ) from error
    prefix = resource_uri(location, "")
    for resource in resources:
        uri = str(resource.get("resourceUri", ""))
        name = uri[len(prefix) :] if uri.startswith(prefix) else ""
        if resource.get("resourceType") == LRO_RESOURCE_TYPE and _under(name, parent):
            return name
    return None


def _under(name: str, parent: str) -> bool:
    """Whether ``name`` is an operation of ``parent``, the project given by id or number.

    Vertex names resources with the project number; a caller may hold the project id.
    """
    ours, theirs = parent.split("/"), name.split("/")
    if len(theirs) <= len(ours) + 1 or ours[0] != "projects" or theirs[0] != "projects":
        return False
    same_below_project = theirs[2 : len(ours)] == ours[2:]
    return same_below_project and "operations" in theirs[len(ours) :]


def _decode(operation: Any, response_cls: Any) -> Any:
    return response_cls.deserialize(operation.response.value)


def wait_for_operation(
    client: Any,
    name: str,
    response_cls: Any,
    *,
    timeout_s: float,
    poll_s: float = 20.0,
    clock: Callable[[], float] = time.monotonic,
) -> Any:
    """Polls ``client.get_operation`` until the operation is done; cancels it on SIGTERM.

    Args:
        client: A service client (``ModelServiceClient``, ``EndpointServiceClient``, a fake).
        name: The operation's name.
        response_cls: The proto-plus response type (e.g. ``aiplatform_v1.UploadModelResponse``).
        timeout_s: How long to wait.
        poll_s: Seconds between polls.
        clock: Monotonic clock (tests pass a fake one).

    Returns:
        The operation's response, decoded.

    Raises:
        OperationFailedError: The operation finished with an error.
        OperationTimeoutError: Still running after ``timeout_s``; it is not cancelled, so a
            re-run of the task resumes it.
    """
    from google_cloud_pipeline_components.container.utils import execution_context

    deadline = clock() + timeout_s

    def cancel() -> None:
        _LOG.info("Cancelling %s", name)
        client.cancel_operation(request={"name": name})

    with execution_context.ExecutionContext(on_cancel=cancel):
        while True:
            operation = client.get_operation(request={"name": name})
            if operation.done:
                if operation.error.code:
                    raise OperationFailedError(
                        f"{name} failed (code {operation.error.code}): {operation.error.message}"
                    )
                return _decode(operation, response_cls)
            if clock() >= deadline:
                raise OperationTimeoutError(
                    f"{name} is still running after {timeout_s:g} s; it goes on on Vertex, and "
                    "running the task again waits for it instead of starting another"
                )
            time.sleep(poll_s)

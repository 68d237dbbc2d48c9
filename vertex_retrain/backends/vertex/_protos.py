"""Conversions between the REST JSON payloads of docs/architecture.md and aiplatform_v1 protos.

Every payload crosses into Google's client libraries through here, so an unknown field or a
wrongly typed value is refused before any request is sent.
"""

from __future__ import annotations

import re
from typing import Any

from vertex_retrain.rules.job_failure import JobFailure


def parse_rest_json(payload: dict[str, Any], message_cls: Any, what: str) -> Any:
    """Parses a REST JSON dict (camelCase or snake_case keys) into a proto-plus message.

    Args:
        payload: The resource in JSON form, as `json_format.MessageToDict` writes it.
        message_cls: A proto-plus class such as `aiplatform_v1.CustomJob`.
        what: How the error message names the payload (e.g. "CustomJob payload").

    Returns:
        An instance of `message_cls`.

    Raises:
        ValueError: The payload is not a dict, names an unknown field or has a wrong type.
    """
    from google.protobuf import json_format

    if not isinstance(payload, dict):
        raise ValueError(
            f"{what}: expected a dict in Vertex REST JSON form, got {type(payload).__name__}."
        )
    pb = message_cls.pb(message_cls())
    try:
        json_format.ParseDict(payload, pb, ignore_unknown_fields=False)
    except json_format.ParseError as err:
        raise ValueError(
            f"{what} does not parse as aiplatform_v1.{message_cls.__name__}: {err}. "
            "Expected the REST JSON form of the resource (camelCase keys, durations as "
            '"3600s"), as built by vertex_retrain.specs.'
        ) from err
    return message_cls.wrap(pb)


def to_rest_json(message: Any) -> dict[str, Any]:
    """Returns a proto-plus message as a camelCase REST JSON dict."""
    from google.protobuf import json_format

    result: dict[str, Any] = json_format.MessageToDict(type(message).pb(message))
    return result


def to_snake_json(message: Any) -> dict[str, Any]:
    """Returns a proto-plus message as a JSON dict with proto (snake_case) field names.

    GCPC's launchers hand their payload dict to the GAPIC client, whose proto-plus constructor
    accepts only proto field names, so this is the form they need.
    """
    from google.protobuf import json_format

    result: dict[str, Any] = json_format.MessageToDict(
        type(message).pb(message), preserving_proto_field_name=True
    )
    return result


def api_endpoint(location: str) -> str:
    """Returns the regional Vertex AI API host, e.g. `europe-west4-aiplatform.googleapis.com`."""
    if not location or not re.fullmatch(r"[a-z0-9-]+", location):
        raise ValueError(
            f"location must be a Vertex AI region such as 'europe-west4', got {location!r}."
        )
    return f"{location}-aiplatform.googleapis.com"


def resource_uri(location: str, resource_name: str) -> str:
    """Returns the URI GCPC artifacts and gcp_resources use for a Vertex resource name."""
    return f"https://{api_endpoint(location)}/v1/{resource_name}"


def location_parent(project: str, location: str) -> str:
    """Returns `projects/{project}/locations/{location}` after checking both are set."""
    if not project or "/" in project:
        raise ValueError(f"project must be a Google Cloud project id, got {project!r}.")
    api_endpoint(location)
    return f"projects/{project}/locations/{location}"


def request_key_label(request_key: str) -> str:
    """Maps an arbitrary request key to a valid label value (a stable hash of it).

    Label values allow only 63 lowercase letters, digits, `_` and `-`, while a request key is
    typically a pipeline run name plus a task name, so the key is hashed.
    """
    import hashlib

    if not request_key:
        raise ValueError("request_key must be a non-empty string such as '<run>-<task>'.")
    return "k" + hashlib.sha256(request_key.encode("utf-8")).hexdigest()[:40]


REQUEST_KEY_LABEL = "vertex_retrain_request"
"""Label key under which resources created by this package record their request key hash."""


_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def job_failure(job: dict[str, Any]) -> JobFailure:
    """The structured failure of a job resource in REST JSON: its state, its error's code and
    message, and the ``ErrorInfo`` reasons among the error's details."""
    error = job.get("error") or {}
    code = error.get("code")
    details = error.get("details") or []
    return JobFailure(
        state=str(job.get("state", "")),
        message=str(error.get("message", "")),
        code=int(code) if isinstance(code, int | float) and not isinstance(code, bool) else None,
        reasons=tuple(
            str(d["reason"])
            for d in details
            if isinstance(d, dict) and d.get("@type") == _ERROR_INFO and d.get("reason")
        ),
    )

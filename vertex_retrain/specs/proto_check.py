"""Proof that a payload is a real Vertex message: parse it into the ``aiplatform_v1`` protos.

``google.cloud.aiplatform_v1`` is heavy, so it is imported only when these functions run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_retrain.specs.payload_io import JobKind


class PayloadProtoError(ValueError):
    """The payload does not parse into the official proto (unknown field, bad enum, type)."""


def _message_class(kind: JobKind) -> Any:
    from google.cloud import aiplatform_v1  # heavy: imported only for this check

    classes = {
        "custom_job": aiplatform_v1.CustomJob,
        "tuning_job": aiplatform_v1.HyperparameterTuningJob,
    }
    if kind not in classes:
        raise ValueError(f"kind must be 'custom_job' or 'tuning_job', got {kind!r}")
    return classes[kind]


def check_payload_parses(payload: Mapping[str, Any], kind: JobKind) -> Any:
    """Parses ``payload`` into the ``aiplatform_v1`` proto, refusing unknown fields.

    Args:
        payload: CustomJob or HyperparameterTuningJob resource in REST JSON form.
        kind: ``custom_job`` or ``tuning_job``.

    Returns:
        The parsed protobuf message (``CustomJob.pb()`` / ``HyperparameterTuningJob.pb()``
        instance).

    Raises:
        PayloadProtoError: When the payload does not parse (the proto parser's reason is
            included).
    """
    from google.protobuf import json_format

    cls = _message_class(kind)
    message = cls.pb(cls())
    try:
        json_format.ParseDict(dict(payload), message, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise PayloadProtoError(
            f"payload is not a valid aiplatform_v1.{cls.__name__}: {exc}"
        ) from exc
    return message


def canonical_payload(payload: Mapping[str, Any], kind: JobKind) -> dict[str, Any]:
    """Returns the payload as ``json_format.MessageToDict`` renders it after parsing.

    Raises:
        PayloadProtoError: When the payload does not parse.
    """
    from google.protobuf import json_format

    result: dict[str, Any] = json_format.MessageToDict(check_payload_parses(payload, kind))
    return result

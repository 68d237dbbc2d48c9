"""Reading job payloads as users write them: camelCase or snake_case, resource or bare body.

Validation works on the REST JSON form (camelCase). Users also write snake_case (the proto
field names) and the bare job-spec body that ``gcloud ai custom-jobs create --config`` takes;
:func:`normalize_job` turns all of these into one full REST resource and remembers how the
input was shaped so problems can be reported with the user's own paths.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

JobKind = Literal["custom_job", "tuning_job"]

# Map keys that hold user data, not field names: never renamed.
_OPAQUE_KEYS = frozenset({"labels"})
_SNAKE = re.compile(r"_([a-z0-9])")


def snake_to_camel(name: str) -> str:
    """Converts ``worker_pool_specs`` to ``workerPoolSpecs`` (camelCase input is unchanged)."""
    return _SNAKE.sub(lambda m: m.group(1).upper(), name)


def to_camel_keys(value: Any) -> Any:
    """Returns a deep copy of ``value`` with every field name in camelCase.

    Keys of user maps (``labels``) are kept as written.
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            camel = snake_to_camel(str(key))
            out[camel] = (
                dict(item)
                if camel in _OPAQUE_KEYS and isinstance(item, Mapping)
                else (to_camel_keys(item))
            )
        return out
    if isinstance(value, list | tuple):
        return [to_camel_keys(item) for item in value]
    return value


@dataclass(frozen=True)
class NormalizedJob:
    """A payload brought to the full camelCase REST resource.

    Attributes:
        kind: ``custom_job`` or ``tuning_job``.
        resource: The full resource (``{"jobSpec": ...}`` or ``{"studySpec": ...,
            "trialJobSpec": ...}``).
        body_prefix: ``"jobSpec."`` when the input was a bare CustomJobSpec body (so paths can
            be shown relative to it), else ``""``.
    """

    kind: JobKind
    resource: dict[str, Any]
    body_prefix: str = ""

    def user_path(self, field_path: str) -> str:
        """Returns ``field_path`` as the user's file spells it (bare bodies lose ``jobSpec.``)."""
        if self.body_prefix and field_path.startswith(self.body_prefix):
            return field_path[len(self.body_prefix) :]
        return field_path


def normalize_job(payload: Mapping[str, Any]) -> NormalizedJob:
    """Detects the kind of a job payload and returns it as a full camelCase resource.

    Accepted shapes: a CustomJob resource (``jobSpec``), a HyperparameterTuningJob resource
    (``studySpec`` / ``trialJobSpec``), or a bare CustomJobSpec body (``workerPoolSpecs`` at
    the top, as ``gcloud ai custom-jobs create --config`` takes). Keys may be camelCase or
    snake_case.

    Args:
        payload: The decoded JSON / YAML document.

    Returns:
        The normalized job.

    Raises:
        ValueError: When the document is not a mapping or matches none of the shapes.
    """
    if not isinstance(payload, Mapping):
        raise ValueError(
            f"expected a job definition (a mapping), got {type(payload).__name__}; write a "
            "CustomJob / HyperparameterTuningJob resource or a gcloud --config job-spec body"
        )
    resource = to_camel_keys(payload)
    if "studySpec" in resource or "trialJobSpec" in resource:
        return NormalizedJob("tuning_job", resource)
    if "jobSpec" in resource:
        return NormalizedJob("custom_job", resource)
    if "workerPoolSpecs" in resource:
        return NormalizedJob("custom_job", {"jobSpec": resource}, body_prefix="jobSpec.")
    raise ValueError(
        "cannot tell what kind of job this is: expected 'jobSpec' (CustomJob), 'studySpec' and "
        "'trialJobSpec' (HyperparameterTuningJob) or 'workerPoolSpecs' (gcloud --config "
        f"job-spec body) at the top level; found keys {sorted(resource)}"
    )


def as_int(value: Any) -> int | None:
    """Reads an int64 the way the proto JSON mapping allows (int or decimal string).

    Returns None when ``value`` is not an integer in either form.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    return None


def as_float(value: Any) -> float | None:
    """Reads a JSON number (or numeric string); None when it is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


_DURATION = re.compile(r"(\d+)(\.\d{1,9})?s")


def parse_duration(value: Any) -> float | None:
    """Reads a proto JSON Duration such as ``"3600s"``; None when malformed."""
    if isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if match:
            return float(match.group(1) + (match.group(2) or ""))
    return None


def mapping(value: Any) -> Mapping[str, Any]:
    """Returns ``value`` if it is a mapping, else an empty one (validation reports the type)."""
    return value if isinstance(value, Mapping) else {}

"""Vertex AI Model Registry: versions under one model per display name, with aliases.

Idempotency: every version this module uploads carries a label with the hash of the caller's
request key (`vertex_retrain.rules.idempotency`). Before uploading, the versions of the model
are searched for that label, so a re-run after a crash returns the version the first attempt
uploaded. An upload still in progress is not listed yet: its `UploadModel` operation is recorded
in the task's `gcp_resources` (as GCPC's ModelUploadOp does, so the console links it), and a
re-run waits for that operation instead of uploading again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from vertex_retrain.backends.vertex._protos import (
    REQUEST_KEY_LABEL,
    api_endpoint,
    location_parent,
    parse_rest_json,
    request_key_label,
    resource_uri,
    to_rest_json,
)
from vertex_retrain.backends.vertex.operations import (
    OperationFailedError,
    record_operation,
    recorded_operation,
    wait_for_operation,
)
from vertex_retrain.rules.aliases import is_valid_alias

__all__ = [
    "RegisteredModel",
    "find_model_version",
    "merge_version_aliases",
    "register_model_version",
]


@dataclass(frozen=True)
class RegisteredModel:
    """A model version in the registry.

    Attributes:
        model_name: `projects/{p}/locations/{l}/models/{id}`, without a version.
        version_id: The version id Vertex assigned (a decimal string).
        version_aliases: Aliases the version carries after the call.
        created: False when an earlier attempt with the same request key had uploaded it.
        location: The Vertex AI region.
    """

    model_name: str
    version_id: str
    version_aliases: tuple[str, ...]
    created: bool
    location: str

    @property
    def resource_name(self) -> str:
        """`{model_name}@{version_id}`, the form GCPC's ModelUploadOp puts in its artifact."""
        return f"{self.model_name}@{self.version_id}"

    @property
    def uri(self) -> str:
        """The `google.VertexModel` artifact URI (`https://{location}-aiplatform...`)."""
        return resource_uri(self.location, self.resource_name)

    def artifact_metadata(self) -> dict[str, str]:
        """Metadata of the `google.VertexModel` artifact: `{"resourceName": ...}`."""
        return {"resourceName": self.resource_name}


def default_model_client(location: str) -> Any:
    """The real `aiplatform_v1.ModelServiceClient` for the region."""
    from google.cloud import aiplatform_v1

    return aiplatform_v1.ModelServiceClient(client_options={"api_endpoint": api_endpoint(location)})


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _find_model(client: Any, parent: str, display_name: str) -> str | None:
    from google.cloud import aiplatform_v1

    request = aiplatform_v1.ListModelsRequest(
        parent=parent, filter=f"display_name={_quote(display_name)}"
    )
    names = sorted(
        {
            m.name.split("@")[0]
            for m in client.list_models(request=request)
            if m.display_name == display_name
        }
    )
    if len(names) > 1:
        raise ValueError(
            f"{len(names)} models are named {display_name!r} in {parent}: {', '.join(names)}. "
            "Versions must go under one model; rename or delete the extra models."
        )
    return names[0] if names else None


def _find_version(client: Any, model_name: str, label_value: str) -> Any | None:
    from google.cloud import aiplatform_v1

    request = aiplatform_v1.ListModelVersionsRequest(
        name=model_name, filter=f"labels.{REQUEST_KEY_LABEL}={_quote(label_value)}"
    )
    found = [
        v
        for v in client.list_model_versions(request=request)
        if v.labels.get(REQUEST_KEY_LABEL) == label_value
    ]
    return min(found, key=lambda v: int(v.version_id)) if found else None


def _check_aliases(aliases: Sequence[str]) -> list[str]:
    for alias in aliases:
        if not is_valid_alias(alias):
            raise ValueError(
                f"alias {alias!r} is not a valid Vertex version alias: it must match "
                "[a-z][a-zA-Z0-9-]{0,126}[a-z0-9] and not be a number."
            )
    return list(aliases)


def register_model_version(
    *,
    project: str,
    location: str,
    display_name: str,
    artifact_uri: str,
    serving_container: dict[str, Any],
    request_key: str,
    labels: dict[str, str] | None = None,
    description: str = "",
    upload_timeout_s: float = 1800.0,
    model_client: Any = None,
    gcp_resources_path: str = "",
    poll_s: float = 20.0,
) -> RegisteredModel:
    """Uploads a model version under the model with this display name, creating the model once.

    The new version takes no alias (the first version of a new model is made default by
    Vertex itself); `merge_version_aliases` moves aliases afterwards, as the shared rule
    (`vertex_retrain.rules.aliases`) says.

    Args:
        project: Google Cloud project id.
        location: Vertex AI region.
        display_name: The model's display name; versions of one model share it.
        artifact_uri: The gs:// directory holding the model files (the job's AIP_MODEL_DIR).
        serving_container: A `ModelContainerSpec` in REST JSON form (docs/architecture.md).
        request_key: The idempotency key (`vertex_retrain.rules.idempotency`); a re-run with
            the same key returns the version already uploaded instead of uploading another.
        labels: Labels for the version; a request-key label is added.
        description: Version description.
        upload_timeout_s: How long to wait for the upload operation.
        model_client: An `aiplatform_v1.ModelServiceClient` (or a fake); built when omitted.
        gcp_resources_path: The task's `gcp_resources` output: the `UploadModel` operation is
            recorded there, and one recorded by an earlier attempt is waited for (empty:
            nowhere).
        poll_s: Seconds between polls of the operation.

    Returns:
        The registered version with its current aliases; `.uri` and `.artifact_metadata()`
        give the `google.VertexModel` artifact.

    Raises:
        ValueError: Bad input (nothing is uploaded), or several models share the display name.
        OperationTimeoutError: The upload is still running after `upload_timeout_s`; running
            the task again waits for it.
    """
    from google.cloud import aiplatform_v1

    parent = location_parent(project, location)
    if not display_name or len(display_name) > 128:
        raise ValueError(f"display_name must be 1 to 128 characters, got {display_name!r}.")
    if not artifact_uri.startswith("gs://"):
        raise ValueError(
            f"artifact_uri must be a gs:// directory (the job's AIP_MODEL_DIR), "
            f"got {artifact_uri!r}."
        )
    container = parse_rest_json(
        serving_container, aiplatform_v1.ModelContainerSpec, "serving_container"
    )
    if not container.image_uri:
        raise ValueError("serving_container needs imageUri (the serving image).")
    label_value = request_key_label(request_key)
    client = model_client or default_model_client(location)

    model_name = _find_model(client, parent, display_name)
    version = _find_version(client, model_name, label_value) if model_name else None
    created = version is None
    if version is None:
        response = _resume_upload(
            client, gcp_resources_path, location, parent, upload_timeout_s, poll_s
        )
        if response is None:
            request = aiplatform_v1.UploadModelRequest(
                parent=parent,
                parent_model=model_name or "",
                model=aiplatform_v1.Model(
                    display_name=display_name,
                    description=description,
                    artifact_uri=artifact_uri,
                    container_spec=container,
                    labels={**(labels or {}), REQUEST_KEY_LABEL: label_value},
                ),
            )
            name = str(client.upload_model(request=request).operation.name)
            record_operation(gcp_resources_path, location, name)
            response = wait_for_operation(
                client,
                name,
                aiplatform_v1.UploadModelResponse,
                timeout_s=upload_timeout_s,
                poll_s=poll_s,
            )
        model_name = response.model.split("@")[0]
        version = client.get_model(name=f"{model_name}@{response.model_version_id}")
    assert model_name is not None  # set by _find_model or by the upload response
    return RegisteredModel(
        model_name=model_name,
        version_id=str(version.version_id),
        version_aliases=tuple(sorted(version.version_aliases)),
        created=created,
        location=location,
    )


def _resume_upload(
    client: Any, path: str, location: str, parent: str, timeout_s: float, poll_s: float
) -> Any | None:
    """The response of an upload an earlier attempt recorded, once it finishes; None when
    there is none, or it failed (then the caller uploads again)."""
    from google.api_core import exceptions as api_exceptions
    from google.cloud import aiplatform_v1

    earlier = recorded_operation(path, location, parent)
    if earlier is None:
        return None
    try:
        return wait_for_operation(
            client, earlier, aiplatform_v1.UploadModelResponse, timeout_s=timeout_s, poll_s=poll_s
        )
    except (OperationFailedError, api_exceptions.NotFound):
        return None


def merge_version_aliases(
    version: RegisteredModel, aliases: Sequence[str], *, model_client: Any = None
) -> RegisteredModel:
    """Moves `aliases` onto `version` in one MergeVersionAliases call.

    One call, so no reader sees the champion alias moved without the default version. When
    the version holds every alias already (a re-run), nothing is sent.

    Args:
        version: The version (from `register_model_version`).
        aliases: Aliases to move; each leaves the version holding it.
        model_client: An `aiplatform_v1.ModelServiceClient` (or a fake); built when omitted.

    Returns:
        The version with its aliases after the move.

    Raises:
        ValueError: An alias Vertex would refuse; nothing is sent.
    """
    from google.cloud import aiplatform_v1

    wanted = _check_aliases(aliases)
    if set(wanted) <= set(version.version_aliases):
        return version
    client = model_client or default_model_client(version.location)
    merged = client.merge_version_aliases(
        request=aiplatform_v1.MergeVersionAliasesRequest(
            name=version.resource_name, version_aliases=wanted
        )
    )
    return replace(version, version_aliases=tuple(sorted(merged.version_aliases)))


def find_model_version(
    *,
    project: str,
    location: str,
    display_name: str,
    alias: str,
    model_client: Any = None,
) -> dict[str, Any] | None:
    """Returns the version carrying `alias` (REST JSON, with `artifactUri`), or None.

    None means there is no model with that display name or no version with that alias; the
    evaluation step treats that as "no champion yet".

    Raises:
        ValueError: Several models share the display name.
    """
    from google.api_core import exceptions as api_exceptions

    parent = location_parent(project, location)
    client = model_client or default_model_client(location)
    model_name = _find_model(client, parent, display_name)
    if model_name is None:
        return None
    try:
        version = client.get_model(name=f"{model_name}@{alias}")
    except api_exceptions.NotFound:
        return None
    return to_rest_json(version)

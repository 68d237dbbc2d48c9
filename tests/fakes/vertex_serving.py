"""In-memory Model Registry and Endpoint clients for tests (see `tests.fakes.vertex_jobs`)."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from tests.fakes.vertex_jobs import (
    EPOCH,
    FakeOperation,
    FakeOperations,
    copy_message,
    display_name_matches,
    labels_match,
    request_field,
)


class _OperationsMixin:
    """The Operations methods a service client carries; `ops` holds the operations."""

    calls: list[str]
    ops: FakeOperations

    def get_operation(self, request: Any) -> Any:
        """Operations.GetOperation (see `FakeOperations`)."""
        self.calls.append("get_operation")
        return self.ops.get_operation(request)

    def cancel_operation(self, request: Any) -> None:
        """Operations.CancelOperation."""
        self.ops.cancel_operation(request)


class FakeModelServiceClient(_OperationsMixin):
    """ModelService: models with numbered versions and aliases that are unique per model.

    Assigning an alias another version carries moves it (the Model Registry docs: an alias
    is on one version at a time); the first version of a model gets `default`.
    """

    def __init__(self) -> None:
        self.versions: dict[str, list[Any]] = {}
        self.calls: list[str] = []
        self.ops = FakeOperations()

    def _version(self, name: str) -> Any:
        from google.api_core import exceptions as api_exceptions

        model_name, _, ref = name.partition("@")
        for version in self.versions.get(model_name, []):
            if ref == version.version_id or (ref or "default") in version.version_aliases:
                return version
        raise api_exceptions.NotFound(f"{name} not found")

    def _assign(self, model_name: str, target: Any, aliases: Iterable[str]) -> None:
        from google.api_core import exceptions as api_exceptions

        for alias in aliases:
            if alias.startswith("-"):
                if alias == "-default":
                    raise api_exceptions.FailedPrecondition("a model must keep one default")
                target.version_aliases = [a for a in target.version_aliases if a != alias[1:]]
                continue
            for version in self.versions[model_name]:
                version.version_aliases = [a for a in version.version_aliases if a != alias]
            target.version_aliases = [*target.version_aliases, alias]

    def list_models(self, request: Any) -> list[Any]:
        """ModelService.ListModels (display_name filter); one entry per model."""
        self.calls.append("list_models")
        return [
            copy_message(self._version(model_name))
            for model_name, versions in self.versions.items()
            if model_name.startswith(request_field(request, "parent") + "/models/")
            and display_name_matches(versions[0].display_name, request_field(request, "filter"))
        ]

    def list_model_versions(self, request: Any) -> list[Any]:
        """ModelService.ListModelVersions (label filters only)."""
        self.calls.append("list_model_versions")
        return [
            copy_message(v)
            for v in self.versions.get(request_field(request, "name"), [])
            if labels_match(v.labels, request_field(request, "filter"))
        ]

    def upload_model(self, request: Any) -> FakeOperation:
        """ModelService.UploadModel."""
        from google.cloud import aiplatform_v1

        self.calls.append("upload_model")
        model = copy_message(request.model)

        def complete() -> Any:
            if request.parent_model:
                model_name = request.parent_model
                versions = self.versions[model_name]  # KeyError: unknown parent model
            else:
                model_name = f"{request.parent}/models/{500 + len(self.versions)}"
                versions = self.versions.setdefault(model_name, [])
            model.name = model_name
            model.version_id = str(len(versions) + 1)
            aliases = list(model.version_aliases)
            model.version_aliases = ["default"] if not versions else []
            versions.append(model)
            self._assign(model_name, model, aliases)
            return aiplatform_v1.UploadModelResponse(
                model=model_name, model_version_id=model.version_id
            )

        return self.ops.start(request.parent, complete)

    def get_model(self, name: str) -> Any:
        """ModelService.GetModel (`model`, `model@version` or `model@alias`)."""
        self.calls.append("get_model")
        return copy_message(self._version(name))

    def delete_model(self, name: str) -> FakeOperation:
        """ModelService.DeleteModel (every version of the model)."""
        self.calls.append("delete_model")
        del self.versions[name]
        return FakeOperation(None)

    def merge_version_aliases(self, request: Any) -> Any:
        """ModelService.MergeVersionAliases."""
        self.calls.append("merge_version_aliases")
        target = self._version(request.name)
        self._assign(request.name.partition("@")[0], target, request.version_aliases)
        return copy_message(target)


class FakeEndpointServiceClient(_OperationsMixin):
    """EndpointService: deployed models, a traffic split that must sum to 100, labels."""

    def __init__(self) -> None:
        self.endpoints: dict[str, Any] = {}
        self.calls: list[str] = []
        self._deployed = 0
        self.ops = FakeOperations()

    @staticmethod
    def _check_split(endpoint: Any, split: dict[str, int]) -> None:
        from google.api_core import exceptions as api_exceptions

        ids = {d.id for d in endpoint.deployed_models}
        if set(split) - ids or (split and sum(split.values()) != 100):
            raise api_exceptions.InvalidArgument(f"bad traffic split {split} for {sorted(ids)}")

    def list_endpoints(self, request: Any) -> list[Any]:
        """EndpointService.ListEndpoints (display_name filter)."""
        self.calls.append("list_endpoints")
        return [
            copy_message(e)
            for e in self.endpoints.values()
            if display_name_matches(e.display_name, request_field(request, "filter"))
        ]

    def get_endpoint(self, name: str) -> Any:
        """EndpointService.GetEndpoint."""
        self.calls.append("get_endpoint")
        return copy_message(self.endpoints[name])

    def create_endpoint(self, request: Any) -> FakeOperation:
        """EndpointService.CreateEndpoint."""
        self.calls.append("create_endpoint")
        endpoint = copy_message(request.endpoint)
        endpoint.name = f"{request.parent}/endpoints/{700 + len(self.endpoints)}"
        self.endpoints[endpoint.name] = endpoint
        return FakeOperation(copy_message(endpoint))

    def delete_endpoint(self, name: str) -> FakeOperation:
        """EndpointService.DeleteEndpoint; refused while models are deployed."""
        from google.api_core import exceptions as api_exceptions

        self.calls.append("delete_endpoint")
        if self.endpoints[name].deployed_models:
            raise api_exceptions.FailedPrecondition("the endpoint still has deployed models")
        del self.endpoints[name]
        return FakeOperation(None)

    def update_endpoint(self, request: Any) -> Any:
        """EndpointService.UpdateEndpoint (labels and traffic_split masks)."""
        self.calls.append("update_endpoint:" + ",".join(request.update_mask.paths))
        endpoint = self.endpoints[request.endpoint.name]
        for path in request.update_mask.paths:
            if path == "labels":
                endpoint.labels = dict(request.endpoint.labels)
            elif path == "traffic_split":
                split = dict(request.endpoint.traffic_split)
                self._check_split(endpoint, split)
                endpoint.traffic_split = split
            else:
                raise ValueError(f"fake does not model update_mask path {path!r}")
        return copy_message(endpoint)

    def deploy_model(self, request: Any) -> FakeOperation:
        """EndpointService.DeployModel; traffic_split key "0" is the new deployed model.

        The model appears on the endpoint when the operation completes; an empty
        traffic_split leaves the endpoint's split as it is (the API reference).
        """
        from google.cloud import aiplatform_v1

        self.calls.append("deploy_model")
        endpoint = self.endpoints[request.endpoint]
        wanted = dict(request.traffic_split)

        def complete() -> Any:
            self._deployed += 1
            deployed = copy_message(request.deployed_model)
            deployed.id = str(4000 + self._deployed)
            deployed.model, _, deployed.model_version_id = request.deployed_model.model.partition(
                "@"
            )
            deployed.create_time = EPOCH + datetime.timedelta(minutes=self._deployed)
            endpoint.deployed_models.append(deployed)
            if wanted:
                split = {(deployed.id if k == "0" else k): v for k, v in wanted.items()}
                self._check_split(endpoint, split)
                endpoint.traffic_split = split
            return aiplatform_v1.DeployModelResponse(deployed_model=copy_message(deployed))

        return self.ops.start(request.endpoint, complete)

    def undeploy_model(self, request: Any) -> FakeOperation:
        """EndpointService.UndeployModel; refuses to drop a model that still has traffic."""
        from google.api_core import exceptions as api_exceptions
        from google.cloud import aiplatform_v1

        self.calls.append(f"undeploy_model:{request.deployed_model_id}")
        endpoint = self.endpoints[request.endpoint]
        split = dict(request.traffic_split) or dict(endpoint.traffic_split)
        if split.get(request.deployed_model_id, 0) > 0:
            raise api_exceptions.FailedPrecondition("deployed model still receives traffic")
        kept = [d for d in endpoint.deployed_models if d.id != request.deployed_model_id]
        del endpoint.deployed_models[:]
        endpoint.deployed_models.extend(kept)
        split.pop(request.deployed_model_id, None)
        self._check_split(endpoint, split)
        endpoint.traffic_split = split
        return FakeOperation(aiplatform_v1.UndeployModelResponse())


class FakePredictionServiceClient:
    """PredictionService.Predict over a fake endpoint: requests follow its traffic split.

    Each request goes to the next deployed model of a fixed rotation weighted by the split (1%
    is one slot in a hundred), so a test knows which model answers. A deployed model of a
    version in `broken_versions` (``model@version``) answers with an internal error.
    """

    def __init__(self, endpoints: FakeEndpointServiceClient) -> None:
        self.endpoints = endpoints
        self.broken_versions: set[str] = set()
        self.requests: list[tuple[str, str]] = []
        self._turn = 0

    def predict(self, request: Any) -> Any:
        """PredictionService.Predict."""
        from google.api_core import exceptions as api_exceptions
        from google.cloud import aiplatform_v1

        endpoint = self.endpoints.endpoints[request.endpoint]
        slots = [
            deployed_id
            for deployed_id, share in sorted(endpoint.traffic_split.items())
            for _ in range(share)
        ]
        if not slots:
            raise api_exceptions.FailedPrecondition("no deployed model receives traffic")
        chosen = slots[(self._turn * 37) % len(slots)]
        self._turn += 1
        deployed = next(d for d in endpoint.deployed_models if d.id == chosen)
        self.requests.append((request.endpoint, chosen))
        if f"{deployed.model}@{deployed.model_version_id}" in self.broken_versions:
            raise api_exceptions.InternalServerError("the model server returned 500")
        response = aiplatform_v1.PredictResponse(
            deployed_model_id=chosen,
            model=deployed.model,
            model_version_id=deployed.model_version_id,
        )
        response.predictions.extend([{"echo": True} for _ in request.instances])
        return response

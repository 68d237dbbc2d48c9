"""Whether the registry's champion is deployed on its model's endpoint, and putting it back.

The weekly template promotes a better candidate in two tasks: ``register_model`` moves the
champion (and default) alias to the new version, then ``deploy_model`` moves the traffic. A
run stopped between the two (Ctrl-C, a killed machine; a task retry finishes the deploy
itself) leaves the alias on a version no endpoint serves while the traffic stays on the
previous champion (so does a deploy that fails its checks). The other order would leave the
same kind of window (the traffic on the new version, the alias on one that gets no traffic
any more), so the state is found and repaired instead, locally:

- ``vertex-retrain history MODEL`` says so under the table (:func:`champion_not_serving`);
- before a local run of the model starts (under its run lock), the alias goes back to the
  version the endpoint serves (:func:`restore_serving_champion`): the stopped run's promotion
  never finished (the run is on record as cancelled), and the new run judges its candidate
  against the model that serves.

The endpoint is the one that serves versions of the model; a model served by several
endpoints is left as it is (which one is the champion's would be a guess). A champion
deployed with no traffic (``traffic_percentage=0``, or after a rollback) is deployed: a
person chose that split, and it is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_db import RegistryNotFoundError
from vertex_retrain.backends.local.serving.endpoints import Endpoint, LocalEndpoints
from vertex_retrain.rules.aliases import CHAMPION_ALIAS, DEFAULT_ALIAS
from vertex_retrain.rules.traffic import largest_share, traffic_text

_CAUSE = "a run stopped or failed between registering it and deploying it"


class EndpointReader(Protocol):
    """What is read of the local endpoints (:class:`LocalEndpoints`, or a test's)."""

    def list_endpoints(self) -> list[Endpoint]:
        """Every endpoint."""
        ...


@dataclass(frozen=True)
class ChampionNotServing:
    """A champion version that is not deployed on the endpoint serving its model.

    Attributes:
        model: The registry model.
        alias: The champion alias.
        champion: The version holding the alias.
        endpoint: The endpoint serving the model's versions.
        traffic: Deployed model id -> percent, for the model's deployed models with traffic.
        versions: Deployed model id -> the version it serves.
    """

    model: str
    alias: str
    champion: str
    endpoint: str
    traffic: dict[str, int]
    versions: dict[str, str]

    @property
    def serving(self) -> str:
        """The version with the largest share of the endpoint's traffic."""
        return self.versions[largest_share(self.traffic)]

    def line(self) -> str:
        """One line: what is inconsistent, why, and that the next local run reconciles it."""
        return (
            f"{self.alias} version {self.champion} of {self.model!r} is not deployed: endpoint "
            f"{self.endpoint!r} sends {traffic_text(self.traffic, self.versions)} ({_CAUSE}); "
            f"the next local run of {self.model!r} moves {self.alias!r} back to version "
            f"{self.serving} before it starts"
        )

    def restored_line(self) -> str:
        """One line saying the alias went back to the serving version."""
        return (
            f"reconciled: {self.alias!r} of {self.model!r} moved back from version "
            f"{self.champion}, which is not deployed ({_CAUSE}), to version {self.serving}, "
            f"which endpoint {self.endpoint!r} serves"
        )


def champion_not_serving(
    model: str,
    alias: str = CHAMPION_ALIAS,
    *,
    registry: ModelRegistry | None = None,
    endpoints: EndpointReader | None = None,
) -> ChampionNotServing | None:
    """The mismatch of ``model``'s champion and its endpoint's traffic, or None.

    None when the model has no champion, when no endpoint (or more than one) serves its
    versions, or when the champion is deployed there (with traffic or without).

    Args:
        model: The registry model.
        alias: The champion alias.
        registry: The local registry (default: the one under the local root).
        endpoints: The local endpoints (default: those under the local root).
    """
    registry = registry or ModelRegistry()
    try:
        champion = registry.get_version(model, alias).version_id
    except RegistryNotFoundError:
        return None
    served = []
    for endpoint in (endpoints or LocalEndpoints()).list_endpoints():
        mine = [d for d in endpoint.deployed_models if d.model_display_name == model]
        if any(deployed.traffic_percentage > 0 for deployed in mine):
            served.append((endpoint.display_name, mine))
    if len(served) != 1:
        return None
    endpoint_name, deployed_models = served[0]
    if any(deployed.model_version_id == champion for deployed in deployed_models):
        return None
    mine = [deployed for deployed in deployed_models if deployed.traffic_percentage > 0]
    return ChampionNotServing(
        model=model,
        alias=alias,
        champion=champion,
        endpoint=endpoint_name,
        traffic={d.deployed_model_id: d.traffic_percentage for d in mine},
        versions={d.deployed_model_id: d.model_version_id for d in mine},
    )


def restore_serving_champion(
    model: str,
    alias: str = CHAMPION_ALIAS,
    *,
    registry: ModelRegistry | None = None,
    endpoints: EndpointReader | None = None,
) -> ChampionNotServing | None:
    """Moves ``alias`` (and the default version) back to the version the endpoint serves.

    Call it only while no run of ``model`` can be between its register and deploy steps (a
    local run does, under its model's run lock).

    Returns:
        The mismatch it repaired, or None when there was none.
    """
    registry = registry or ModelRegistry()
    found = champion_not_serving(model, alias, registry=registry, endpoints=endpoints)
    if found is not None:
        # The aliases a promotion moves (rules.aliases), in one registry transaction.
        registry.merge_version_aliases(model, found.serving, [alias, DEFAULT_ALIAS])
    return found

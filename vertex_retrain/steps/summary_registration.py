"""The run summary's lines on what the run registered and deployed, and how to roll it back."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vertex_retrain.invocation import command
from vertex_retrain.rules.aliases import CHAMPION_ALIAS
from vertex_retrain.rules.traffic import traffic_text

__all__ = [
    "local_rollback_command",
    "local_rollback_text",
    "registration_lines",
    "rollback_command",
    "rollback_split",
]

# A Vertex endpoint's resource name; a local endpoint's is ``endpoints/<display name>``.
_VERTEX_ENDPOINT = re.compile(
    r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/endpoints/(?P<endpoint>[^/]+)$"
)
_LOCAL_ENDPOINT = "endpoints/"


def rollback_command(endpoint_resource_name: str, split: Mapping[str, object]) -> str:
    """The command that gives an endpoint ``split`` back, or ``""`` where none can be named.

    On Vertex, ``gcloud ai endpoints update`` sets the split (Vertex has no rollback call; the
    split a rollback restores is the deploy's ``previous_traffic``). Locally, the library's
    ``endpoints rollback`` restores the split from before the latest deployment, which is the
    same split.

    Args:
        endpoint_resource_name: The ``google.VertexEndpoint`` artifact's ``resourceName``.
        split: Deployed model id -> percent to restore.
    """
    if not split:
        return ""
    vertex = _VERTEX_ENDPOINT.match(endpoint_resource_name)
    if vertex:
        shares = ",".join(f"{key}={split[key]}" for key in sorted(split))
        return (
            f"gcloud ai endpoints update {vertex['endpoint']} --project={vertex['project']} "
            f"--region={vertex['location']} --traffic-split={shares}"
        )
    name = endpoint_resource_name.removeprefix(_LOCAL_ENDPOINT)
    if endpoint_resource_name.startswith(_LOCAL_ENDPOINT) and name and "/" not in name:
        return local_rollback_command(name)
    return ""


def local_rollback_command(endpoint_display_name: str) -> str:
    """``vertex-retrain endpoints rollback NAME``, as the user invoked the command line."""
    return command("endpoints rollback", endpoint_display_name)


def registration_lines(facts: Mapping[str, Any]) -> list[str]:
    """``**Registered:** version 3 (aliases champion, default)``, ``**Deployment:** 100%
    to deployed model id 2 (version 3)`` (a deployed model's id is never read as a version)
    and, when the deploy replaced a split, ``**Rollback:**`` with that split and its command."""
    lines = []
    registered = facts.get("registered") or {}
    version = str(registered.get("version_id") or "")
    if registered:
        aliases = ", ".join(str(alias) for alias in registered.get("aliases") or []) or "none"
        lines.append(f"**Registered:** version {version or '?'} (aliases {aliases})")
    deployment = facts.get("deployment") or {}
    if deployment:
        # The deployed model this run made serves the version it registered.
        deployed = str(deployment.get("deployed_model_id") or "")
        versions = {deployed: version} if deployed and version else {}
        split = traffic_text(deployment.get("traffic") or {}, versions)
        lines.append(f"**Deployment:** {split or 'no traffic'}")
        lines += _rollback_lines(deployment)
    if facts.get("champion_not_deployed"):
        lines.append(
            f"**Not deployed:** version {facts['champion_not_deployed']} holds the "
            f"{CHAMPION_ALIAS} alias, but the run ended before its deploy finished: the endpoint "
            "still serves the previous version. A local run moves the alias back before it "
            "starts; on Vertex, move it back in the Model Registry."
        )
    return lines


def rollback_split(deployment: Mapping[str, Any]) -> dict[str, int]:
    """The split a rollback of this deployment restores, or ``{}`` when there is none to name.

    Args:
        deployment: ``deploy_model``'s outputs (``traffic``, ``previous_traffic``).

    Returns:
        ``previous_traffic``; empty for the endpoint's first deployment and for one that
        changed no share (a re-run), where rolling back would change nothing.
    """
    previous = dict(deployment.get("previous_traffic") or {})
    return {} if previous == dict(deployment.get("traffic") or {}) else previous


def local_rollback_text(
    deployment: Mapping[str, Any], endpoint: str, versions: Mapping[str, str] | None = None
) -> str:
    """``vertex-retrain endpoints rollback E restores the split before this deployment, 100%
    to deployed model id 1 (version 1)`` for a local run's report, or ``""`` (no split to name).

    Args:
        deployment: ``deploy_model``'s outputs (``traffic``, ``previous_traffic``).
        endpoint: The local endpoint's display name.
        versions: Deployed model id -> the version it serves, where known.
    """
    split = rollback_split(deployment)
    if not split:
        return ""
    return (
        f"{local_rollback_command(endpoint)} restores the split before this deployment, "
        f"{traffic_text(split, versions or {})}"
    )


def _rollback_lines(deployment: Mapping[str, Any]) -> list[str]:
    previous = rollback_split(deployment)
    if not previous:
        return []
    # The deploy never prunes a model of this split, so it can always be restored.
    split = traffic_text(previous, {})
    how = rollback_command(str(deployment.get("endpoint") or ""), previous)
    if not how:
        return [f"**Rollback:** restore the split before this deployment, {split}"]
    return [f"**Rollback:** `{how}` restores the split before this deployment, {split}"]

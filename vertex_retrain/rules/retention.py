"""``keep_last_n``: which deployed models an endpoint keeps after a deployment.

The newest ``keep_last_n`` deployed models always stay. An older one is undeployed only when
it serves no traffic and is not part of the split a rollback would restore, so a rollback
target is never pruned. ``keep_last_n`` is at least 2: the new version and one to roll back to.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

MIN_KEEP_LAST_N = 2


def check_keep_last_n(keep_last_n: object) -> int:
    """Returns ``keep_last_n`` if it is an integer of at least 2.

    Raises:
        ValueError: Not an integer, or below 2; the message says why 2 is the floor.
    """
    if isinstance(keep_last_n, bool) or not isinstance(keep_last_n, int):
        raise ValueError(f"keep_last_n must be an integer of at least 2; got {keep_last_n!r}")
    if keep_last_n < MIN_KEEP_LAST_N:
        raise ValueError(
            f"keep_last_n must be at least {MIN_KEEP_LAST_N} (the new version and a rollback "
            f"target); got {keep_last_n}"
        )
    return keep_last_n


def deployments_to_prune(
    newest_first: Sequence[str],
    traffic: Mapping[str, int],
    *,
    keep_last_n: int,
    protected: Collection[str] = (),
) -> list[str]:
    """The deployed models to undeploy after a deployment, oldest last.

    Args:
        newest_first: Deployed model ids, the newest deployment first.
        traffic: The endpoint's split now (id -> percent; missing ids have none).
        keep_last_n: How many of the newest are never pruned (see :func:`check_keep_last_n`).
        protected: Ids never pruned: the model just deployed and those of the split a
            rollback restores.

    Returns:
        The ids to undeploy, in ``newest_first`` order.
    """
    keep = check_keep_last_n(keep_last_n)
    return [
        deployed_id
        for deployed_id in newest_first[keep:]
        if deployed_id not in protected and traffic.get(deployed_id, 0) <= 0
    ]

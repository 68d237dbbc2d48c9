"""Traffic split arithmetic for endpoints: proportional scaling with exact integer rounding.

A split maps deployed model ids to whole percentages summing to 100 (or is empty). When a
model is deployed with P percent, the others share the remaining 100 - P in proportion to
their current shares; when one is undeployed, the others grow in proportion to fill its
share. This is what Vertex does (`Endpoint._allocate_traffic` / `_unallocate_traffic` in the
SDK).

Rounding rule (largest remainder): each share is scaled exactly with integers and rounded
down; the points still missing go, one each, to the models with the largest remainders, ties
to the model listed first (the earliest deployed). The result always sums to the target, a
model's share moves by less than one point from its exact value, and a model at 0 stays at 0.
The SDK rounds down with floats and hands leftovers out in listing order instead, so the two
can differ by one point on a model when shares do not divide exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

TOTAL = 100


class TrafficSplitError(ValueError):
    """A traffic change that would break the split's rules."""


def check_percentage(value: object, what: str = "traffic_percentage") -> int:
    """Return `value` if it is an int in [0, 100], else raise `TrafficSplitError`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= TOTAL:
        raise TrafficSplitError(f"{what} must be an integer from 0 to 100, got {value!r}")
    return value


def validate_split(split: Mapping[str, int]) -> dict[str, int]:
    """Check that a split has whole percentages summing to 100 (or is empty).

    Returns:
        A plain dict copy.

    Raises:
        TrafficSplitError: A share outside [0, 100] or a total other than 100.
    """
    for key, share in split.items():
        check_percentage(share, f"traffic for deployed model {key!r}")
    total = sum(split.values())
    if split and total != TOTAL:
        raise TrafficSplitError(
            f"traffic split {dict(split)} sums to {total}; the shares of deployed models must "
            "sum to 100"
        )
    return dict(split)


def scale(split: Mapping[str, int], total: int) -> dict[str, int]:
    """Scale shares proportionally so they sum to `total` (largest-remainder rounding).

    Args:
        split: Current shares, in deployment order; at least one must be positive unless
            `total` is 0.
        total: The sum the result must have.

    Returns:
        New shares in the same order.
    """
    current = sum(split.values())
    if total == 0 or not split:
        return dict.fromkeys(split, 0)
    if current == 0:
        raise TrafficSplitError(
            f"cannot scale {dict(split)} to {total}: every share is 0, so there is no "
            "proportion to keep"
        )
    floors = {key: share * total // current for key, share in split.items()}
    remainders = {key: share * total % current for key, share in split.items()}
    missing = total - sum(floors.values())
    order = list(split)
    # sorted() is stable, so equal remainders keep deployment order.
    for key in sorted(order, key=lambda k: -remainders[k])[:missing]:
        floors[key] += 1
    return floors


def allocate(split: Mapping[str, int], new_id: str, percentage: int) -> dict[str, int]:
    """Return the split after deploying `new_id` with `percentage` percent of traffic.

    Raises:
        TrafficSplitError: Invalid percentage, `new_id` already present, or a first model
            deployed with less than 100 percent.
    """
    check_percentage(percentage)
    validate_split(split)
    if new_id in split:
        raise TrafficSplitError(f"deployed model {new_id!r} is already in the split")
    if not split and percentage != TOTAL:
        raise TrafficSplitError(
            f"the endpoint has no deployed models, so the first one must take 100% of the "
            f"traffic, not {percentage}%; pass traffic_percentage=100"
        )
    return {**scale(split, TOTAL - percentage), new_id: percentage}


def reassign(split: Mapping[str, int], deployed_id: str, percentage: int) -> dict[str, int]:
    """Return the split after giving an already deployed model `percentage` of the traffic.

    The others share the rest in proportion to their current shares; when they have none,
    the model keeps everything.
    """
    check_percentage(percentage)
    rest = {key: share for key, share in split.items() if key != deployed_id}
    if sum(rest.values()) == 0:
        return {**{key: 0 for key in rest}, deployed_id: TOTAL}
    return {**scale(rest, TOTAL - percentage), deployed_id: percentage}


def unallocate(split: Mapping[str, int], removed_id: str) -> dict[str, int]:
    """Return the split after undeploying `removed_id`; the others fill its share.

    Raises:
        TrafficSplitError: `removed_id` is unknown, or it holds 100% while other models are
            deployed at 0% (Vertex refuses this too: nobody would get the traffic).
    """
    validate_split(split)
    if removed_id not in split:
        raise TrafficSplitError(
            f"deployed model {removed_id!r} is not in the split; deployed: {sorted(split)}"
        )
    rest = {key: share for key, share in split.items() if key != removed_id}
    if rest and sum(rest.values()) == 0:
        raise TrafficSplitError(
            f"undeploying deployed model {removed_id!r} would leave the remaining traffic "
            f"split at 0% ({rest}); give another deployed model traffic first "
            "(set_traffic_split) or undeploy the others first"
        )
    return scale(rest, TOTAL) if rest else {}


def serving_shares(split: Mapping[str, int]) -> dict[str, int]:
    """The models of a split that receive traffic (zero shares dropped), as plain ints.

    Vertex lists only these in an endpoint's ``trafficSplit``; the local endpoint lists every
    deployed model. Comparing and restoring splits uses this form on both backends.
    """
    return {str(key): int(share) for key, share in split.items() if int(share) > 0}


def largest_share(split: Mapping[str, int]) -> str:
    """The deployed model with the largest share (ties: the larger id), or ``""`` if none."""
    return max(split, key=lambda key: (split[key], key)) if split else ""


def traffic_text(split: Mapping[str, object], versions: Mapping[str, str]) -> str:
    """``90% to deployed model id 7 (version 3), 10% to deployed model id 6``.

    A deployed model's id and a model version's number are both small integers, often side
    by side: each is named for what it is, largest share first.

    Args:
        split: Deployed model id -> percent.
        versions: Deployed model id -> the model version it serves, where known.
    """
    parts = []
    for key, share in sorted(split.items(), key=lambda item: (-float(str(item[1])), item[0])):
        serves = f" (version {versions[key]})" if versions.get(key) else ""
        parts.append(f"{share}% to deployed model id {key}{serves}")
    return ", ".join(parts)

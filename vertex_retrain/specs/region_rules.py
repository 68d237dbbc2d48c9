"""Whether a job's machines and accelerators are offered in the region it runs in.

The evidence is the price book (``prices.yaml``): a machine type or accelerator with a Compute
Engine list price recorded for a region (source S9, the Cloud Billing Catalog of 2026-07-30)
is sold there. Vertex's own table of training accelerators per region could not be read for
this catalog, so that a Compute Engine offer means a Vertex training offer is an assumption;
and a missing price proves nothing (the book leaves figures empty where no source was found).
Both therefore give warnings, never errors: an item with no recorded price in the region, or a
region the book does not cover.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from vertex_retrain.specs.payload_io import mapping
from vertex_retrain.specs.prices import PriceBook, load_prices
from vertex_retrain.specs.problems import Problem, warning

__all__ = ["availability_problems"]


def _machine_specs(payload: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Yields each pool's machineSpec with its path, from the job spec or the trial job spec."""
    for key in ("jobSpec", "trialJobSpec"):
        spec = mapping(payload.get(key))
        if spec:
            pools = spec.get("workerPoolSpecs")
            for index, raw in enumerate(pools if isinstance(pools, list) else []):
                path = f"{key}.workerPoolSpecs[{index}].machineSpec"
                yield path, mapping(mapping(raw).get("machineSpec"))
            return


def availability_problems(
    payload: Mapping[str, Any], region: str, *, prices: PriceBook | None = None
) -> list[Problem]:
    """Warnings for machines and accelerators not known to be offered in ``region``.

    Args:
        payload: A CustomJob or HyperparameterTuningJob in REST JSON form.
        region: The Vertex AI region.
        prices: The price book (default: the shipped one).

    Returns:
        One warning per pool item without a recorded offer there, or one for the region.
    """
    prices = prices or load_prices()
    if region not in prices.locations():
        return [
            warning(
                "location",
                region,
                "No machine or accelerator offers are recorded for this region, so their "
                "availability there is not checked.",
                [f"a recorded region: {', '.join(prices.locations())}"],
                code="region-unknown",
            )
        ]
    problems: list[Problem] = []
    for path, machine_spec in _machine_specs(payload):
        machine = machine_spec.get("machineType")
        if not isinstance(machine, str) or not machine:
            continue
        offered = prices.machine(region, machine).on_demand.amount is not None
        if not offered:
            problems.append(_unconfirmed(f"{path}.machineType", machine, region, prices))
        accelerator = machine_spec.get("acceleratorType")
        if (
            isinstance(accelerator, str)
            and accelerator
            and not prices.covers_accelerators(machine)
            and prices.accelerator(region, accelerator).on_demand.amount is None
        ):
            problems.append(_unconfirmed(f"{path}.acceleratorType", accelerator, region, prices))
    return problems


def _unconfirmed(field: str, item: str, region: str, prices: PriceBook) -> Problem:
    elsewhere = [
        other
        for other in prices.locations()
        if other != region
        and (
            prices.machine(other, item).on_demand.amount is not None
            or prices.accelerator(other, item).on_demand.amount is not None
        )
    ]
    return warning(
        field,
        item,
        f"No offer of {item} in {region} is recorded (prices.yaml, Compute Engine list prices "
        f"of {prices.assembled_on}); it may not be available there.",
        [f"{item} in {', '.join(elsewhere)}"] if elsewhere else [],
        code="region-availability",
    )

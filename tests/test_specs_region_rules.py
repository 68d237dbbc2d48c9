"""Region availability warnings: what is said, where, and which regions are suggested.

The price book here is built by hand (four regions, one rare machine and one rare accelerator)
so that each warning's alternatives can be stated exactly: the regions that record an offer of
the item, and no other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from vertex_retrain.specs.prices import ItemPrice, PriceBook, PriceFigure
from vertex_retrain.specs.region_rules import availability_problems

_OFFER = ItemPrice(on_demand=PriceFigure(1.0, "quoted", source="S9", as_of="2026-07-30"))
_REGIONS = ("r-east", "r-north", "r-south", "r-west")
# The rare items are offered in r-north and r-west; r-south records other items only.
_MACHINES = {
    "r-east": ["n1-standard-8", "a3-highgpu-8g"],
    "r-north": ["n1-standard-8", "rare-machine-4"],
    "r-south": ["n1-standard-8"],
    "r-west": ["n1-standard-8", "rare-machine-4"],
}
_ACCELERATORS = {
    "r-east": ["NVIDIA_TESLA_T4"],
    "r-north": ["NVIDIA_TESLA_T4", "RARE_GPU"],
    "r-south": ["NVIDIA_TESLA_T4"],
    "r-west": ["RARE_GPU"],
}


def _table(items: Mapping[str, list[str]]) -> dict[str, dict[str, ItemPrice]]:
    return {region: {name: _OFFER for name in items.get(region, [])} for region in _REGIONS}


BOOK = PriceBook(
    version=1,
    assembled_on="2026-07-30",
    currency="USD",
    default_location="r-east",
    multiplier=1.15,
    rule="",
    sources={},
    machines=_table(_MACHINES),
    accelerators=_table(_ACCELERATORS),
    covering=("a3-*",),
    covered=(),
)


def _pool(machine: str, accelerator: str | None = None) -> dict[str, Any]:
    spec = {"machineType": machine}
    if accelerator:
        spec["acceleratorType"] = accelerator
    return {"machineSpec": spec, "replicaCount": "1"}


def _job(*pools: dict[str, Any], key: str = "jobSpec") -> dict[str, Any]:
    return {"displayName": "case", key: {"workerPoolSpecs": list(pools)}}


def _message(item: str, region: str) -> str:
    return (
        f"No offer of {item} in {region} is recorded (prices.yaml, Compute Engine list prices "
        "of 2026-07-30); it may not be available there."
    )


def test_availability_names_the_regions_that_offer_a_missing_accelerator() -> None:
    (problem,) = availability_problems(
        _job(_pool("n1-standard-8", "RARE_GPU")), "r-east", prices=BOOK
    )
    assert problem.severity == "warning"
    assert problem.field == "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType"
    assert problem.value == "RARE_GPU"
    assert problem.message == _message("RARE_GPU", "r-east")
    # r-south records prices, but none for RARE_GPU: it is not suggested.
    assert problem.alternatives == ("RARE_GPU in r-north, r-west",)
    assert problem.code == "region-availability"


def test_availability_names_the_regions_that_offer_a_missing_machine() -> None:
    (problem,) = availability_problems(_job(_pool("rare-machine-4")), "r-south", prices=BOOK)
    assert problem.field == "jobSpec.workerPoolSpecs[0].machineSpec.machineType"
    assert problem.value == "rare-machine-4"
    assert problem.message == _message("rare-machine-4", "r-south")
    assert problem.alternatives == ("rare-machine-4 in r-north, r-west",)


def test_availability_suggests_no_region_for_an_item_offered_nowhere() -> None:
    (problem,) = availability_problems(_job(_pool("made-up-machine")), "r-east", prices=BOOK)
    assert problem.value == "made-up-machine"
    assert problem.alternatives == ()


def test_availability_of_offered_items_is_silent() -> None:
    payload = _job(_pool("n1-standard-8", "NVIDIA_TESLA_T4"))
    assert availability_problems(payload, "r-north", prices=BOOK) == []


def test_availability_leaves_out_the_accelerator_a_machine_price_covers() -> None:
    # a3-* figures include their GPUs: no separate offer of the GPU is looked for.
    payload = _job(_pool("a3-highgpu-8g", "RARE_GPU"))
    assert availability_problems(payload, "r-east", prices=BOOK) == []


def test_availability_reads_the_trial_job_spec_of_a_tuning_job() -> None:
    payload = _job(_pool("n1-standard-8", "RARE_GPU"), key="trialJobSpec")
    (problem,) = availability_problems(payload, "r-east", prices=BOOK)
    assert problem.field == "trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorType"


def test_availability_skips_an_empty_pool_and_reads_the_next() -> None:
    payload = _job({}, _pool("rare-machine-4"))
    (problem,) = availability_problems(payload, "r-east", prices=BOOK)
    assert problem.field == "jobSpec.workerPoolSpecs[1].machineSpec.machineType"


def test_availability_in_an_unrecorded_region_is_one_warning_listing_the_recorded_ones() -> None:
    (problem,) = availability_problems(_job(_pool("rare-machine-4")), "me-west1", prices=BOOK)
    assert (problem.severity, problem.field, problem.value) == ("warning", "location", "me-west1")
    assert problem.message == (
        "No machine or accelerator offers are recorded for this region, so their availability "
        "there is not checked."
    )
    assert problem.code == "region-unknown"
    assert problem.alternatives == ("a recorded region: r-east, r-north, r-south, r-west",)


@pytest.mark.parametrize("pools", [5, None, "n1-standard-8"])
def test_availability_without_a_pool_list_is_silent(pools: Any) -> None:
    payload = {"displayName": "case", "jobSpec": {"workerPoolSpecs": pools}}
    assert availability_problems(payload, "r-east", prices=BOOK) == []


@pytest.mark.parametrize("machine", [5, "", None])
def test_availability_skips_a_machine_type_that_is_no_name(machine: Any) -> None:
    # The type rule reports it; no offer is looked up for it.
    payload = _job({"machineSpec": {"machineType": machine, "acceleratorType": "RARE_GPU"}})
    assert availability_problems(payload, "r-east", prices=BOOK) == []

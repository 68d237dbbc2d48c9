"""The price book: complete per region, every figure labelled, derived figures reproducible."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vertex_retrain.cli.main import PRICE_LOCATIONS
from vertex_retrain.specs import estimate_job_cost, load_catalog, load_prices
from vertex_retrain.specs.price_lines import pool_lines, with_spot_fallback
from vertex_retrain.specs.prices import DEFAULT_PRICES_PATH, TIERS

RAW = yaml.safe_load(DEFAULT_PRICES_PATH.read_text(encoding="utf-8"))


def test_price_book_lists_every_catalog_machine_and_accelerator_in_every_region() -> None:
    catalog, book = load_catalog(), load_prices()
    assert book.locations() == ("asia-east1", "europe-west4", "us-central1")
    for region in book.locations():
        assert set(book.machines[region]) == set(catalog.machines), region
        assert set(book.accelerators[region]) == set(catalog.accelerator_enum), region


def test_cli_help_names_the_regions_of_the_price_book() -> None:
    assert load_prices().locations() == PRICE_LOCATIONS


def test_price_figures_are_labelled_with_source_and_date() -> None:
    book = load_prices()
    quoted = book.machine("us-central1", "n1-standard-4").on_demand
    assert (quoted.label, quoted.amount, quoted.as_of) == ("quoted", 0.21849885, "2026-10-07")
    assert quoted.source == "S1, S2, S3, S4"
    derived = book.machine("europe-west4", "n1-standard-8").on_demand
    assert (derived.label, derived.source, derived.as_of) == ("derived", "S9 x 1.15", "2026-07-30")
    spot = book.machine("us-central1", "n1-standard-4").spot
    assert spot.label == "derived, assumed" and "Spot" in spot.assumption
    for region in book.locations():
        unknown = book.machine(region, "a4-highgpu-8g")
        assert [unknown.tier(t).label for t in TIERS] == ["unknown", "unknown"]
        assert unknown.on_demand.amount is None and unknown.spot.amount is None


@pytest.mark.parametrize("region", sorted(RAW["regions"]))
def test_derived_figures_are_compute_engine_times_the_multiplier(region: str) -> None:
    book = load_prices()
    data = RAW["regions"][region]
    for kind, lookup in (("machines", book.machine), ("accelerators", book.accelerator)):
        for name, entry in data[kind].items():
            compute = (entry or {}).get("compute_engine") or {}
            price = lookup(region, name)
            for tier in TIERS:
                figure = price.tier(tier)
                if figure.basis != "derived" or (tier == "on_demand" and "vertex" in entry):
                    continue
                assert figure.amount == pytest.approx(compute[tier] * 1.15), (name, tier)
                assert figure.source == f"{compute['source']} x 1.15"
                assert bool(figure.assumption) == (tier == "spot" or "assume" in entry)


def test_every_spot_and_tpu_derivation_is_marked_an_assumption() -> None:
    book = load_prices()
    for region in book.locations():
        for table in (book.machines[region], book.accelerators[region]):
            for name, price in table.items():
                if price.spot.basis == "derived":
                    assert price.spot.label == "derived, assumed", (region, name)
                if name.startswith(("ct5lp-", "TPU_")) and price.on_demand.basis == "derived":
                    assert "TPU" in price.on_demand.assumption, (region, name)


@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
def test_a3_figures_match_the_quoted_vertex_unit_prices(gpus: int) -> None:
    # S5's quoted Vertex SKUs: A3 core per vCPU-hour, A3 RAM per GiB-hour, H100 per GPU-hour.
    machine = load_catalog().machine(f"a3-highgpu-{gpus}g")
    assert machine is not None and machine.vcpus and machine.memory_gb
    book = load_prices()
    h100 = book.accelerator("us-central1", "NVIDIA_H100_80GB").on_demand
    assert h100.label == "quoted" and h100.amount == 11.2660332
    figure = book.machine("us-central1", f"a3-highgpu-{gpus}g").on_demand
    expected = machine.vcpus * 0.0293227 + machine.memory_gb * 0.0025534 + gpus * h100.amount
    assert figure.amount == pytest.approx(expected, abs=1e-6)
    assert figure.label == ("quoted" if gpus == 8 else "derived") and figure.source == "S5"


def _pool(machine: str, accelerator: str = "", count: int = 0, **extra: object) -> dict:
    spec: dict[str, object] = {"machineType": machine, **extra}
    if accelerator:
        spec.update(acceleratorType=accelerator, acceleratorCount=count)
    return {"machineSpec": spec, "replicaCount": 1, "containerSpec": {"imageUri": "i"}}


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        (
            _pool("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1),
            [("a2-highgpu-1g", 1, "1 NVIDIA_TESLA_A100")],
        ),
        (
            _pool("n1-standard-8", "NVIDIA_TESLA_V100", 2),
            [("n1-standard-8", 1, ""), ("NVIDIA_TESLA_V100", 2, "")],
        ),
        (
            _pool("ct5lp-hightpu-4t", "TPU_V5_LITEPOD", 4, tpuTopology="4x4"),
            [("ct5lp-hightpu-4t", 4, "4 TPU v5e chips")],
        ),
        (_pool("cloud-tpu", "TPU_V3", 8), [("TPU_V3", 8, "its cloud-tpu host")]),
        (_pool("e2-standard-8"), [("e2-standard-8", 1, "")]),
    ],
)
def test_pool_lines_price_what_each_machine_holds(
    pool: dict, expected: list[tuple[str, int, str]]
) -> None:
    lines = pool_lines(pool, location="us-central1", book=load_prices(), catalog=load_catalog())
    assert [(line.item, line.units, line.includes) for line in lines] == expected


def test_spot_fallback_prices_only_unknown_spot_and_says_so() -> None:
    book = load_prices().with_overrides({"n1-standard-8": {"spot": None}})
    lines = pool_lines(
        _pool("n1-standard-8", "NVIDIA_TESLA_T4", 1),
        location="us-central1",
        book=book,
        catalog=load_catalog(),
    )
    assert lines[0].spot.label == "unknown"
    machine, gpu = with_spot_fallback(lines, 0.6)
    assert machine.spot.amount == pytest.approx(0.6 * (machine.on_demand.amount or 0))
    assert (
        machine.spot.label == "derived, assumed" and "60% of on-demand" in machine.spot.assumption
    )
    assert gpu.spot == lines[1].spot  # a recorded Spot price is kept


def test_estimate_in_a_region_without_prices_is_unknown_not_guessed() -> None:
    payload = {"workerPoolSpecs": [_pool("n1-standard-8", "NVIDIA_TESLA_T4", 1)]}
    estimate = estimate_job_cost(payload, 2, location="us-east1")
    assert estimate.on_demand_cost is None and estimate.spot_cost is None
    assert all(line.on_demand.label == "unknown" for line in estimate.lines)
    assert any("no prices recorded for us-east1" in note for note in estimate.notes)


def test_estimate_to_dict_carries_each_line_label_source_and_date() -> None:
    payload = {"workerPoolSpecs": [_pool("n1-standard-4", "NVIDIA_TESLA_T4", 1)]}
    data = estimate_job_cost(payload, 1).to_dict()
    first = data["lines"][0]
    assert first["item"] == "n1-standard-4"
    assert first["on_demand"]["label"] == "quoted" and first["on_demand"]["as_of"] == "2026-10-07"
    assert first["spot"]["label"] == "derived, assumed" and first["spot"]["assumption"]
    assert {"S1", "S9", "x 1.15"} <= set(data["sources"])


def test_load_prices_reports_malformed_file(tmp_path: Path) -> None:
    bad = tmp_path / "prices.yaml"
    bad.write_text("version: 1\nregions: {}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="malformed"):
        load_prices(bad)
    with pytest.raises(ValueError, match="cannot read"):
        load_prices(tmp_path / "missing.yaml")
    assert load_prices() is load_prices(DEFAULT_PRICES_PATH)

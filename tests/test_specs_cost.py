"""Cost model: the source article's worked example, job payloads and pipeline sums."""

from __future__ import annotations

import pytest

from vertex_retrain.specs import (
    ContainerCode,
    CustomJobSpec,
    Machine,
    WorkerPool,
    estimate_job_cost,
    estimate_pipeline_cost,
    estimate_scaling_cost,
    load_prices,
)


def test_estimate_scaling_cost_reproduces_worked_example() -> None:
    one = estimate_scaling_cost(10, 1, 100)
    four = estimate_scaling_cost(10, 4, 100, efficiency=0.85, spot_price_fraction=0.6)
    sixteen = estimate_scaling_cost(10, 16, 100, efficiency=0.60)
    assert one.wall_hours == 10 and one.on_demand_cost == 1000
    assert round(four.wall_hours, 2) == 2.94
    assert round(four.on_demand_cost or 0) == 1176
    assert round(four.spot_cost or 0) == 706
    assert round(sixteen.wall_hours, 2) == 1.04
    # Money grows by 1/efficiency (18% more for 3.4x speed, as the article says).
    assert round((four.on_demand_cost or 0) / 1000 - 1, 2) == 0.18
    assert round(10 / four.wall_hours, 1) == 3.4


def test_cost_estimate_describe_states_assumptions() -> None:
    text = estimate_scaling_cost(10, 4, 100, efficiency=0.85, spot_price_fraction=0.6).describe()
    assert "scaling efficiency assumed: 85% (given)" in text
    assert "10 h / (4 × 0.85) = 2.94 h" in text
    assert "on-demand: 1,176" in text and "Spot: 706" in text
    default = estimate_scaling_cost(10, 16, 100).describe()
    assert "60%" in default and "default from the source article" in default


def test_estimate_scaling_cost_refuses_bad_efficiency() -> None:
    with pytest.raises(ValueError, match="efficiency"):
        estimate_scaling_cost(10, 4, 100, efficiency=1.5)


def _t4_job(count: int) -> dict[str, object]:
    pool = WorkerPool(
        Machine("n1-standard-16", "NVIDIA_TESLA_T4", count),
        ContainerCode("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"),
    )
    return CustomJobSpec("drinks", pool, distribution="ddp").unvalidated_payload()


def test_estimate_job_cost_reproduces_worked_example_with_given_prices() -> None:
    teaching = load_prices().with_overrides(
        {
            "n1-standard-16": {"on_demand": 0.0, "spot": 0.0},
            "NVIDIA_TESLA_T4": {"on_demand": 100.0, "spot": 60.0},
        }
    )
    estimate = estimate_job_cost(_t4_job(4), 10, efficiency=0.85, prices=teaching)
    assert estimate.gpus == 4
    assert round(estimate.on_demand_cost or 0) == 1176
    assert round(estimate.spot_cost or 0) == 706
    assert {line.on_demand.label for line in estimate.lines} == {"given"}


def test_estimate_job_cost_prices_each_line_from_the_book() -> None:
    book = load_prices()
    real = estimate_job_cost(_t4_job(1), 2)
    machine = book.machine("us-central1", "n1-standard-16")
    gpu = book.accelerator("us-central1", "NVIDIA_TESLA_T4")
    assert [(line.item, line.units) for line in real.lines] == [
        ("n1-standard-16", 1),
        ("NVIDIA_TESLA_T4", 1),
    ]
    assert real.on_demand_cost == pytest.approx(
        2 * ((machine.on_demand.amount or 0) + (gpu.on_demand.amount or 0))
    )
    assert real.spot_cost == pytest.approx(
        2 * ((machine.spot.amount or 0) + (gpu.spot.amount or 0))
    )
    assert real.location == "us-central1" and real.currency == "USD"


def test_estimate_job_cost_reports_unknown_prices() -> None:
    payload = CustomJobSpec(
        "a3",
        WorkerPool(
            Machine("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8), ContainerCode("nvidia/cuda:12")
        ),
        distribution="ddp",
    ).unvalidated_payload()
    estimate = estimate_job_cost(payload, 80)
    assert estimate.on_demand_cost is None and estimate.spot_cost is None
    text = estimate.describe()
    assert "a3-megagpu-8g on-demand" in text
    row = next(t for t in text.splitlines() if t.strip().startswith("a3-megagpu-8g +"))
    assert row.split()[-4:] == ["unknown", "unknown", "unknown", "unknown"]
    assert "on-demand: unknown" in text and "Spot: unknown" in text


def test_estimate_pipeline_cost_sums_steps() -> None:
    steps = [
        estimate_scaling_cost(10, 4, 100, efficiency=0.85, spot_price_fraction=0.6),
        estimate_scaling_cost(1, 1, 100, spot_price_fraction=0.6),
    ]
    run = estimate_pipeline_cost(steps)
    assert run.on_demand_cost == pytest.approx(sum(s.on_demand_cost or 0 for s in steps))
    assert run.spot_cost == pytest.approx(0.6 * (run.on_demand_cost or 0))
    assert run.gpu_hours == pytest.approx(10 / 0.85 + 1)
    assert "pipeline run total" in run.describe()
    assert estimate_pipeline_cost([steps[0], estimate_scaling_cost(1, 1, 100)]).spot_cost is None


def test_price_book_with_overrides_refuses_unknown_names_and_negative_prices() -> None:
    book = load_prices()
    with pytest.raises(ValueError, match="not a machine type or accelerator"):
        book.with_overrides({"n9-huge": {"on_demand": 1.0}})
    with pytest.raises(ValueError, match=">= 0"):
        book.with_overrides({"NVIDIA_TESLA_T4": {"on_demand": -1.0}})
    with pytest.raises(ValueError, match="unknown keys"):
        book.with_overrides({"NVIDIA_TESLA_T4": {"preemptible": 1.0}})
    with pytest.raises(ValueError, match="known: asia-east1"):
        book.with_overrides({"NVIDIA_TESLA_T4": {"on_demand": 1.0}}, location="mars-north1")
    assert book.accelerator("us-central1", "NVIDIA_TESLA_T4").on_demand.amount != 100.0

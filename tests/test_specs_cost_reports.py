"""What a cost estimate shows people and writes as JSON, from price lines built here (no
price book): the line table, the legend, the Spot fallback, a job's and a pipeline's report."""

from __future__ import annotations

import pytest

from vertex_retrain.specs.cost import (
    CostEstimate,
    estimate_pipeline_cost,
    estimate_scaling_cost,
    format_money,
)
from vertex_retrain.specs.price_lines import (
    LABELS,
    PriceLine,
    figure_notes,
    format_lines,
    price_legend,
    with_spot_fallback,
)
from vertex_retrain.specs.prices import UNKNOWN, PriceFigure

QUOTED = PriceFigure(0.5, "quoted", "S1", "2026-01-02")
ASSUMED = PriceFigure(0.125, "derived", "S2 x 1.15", "undated", assumption="Spot floats.")
NOTED = PriceFigure(2.0, "derived", "S3 x 1.15", "2026-02-03", note="One source.")
MACHINE = PriceLine("n1-standard-8", 1, QUOTED, ASSUMED)
GPU = PriceLine("NVIDIA_TESLA_T4", 2, NOTED, UNKNOWN)
BUNDLE = PriceLine("a2-highgpu-1g", 3, NOTED, ASSUMED, includes="1 NVIDIA_TESLA_A100")


def test_format_lines_aligns_names_right_aligns_numbers_and_cites_each_figure() -> None:
    assert format_lines([MACHINE, GPU, BUNDLE], indent="  ") == [
        "  item                                 units  on-demand/h  on-demand basis"
        "                  Spot/h  Spot basis",
        "  n1-standard-8                            1       0.5000  quoted: S1, 2026-01-02"
        "           0.1250  derived, assumed: S2 x 1.15, undated",
        "  NVIDIA_TESLA_T4                          2       2.0000  derived: S3 x 1.15, "
        "2026-02-03  unknown  unknown",
        "  a2-highgpu-1g + 1 NVIDIA_TESLA_A100      3       2.0000  derived: S3 x 1.15, "
        "2026-02-03   0.1250  derived, assumed: S2 x 1.15, undated",
    ]
    assert format_lines([MACHINE])[0].startswith("    item")  # the default indent


def test_figure_notes_name_each_figure_once_per_text() -> None:
    assert figure_notes([MACHINE, GPU, BUNDLE, MACHINE]) == [
        "assumed: Spot floats. (n1-standard-8 Spot, a2-highgpu-1g Spot)",
        "note: One source. (NVIDIA_TESLA_T4 on-demand, a2-highgpu-1g on-demand)",
    ]
    assert figure_notes([PriceLine("x", 1, QUOTED, QUOTED)]) == []


def test_price_legend_says_the_labels_the_notes_then_each_source_once() -> None:
    sources = [("S1", "a book"), ("S2", "a list"), ("S1", "a book")]
    assert price_legend([MACHINE], sources) == [
        f"  {LABELS}",
        "  assumed: Spot floats. (n1-standard-8 Spot)",
        "  S1: a book",
        "  S2: a list",
    ]
    assert price_legend([], sources) == []


def test_with_spot_fallback_prices_only_unknown_spot_figures_and_labels_them() -> None:
    unknown_both = PriceLine("tpu", 1, UNKNOWN, UNKNOWN)
    machine, gpu, tpu = with_spot_fallback([MACHINE, GPU, unknown_both], 0.25)
    assert machine == MACHINE and tpu == unknown_both  # known Spot; no on-demand to start from
    assert gpu.on_demand == NOTED
    assert gpu.spot == PriceFigure(
        0.5,
        "derived",
        "S3 x 1.15 on-demand x 0.25",
        "2026-02-03",
        assumption="Spot taken as 25% of on-demand: an explicit fallback, since no Spot price "
        "is recorded.",
    )


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.01])
def test_with_spot_fallback_refuses_a_fraction_outside_zero_to_one(fraction: float) -> None:
    with pytest.raises(ValueError, match=rf"must be in \(0, 1\], got {fraction}"):
        with_spot_fallback([GPU], fraction)


def test_with_spot_fallback_takes_the_whole_on_demand_price_at_one() -> None:
    (gpu,) = with_spot_fallback([GPU], 1)
    assert gpu.spot.amount == NOTED.amount


def _estimate(gpus: int, lines: tuple[PriceLine, ...] = (), **changes: object) -> CostEstimate:
    values: dict[str, object] = {
        "label": "train", "gpus": gpus, "baseline_hours": 3.0, "efficiency": 0.75,
        "efficiency_source": "given", "wall_hours": 2.0, "gpu_hours": 2.0 * gpus,
        "hourly_on_demand": 5.0, "hourly_spot": 1.5, "on_demand_cost": 10.0, "spot_cost": 3.0,
        "currency": "EUR", "notes": ("n1",), "location": "europe-west4", "lines": lines,
        "sources": (("S1", "a book"),),
    }  # fmt: skip
    values.update(changes)
    return CostEstimate(**values)  # type: ignore[arg-type]


def test_cost_estimate_describe_one_gpu_shows_no_scaling() -> None:
    assert _estimate(1).describe() == "\n".join(
        [
            "train: 1 GPU(s)",
            "  wall time = 2.00 h (no scaling assumed)",
            "  GPU-hours: 2.00",
            "  on-demand: 10.00 EUR",
            "  Spot: 3.00 EUR",
            "  note: n1",
        ]
    )


def test_cost_estimate_describe_several_gpus_shows_scaling_lines_and_legend() -> None:
    text = _estimate(2, (MACHINE,)).describe()
    assert text.splitlines() == [
        "train: 2 GPU(s)",
        "  scaling efficiency assumed: 75% (given)",
        "  wall time = 3 h / (2 × 0.75) = 2.00 h",
        "  GPU-hours: 4.00",
        "  unit prices in europe-west4, EUR per hour:",
        *format_lines([MACHINE]),
        "  on-demand: 10.00 EUR",
        "  Spot: 3.00 EUR",
        "  note: n1",
        *price_legend([MACHINE], [("S1", "a book")]),
    ]
    assert _estimate(2, (MACHINE,)).describe(legend=False) == "\n".join(text.splitlines()[:10])


def test_cost_estimate_to_dict_holds_every_attribute() -> None:
    assert _estimate(2, (MACHINE,), spot_cost=None).to_dict() == {
        "label": "train", "location": "europe-west4", "currency": "EUR", "gpus": 2,
        "baseline_hours": 3.0, "efficiency": 0.75, "efficiency_source": "given",
        "wall_hours": 2.0, "gpu_hours": 4.0, "hourly_on_demand": 5.0, "hourly_spot": 1.5,
        "on_demand_cost": 10.0, "spot_cost": None, "lines": [MACHINE.to_dict()],
        "notes": ["n1"], "sources": {"S1": "a book"},
    }  # fmt: skip


def test_estimate_scaling_cost_prices_every_gpu_and_spot_as_a_fraction() -> None:
    estimate = estimate_scaling_cost(
        2.0, 4, 1.5, efficiency=0.5, spot_price_fraction=0.3, label="x", currency="USD"
    )
    assert (estimate.label, estimate.gpus, estimate.currency) == ("x", 4, "USD")
    assert (estimate.efficiency, estimate.efficiency_source) == (0.5, "given")
    assert estimate.wall_hours == pytest.approx(1.0)  # 2 h / (4 x 0.5)
    assert estimate.gpu_hours == pytest.approx(4.0)
    assert estimate.hourly_on_demand == pytest.approx(6.0)
    assert estimate.hourly_spot == pytest.approx(1.8)
    assert estimate.on_demand_cost == pytest.approx(6.0)
    assert estimate.spot_cost == pytest.approx(1.8)
    assert estimate.notes == ("Spot priced at 30% of on-demand",)
    assert estimate.baseline_hours == 2.0


def test_estimate_scaling_cost_without_spot_and_with_the_default_efficiency() -> None:
    estimate = estimate_scaling_cost(1.0, 0, 2.0)
    assert estimate.hourly_on_demand == 2.0  # no GPU: one machine's price
    assert estimate.spot_cost is None and estimate.hourly_spot is None and estimate.notes == ()
    assert estimate.efficiency_source.startswith("default from the source article")
    assert (estimate.label, estimate.currency) == ("job", "")


def test_pipeline_cost_estimate_sums_steps_and_shows_the_legend_once() -> None:
    first = _estimate(1, (MACHINE,))
    second = _estimate(2, (GPU,), label="evaluate", wall_hours=0.5, on_demand_cost=2.5,
                       spot_cost=0.75, sources=(("S3", "a sheet"),))  # fmt: skip
    pipeline = estimate_pipeline_cost([first, second], label="week")
    assert pipeline.to_dict() == {
        "label": "week",
        "steps": [first.to_dict(), second.to_dict()],
        "wall_hours": 2.5,
        "gpu_hours": 6.0,
        "on_demand_cost": 12.5,
        "spot_cost": 3.75,
        "currency": "EUR",
    }
    assert pipeline.describe().splitlines() == [
        *first.describe(legend=False).splitlines(),
        *second.describe(legend=False).splitlines(),
        "week total: 2.50 h, 6.00 GPU-hours, on-demand 12.50 EUR, Spot 3.75 EUR",
        "prices:",
        *price_legend([MACHINE, GPU], [("S1", "a book"), ("S3", "a sheet")]),
    ]


def test_pipeline_cost_estimate_unknown_when_any_step_is_and_empty_without_steps() -> None:
    pipeline = estimate_pipeline_cost([_estimate(1), _estimate(1, spot_cost=None)])
    assert pipeline.label == "pipeline run"
    assert pipeline.spot_cost is None and pipeline.on_demand_cost == 20.0
    assert "Spot unknown" in pipeline.describe()
    assert "prices:" not in pipeline.describe()  # no lines, no legend
    empty = estimate_pipeline_cost([], label="none")
    assert empty.to_dict()["currency"] == "" and empty.on_demand_cost == 0
    assert empty.describe() == "none total: 0.00 h, 0.00 GPU-hours, on-demand 0.00, Spot 0.00"


@pytest.mark.parametrize(
    ("amount", "shown"),
    [(None, "unknown"), (99.994, "99.99 USD"), (99.996, "100.00 USD"), (100, "100 USD"),
     (1175.6, "1,176 USD")],
)  # fmt: skip
def test_format_money_two_decimals_below_a_hundred(amount: float | None, shown: str) -> None:
    assert format_money(amount, "USD") == shown


def test_price_line_to_dict_holds_every_attribute() -> None:
    assert BUNDLE.to_dict() == {
        "item": "a2-highgpu-1g",
        "units": 3,
        "includes": "1 NVIDIA_TESLA_A100",
        "on_demand": NOTED.to_dict(),
        "spot": ASSUMED.to_dict(),
    }


@pytest.mark.parametrize(
    ("machine", "carried"),
    [
        ("g2-standard-8", "1 NVIDIA_L4"),
        ("ct5lp-hightpu-4t", "4 TPU v5e chips"),
        ("cloud-tpu", "its accelerators"),  # the catalog records no chips per host for it
    ],
)
def test_pool_lines_say_what_a_machine_s_price_covers(machine: str, carried: str) -> None:
    from vertex_retrain.specs.machine_catalog import load_catalog
    from vertex_retrain.specs.price_lines import _carried

    assert _carried(machine, load_catalog()) == carried


@pytest.mark.parametrize(
    ("gpus", "efficiency"), [(0, 1.0), (1, 1.0), (2, 0.85), (8, 0.85), (9, 0.60)]
)
def test_default_efficiency_steps_down_after_one_and_after_eight_gpus(
    gpus: int, efficiency: float
) -> None:
    from vertex_retrain.specs.cost import default_efficiency

    assert default_efficiency(gpus) == efficiency

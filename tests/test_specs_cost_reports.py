"""What a cost estimate shows people and writes as JSON, from price lines built here (no
price book): the line table, the legend, the Spot fallback, a job's and a pipeline's report."""

from __future__ import annotations

from pathlib import Path

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


def test_merge_lines_adds_units_of_the_same_item_priced_the_same_way() -> None:
    twin = PriceLine("n1-standard-8", 2, QUOTED, ASSUMED)
    other_price = PriceLine("n1-standard-8", 4, NOTED, ASSUMED)
    from vertex_retrain.specs.price_lines import merge_lines

    assert merge_lines([MACHINE, GPU, twin, other_price, GPU]) == (
        PriceLine("n1-standard-8", 3, QUOTED, ASSUMED),
        PriceLine("NVIDIA_TESLA_T4", 4, NOTED, UNKNOWN),
        other_price,
    )
    assert merge_lines([]) == ()


def test_unknown_items_name_each_unknown_figure() -> None:
    from vertex_retrain.specs.price_lines import unknown_items

    unknown_both = PriceLine("tpu", 1, UNKNOWN, UNKNOWN)
    assert unknown_items([MACHINE, GPU, unknown_both]) == [
        "NVIDIA_TESLA_T4 Spot",
        "tpu on-demand",
        "tpu Spot",
    ]


def test_cited_sources_list_each_cited_source_and_the_rule_when_derived() -> None:
    from vertex_retrain.specs.price_lines import cited_sources
    from vertex_retrain.specs.prices import load_prices

    book = load_prices()
    quoted_only = PriceLine("m", 1, PriceFigure(1.0, "quoted", "S1, S3"), UNKNOWN)
    assert cited_sources([quoted_only], book) == (("S1", book.sources["S1"]),
                                                  ("S3", book.sources["S3"]))  # fmt: skip
    derived_spot = PriceLine("m", 1, UNKNOWN, PriceFigure(0.1, "derived", "S2 x 1.15"))
    assert cited_sources([derived_spot], book) == (
        ("S2", book.sources["S2"]),
        (f"x {book.multiplier:g}", book.rule),
    )
    assert cited_sources([PriceLine("m", 1, UNKNOWN, UNKNOWN)], book) == ()


def test_pipeline_cost_estimate_of_one_step_takes_its_currency() -> None:
    pipeline = estimate_pipeline_cost([_estimate(1)], label="one")
    assert pipeline.to_dict()["currency"] == "EUR"
    assert pipeline.describe().endswith("one total: 2.00 h, 2.00 GPU-hours, on-demand 10.00 EUR, "
                                        "Spot 3.00 EUR")  # fmt: skip


def _gpu_pool(replicas: int) -> dict[str, object]:
    return {
        "machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4",
                        "acceleratorCount": 2},
        "replicaCount": replicas,
        "containerSpec": {"imageUri": "europe-docker.pkg.dev/p/r/t@sha256:" + "0" * 64},
    }  # fmt: skip


def test_estimate_job_cost_counts_every_replica_s_gpus_and_takes_the_given_efficiency() -> None:
    from vertex_retrain.specs.cost import estimate_job_cost

    payload = {"displayName": "train", "jobSpec": {"workerPoolSpecs": [_gpu_pool(1), _gpu_pool(3)]}}
    estimate = estimate_job_cost(payload, 8.0, efficiency=0.5, location="us-central1")
    assert estimate.gpus == 8  # 2 GPUs x (1 + 3) replicas
    assert (estimate.efficiency, estimate.efficiency_source) == (0.5, "given")
    assert estimate.wall_hours == pytest.approx(2.0)  # 8 h / (8 x 0.5)


def test_estimate_job_cost_of_a_tuning_job_reads_its_trial_job() -> None:
    from vertex_retrain.specs.cost import estimate_job_cost

    payload = {
        "displayName": "tune",
        "studySpec": {},
        "maxTrialCount": 5,
        "parallelTrialCount": 2,
        "trialJobSpec": {"workerPoolSpecs": [_gpu_pool(1)]},
    }
    estimate = estimate_job_cost(payload, 1.7, location="us-central1")
    assert estimate.gpus == 2 and estimate.efficiency == 0.85
    assert estimate.wall_hours == pytest.approx(3 * 1.7 / (2 * 0.85))  # 3 rounds of trials
    assert estimate.gpu_hours == pytest.approx(5 * 1.7 / 0.85)  # 5 trials
    assert "5 trials, 2 at a time: 3 round(s)" in estimate.notes


def _small_book(tmp_path: Path) -> object:
    from tests.test_specs_price_book import BOOK
    from vertex_retrain.specs.prices import load_prices

    path = tmp_path / "prices.yaml"
    path.write_text(BOOK, encoding="utf-8")
    return load_prices(path)


def _cpu_job(*machines: str) -> dict[str, object]:
    pools = [
        {
            "machineSpec": {"machineType": m},
            "replicaCount": 1,
            "containerSpec": {"imageUri": "europe-docker.pkg.dev/p/r/t:1"},
        }
        for m in machines
    ]
    return {"displayName": "j", "jobSpec": {"workerPoolSpecs": pools}}  # fmt: skip


def test_estimate_job_cost_names_unknown_prices_and_a_region_without_any(tmp_path: Path) -> None:
    from vertex_retrain.specs.cost import estimate_job_cost

    book = _small_book(tmp_path)
    payload = _cpu_job("quoted-dated", "empty")
    estimate = estimate_job_cost(payload, 1.0, prices=book, location="europe-west4")  # type: ignore[arg-type]
    assert estimate.notes == ("unknown prices: quoted-dated Spot, empty on-demand, empty Spot",)
    assert estimate.on_demand_cost is None and estimate.spot_cost is None
    elsewhere = estimate_job_cost(payload, 1.0, prices=book, location="mars-1")  # type: ignore[arg-type]
    assert elsewhere.notes[0] == (
        "no prices recorded for mars-1; known regions: asia-east1, europe-west4"
    )


def test_estimate_job_cost_prices_unknown_spot_only_when_asked(tmp_path: Path) -> None:
    from vertex_retrain.specs.cost import estimate_job_cost

    book = _small_book(tmp_path)
    payload = _cpu_job("quoted-dated", "from-compute")
    plain = estimate_job_cost(payload, 1.0, prices=book, location="europe-west4")  # type: ignore[arg-type]
    assert plain.hourly_spot is None and plain.hourly_on_demand == pytest.approx(1.5 + 1.2)
    asked = estimate_job_cost(
        payload,
        1.0,
        prices=book,
        location="europe-west4",
        spot_fallback_fraction=0.5,  # type: ignore[arg-type]
    )
    # quoted-dated's Spot is half its on-demand 1.5; from-compute keeps its own 0.3.
    assert asked.hourly_spot == pytest.approx(0.75 + 0.3)
    assert asked.lines[0].spot.source == "S1 on-demand x 0.5"
    assert asked.notes == ()


def test_cited_sources_find_the_rule_in_an_on_demand_figure_alone() -> None:
    from vertex_retrain.specs.price_lines import cited_sources
    from vertex_retrain.specs.prices import load_prices

    book = load_prices()
    derived = PriceLine("m", 1, PriceFigure(1.0, "derived", "S9 x 1.15"), UNKNOWN)
    assert cited_sources([derived], book)[-1] == (f"x {book.multiplier:g}", book.rule)

"""Cost estimates per job and per pipeline run, with the scaling assumption stated.

The model (the worked example of the source article):

* ``baseline_hours`` is how long the job takes on ONE GPU (or, for a CPU job, its run time);
* with ``n`` GPUs at scaling efficiency ``e`` the wall time is ``baseline / (n × e)``;
* cost = wall hours × hourly price of everything the job holds (for the teaching example:
  ``n × price per GPU-hour``); GPU-hours = wall hours × ``n``.

Since ``n`` cancels, cost = ``baseline × price / e``: more GPUs buy time, and the efficiency
loss is what the speed costs. Efficiency is an assumption; when not given it defaults to the
article's figures (85% up to 8 GPUs, 60% beyond) and ``describe()`` says so.

A payload is priced line by line (:mod:`vertex_retrain.specs.price_lines`) from the price
book of one region (:mod:`vertex_retrain.specs.prices`); every line keeps its figures'
labels (quoted, derived, unknown), sources and dates, and an unknown price leaves the cost
unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vertex_retrain.specs.machine_catalog import Catalog, load_catalog
from vertex_retrain.specs.payload_io import as_int, mapping, normalize_job
from vertex_retrain.specs.pool_rules import gpu_count, replica_count
from vertex_retrain.specs.price_lines import (
    PriceLine,
    cited_sources,
    format_lines,
    hourly_total,
    merge_lines,
    pool_lines,
    price_legend,
    unknown_items,
    with_spot_fallback,
)
from vertex_retrain.specs.prices import PriceBook, load_prices


def default_efficiency(gpus: int) -> float:
    """Scaling efficiency assumed when none is given: 1.0, 0.85 (2-8 GPUs), 0.60 (> 8)."""
    if gpus <= 1:
        return 1.0
    return 0.85 if gpus <= 8 else 0.60


def scaled_wall_hours(baseline_hours: float, gpus: int, efficiency: float) -> float:
    """Wall time on ``gpus`` GPUs: ``baseline / (gpus × efficiency)`` (baseline for <= 1 GPU)."""
    if baseline_hours < 0:
        raise ValueError(f"baseline_hours must be >= 0, got {baseline_hours}")
    if not 0 < efficiency <= 1:
        raise ValueError(f"efficiency must be in (0, 1], got {efficiency}")
    return baseline_hours if gpus <= 1 else baseline_hours / (gpus * efficiency)


def format_money(amount: float | None, currency: str) -> str:
    """A cost for people: ``1,176 USD``, ``1.68 USD``, or ``unknown`` for a missing price."""
    if amount is None:
        return "unknown"
    return (
        f"{amount:,.0f} {currency}".strip()
        if amount >= 100
        else f"{amount:,.2f} {currency}".strip()
    )


@dataclass(frozen=True)
class CostEstimate:
    """Estimated time and money of one job.

    Attributes:
        label: What was estimated.
        gpus: GPUs held in total (all pools, all replicas).
        baseline_hours: Run time on one GPU (CPU jobs: the run time).
        efficiency: Scaling efficiency assumed.
        efficiency_source: ``"given"`` or the default rule that supplied it.
        wall_hours: Estimated wall-clock hours.
        gpu_hours: ``wall_hours × gpus``.
        hourly_on_demand: Price per hour of everything the job holds (None: unknown).
        hourly_spot: Same on Spot (None: unknown).
        on_demand_cost: ``wall_hours × hourly_on_demand``.
        spot_cost: ``wall_hours × hourly_spot``.
        currency: Currency of the prices.
        notes: Further assumptions (unknown prices, trial counts, ...).
        location: Region whose prices were used (empty when a price was given directly).
        lines: What the job holds, each with its labelled unit prices.
        sources: ``(id, description)`` of every source the lines cite.
    """

    label: str
    gpus: int
    baseline_hours: float
    efficiency: float
    efficiency_source: str
    wall_hours: float
    gpu_hours: float
    hourly_on_demand: float | None
    hourly_spot: float | None
    on_demand_cost: float | None
    spot_cost: float | None
    currency: str = ""
    notes: tuple[str, ...] = ()
    location: str = ""
    lines: tuple[PriceLine, ...] = ()
    sources: tuple[tuple[str, str], ...] = ()

    def describe(self, *, legend: bool = True) -> str:
        """Returns the estimate with its assumptions, in a few lines of text.

        Args:
            legend: Also list the figures' assumptions and notes and the sources cited (a
                pipeline estimate lists them once for all its steps instead).
        """
        lines = [f"{self.label}: {self.gpus} GPU(s)" if self.gpus else f"{self.label}: no GPU"]
        if self.gpus > 1:
            lines.append(
                f"  scaling efficiency assumed: {self.efficiency:.0%} ({self.efficiency_source})"
            )
            lines.append(
                f"  wall time = {self.baseline_hours:g} h / ({self.gpus} × {self.efficiency:g})"
                f" = {self.wall_hours:.2f} h"
            )
        else:
            lines.append(f"  wall time = {self.wall_hours:.2f} h (no scaling assumed)")
        lines.append(f"  GPU-hours: {self.gpu_hours:.2f}")
        if self.lines:
            lines.append(f"  unit prices in {self.location}, {self.currency} per hour:")
            lines += format_lines(self.lines)
        lines.append(f"  on-demand: {format_money(self.on_demand_cost, self.currency)}")
        lines.append(f"  Spot: {format_money(self.spot_cost, self.currency)}")
        lines += [f"  note: {n}" for n in self.notes]
        if legend:
            lines += price_legend(self.lines, self.sources)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every attribute, lines with their labelled figures."""
        return {
            "label": self.label,
            "location": self.location,
            "currency": self.currency,
            "gpus": self.gpus,
            "baseline_hours": self.baseline_hours,
            "efficiency": self.efficiency,
            "efficiency_source": self.efficiency_source,
            "wall_hours": self.wall_hours,
            "gpu_hours": self.gpu_hours,
            "hourly_on_demand": self.hourly_on_demand,
            "hourly_spot": self.hourly_spot,
            "on_demand_cost": self.on_demand_cost,
            "spot_cost": self.spot_cost,
            "lines": [line.to_dict() for line in self.lines],
            "notes": list(self.notes),
            "sources": dict(self.sources),
        }


def _resolve_efficiency(gpus: int, efficiency: float | None) -> tuple[float, str]:
    if efficiency is not None:
        return efficiency, "given"
    return default_efficiency(gpus), (
        "default from the source article: 85% up to 8 GPUs, 60% beyond; measure your own"
    )


def estimate_scaling_cost(
    baseline_hours: float,
    gpus: int,
    price_per_gpu_hour: float,
    *,
    efficiency: float | None = None,
    spot_price_fraction: float | None = None,
    label: str = "job",
    currency: str = "",
) -> CostEstimate:
    """Estimates a data-parallel job from its single-GPU run time and a price per GPU-hour.

    Args:
        baseline_hours: Run time on one GPU.
        gpus: GPUs used.
        price_per_gpu_hour: On-demand price of one GPU-hour.
        efficiency: Scaling efficiency (default: :func:`default_efficiency`).
        spot_price_fraction: Spot price as a fraction of on-demand (None: Spot unknown).
        label: Name shown by ``describe()``.
        currency: Currency shown by ``describe()``.

    Returns:
        The estimate.
    """
    eff, source = _resolve_efficiency(gpus, efficiency)
    wall = scaled_wall_hours(baseline_hours, gpus, eff)
    n = max(gpus, 1)
    hourly = n * price_per_gpu_hour
    spot_hourly = None if spot_price_fraction is None else hourly * spot_price_fraction
    notes = (
        ()
        if spot_price_fraction is None
        else (f"Spot priced at {spot_price_fraction:.0%} of on-demand",)
    )
    return CostEstimate(
        label=label,
        gpus=gpus,
        baseline_hours=baseline_hours,
        efficiency=eff,
        efficiency_source=source,
        wall_hours=wall,
        gpu_hours=wall * gpus,
        hourly_on_demand=hourly,
        hourly_spot=spot_hourly,
        on_demand_cost=wall * hourly,
        spot_cost=None if spot_hourly is None else wall * spot_hourly,
        currency=currency,
        notes=notes,
    )


def estimate_job_cost(
    payload: Mapping[str, Any],
    baseline_hours: float,
    *,
    efficiency: float | None = None,
    catalog: Catalog | None = None,
    prices: PriceBook | None = None,
    location: str | None = None,
    spot_fallback_fraction: float | None = None,
    label: str | None = None,
) -> CostEstimate:
    """Estimates a CustomJob or tuning job payload with the price book's hourly prices.

    Args:
        payload: CustomJob / HyperparameterTuningJob resource or bare job-spec body.
        baseline_hours: Run time of one job (one trial) on one GPU; for a CPU job, its run
            time.
        efficiency: Scaling efficiency over the job's GPUs (default:
            :func:`default_efficiency`).
        catalog: Machine catalog (TPU hosts per topology; default: the packaged one).
        prices: Price book (default: the packaged one; see ``PriceBook.with_overrides``).
        location: Region whose prices apply (default: the book's ``default_location``). A
            region without recorded prices makes every price unknown.
        spot_fallback_fraction: Only where a Spot price is unknown, price it as this
            fraction of a known on-demand one (labelled an assumption). Default: leave it
            unknown.
        label: Name shown by ``describe()`` (default: the display name).

    Returns:
        The estimate; costs are None where a price is unknown, and ``notes`` says which.
        For a tuning job, wall time is ``ceil(maxTrialCount / parallelTrialCount)`` trial
        rounds and cost covers ``maxTrialCount`` trials.
    """
    job = normalize_job(payload)
    catalog = catalog or load_catalog()
    book = prices or load_prices()
    where = location or book.default_location
    resource = job.resource
    spec = mapping(resource.get("jobSpec" if job.kind == "custom_job" else "trialJobSpec"))
    pools = [p for p in (spec.get("workerPoolSpecs") or []) if mapping(p)]
    gpus = sum(gpu_count(p) * replica_count(p) for p in pools)
    eff, source = _resolve_efficiency(gpus, efficiency)
    wall = scaled_wall_hours(baseline_hours, gpus, eff)
    lines = merge_lines(
        line
        for pool in pools
        for line in pool_lines(pool, location=where, book=book, catalog=catalog)
    )
    if spot_fallback_fraction is not None:
        lines = with_spot_fallback(lines, spot_fallback_fraction)
    on_demand, spot = hourly_total(lines, "on_demand"), hourly_total(lines, "spot")
    notes = []
    if where not in book.machines:
        notes.append(
            f"no prices recorded for {where}; known regions: {', '.join(book.locations())}"
        )
    unknown = unknown_items(lines)
    if unknown:
        notes.append("unknown prices: " + ", ".join(unknown))
    trials, rounds = 1, 1
    if job.kind == "tuning_job":
        trials = as_int(resource.get("maxTrialCount")) or 1
        parallel = max(1, as_int(resource.get("parallelTrialCount")) or 1)
        rounds = -(-trials // parallel)
        notes.append(f"{trials} trials, {parallel} at a time: {rounds} round(s)")
    return CostEstimate(
        label=label or str(resource.get("displayName") or job.kind),
        gpus=gpus,
        baseline_hours=baseline_hours,
        efficiency=eff,
        efficiency_source=source,
        wall_hours=wall * rounds,
        gpu_hours=wall * gpus * trials,
        hourly_on_demand=on_demand,
        hourly_spot=spot,
        on_demand_cost=None if on_demand is None else wall * on_demand * trials,
        spot_cost=None if spot is None else wall * spot * trials,
        currency=book.currency,
        notes=tuple(notes),
        location=where,
        lines=lines,
        sources=cited_sources(lines, book),
    )


@dataclass(frozen=True)
class PipelineCostEstimate:
    """Sum of the job estimates of one pipeline run (steps run one after another)."""

    label: str
    steps: tuple[CostEstimate, ...]

    @property
    def wall_hours(self) -> float:
        """Total wall hours (steps in sequence)."""
        return sum(s.wall_hours for s in self.steps)

    @property
    def gpu_hours(self) -> float:
        """Total GPU-hours."""
        return sum(s.gpu_hours for s in self.steps)

    @property
    def on_demand_cost(self) -> float | None:
        """Total on-demand cost (None when any step's is unknown)."""
        costs = [s.on_demand_cost for s in self.steps]
        return None if None in costs else sum(c for c in costs if c is not None)

    @property
    def spot_cost(self) -> float | None:
        """Total Spot cost (None when any step's is unknown)."""
        costs = [s.spot_cost for s in self.steps]
        return None if None in costs else sum(c for c in costs if c is not None)

    def describe(self) -> str:
        """Returns every step's estimate, the totals, then the price legend once."""
        currency = self.steps[0].currency if self.steps else ""
        parts = [s.describe(legend=False) for s in self.steps]
        parts.append(
            f"{self.label} total: {self.wall_hours:.2f} h, {self.gpu_hours:.2f} GPU-hours, "
            f"on-demand {format_money(self.on_demand_cost, currency)}, "
            f"Spot {format_money(self.spot_cost, currency)}"
        )
        legend = price_legend(
            [line for step in self.steps for line in step.lines],
            [pair for step in self.steps for pair in step.sources],
        )
        if legend:
            parts.append("prices:")
            parts += legend
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the steps' :meth:`CostEstimate.to_dict` and the totals."""
        return {
            "label": self.label,
            "steps": [step.to_dict() for step in self.steps],
            "wall_hours": self.wall_hours,
            "gpu_hours": self.gpu_hours,
            "on_demand_cost": self.on_demand_cost,
            "spot_cost": self.spot_cost,
            "currency": self.steps[0].currency if self.steps else "",
        }


def estimate_pipeline_cost(
    steps: Sequence[CostEstimate], label: str = "pipeline run"
) -> PipelineCostEstimate:
    """Sums job estimates into the estimate of one pipeline run."""
    return PipelineCostEstimate(label=label, steps=tuple(steps))

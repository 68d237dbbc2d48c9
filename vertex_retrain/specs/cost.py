"""Cost estimates per job and per pipeline run, with the scaling assumption stated.

The model (the worked example of the source article):

* ``baseline_hours`` is how long the job takes on ONE GPU (or, for a CPU job, its run time);
* with ``n`` GPUs at scaling efficiency ``e`` the wall time is ``baseline / (n × e)``;
* cost = wall hours × hourly price of everything the job holds (for the teaching example:
  ``n × price per GPU-hour``); GPU-hours = wall hours × ``n``.

Since ``n`` cancels, cost = ``baseline × price / e``: more GPUs buy time, and the efficiency
loss is what the speed costs. Efficiency is an assumption; when not given it defaults to the
article's figures (85% up to 8 GPUs, 60% beyond) and ``describe()`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vertex_retrain.specs.catalog import Catalog, load_catalog
from vertex_retrain.specs.payload_io import as_int, mapping, normalize_job
from vertex_retrain.specs.pool_rules import gpu_count, replica_count


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

    def describe(self) -> str:
        """Returns the estimate with its assumptions, in a few lines of text."""
        lines = [f"{self.label}: {self.gpus} GPU(s)"]
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
        lines.append(f"  on-demand: {format_money(self.on_demand_cost, self.currency)}")
        lines.append(f"  Spot: {format_money(self.spot_cost, self.currency)}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


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


def _hourly(
    pools: Sequence[Any], catalog: Catalog, spot_fraction: float | None
) -> tuple[float | None, float | None, list[str]]:
    on_demand: float | None = 0.0
    spot: float | None = 0.0
    unknown: list[str] = []
    for pool in pools:
        spec = mapping(mapping(pool).get("machineSpec"))
        replicas = replica_count(pool)
        if not replicas:
            continue
        items = [(str(spec.get("machineType")), 1, catalog.machine_price)]
        acc = spec.get("acceleratorType")
        if isinstance(acc, str) and acc.startswith("NVIDIA_"):
            items.append((acc, gpu_count(pool), catalog.accelerator_price))
        for name, count, lookup in items:
            price = lookup(name)
            if price.on_demand is None:
                unknown.append(f"{name} on-demand")
                on_demand = None
            elif on_demand is not None:
                on_demand += replicas * count * price.on_demand
            spot_price = (
                price.on_demand * spot_fraction
                if spot_fraction is not None and price.on_demand is not None
                else price.spot
            )
            if spot_price is None:
                unknown.append(f"{name} Spot")
                spot = None
            elif spot is not None:
                spot += replicas * count * spot_price
    return on_demand, spot, unknown


def estimate_job_cost(
    payload: Mapping[str, Any],
    baseline_hours: float,
    *,
    efficiency: float | None = None,
    catalog: Catalog | None = None,
    spot_price_fraction: float | None = None,
    label: str | None = None,
) -> CostEstimate:
    """Estimates a CustomJob or tuning job payload with the catalog's hourly prices.

    Args:
        payload: CustomJob / HyperparameterTuningJob resource or bare job-spec body.
        baseline_hours: Run time of one job (one trial) on one GPU; for a CPU job, its run
            time.
        efficiency: Scaling efficiency over the job's GPUs (default:
            :func:`default_efficiency`).
        catalog: Catalog with prices (see ``Catalog.with_prices`` to override them).
        spot_price_fraction: Price Spot as this fraction of on-demand instead of the catalog's
            Spot prices.
        label: Name shown by ``describe()`` (default: the display name).

    Returns:
        The estimate; costs are None where a price is unknown, and ``notes`` says which.
        For a tuning job, wall time is ``ceil(maxTrialCount / parallelTrialCount)`` trial
        rounds and cost covers ``maxTrialCount`` trials.
    """
    job = normalize_job(payload)
    catalog = catalog or load_catalog()
    resource = job.resource
    spec = mapping(resource.get("jobSpec" if job.kind == "custom_job" else "trialJobSpec"))
    pools = [p for p in (spec.get("workerPoolSpecs") or []) if mapping(p)]
    gpus = sum(gpu_count(p) * replica_count(p) for p in pools)
    eff, source = _resolve_efficiency(gpus, efficiency)
    wall = scaled_wall_hours(baseline_hours, gpus, eff)
    on_demand, spot, unknown = _hourly(pools, catalog, spot_price_fraction)
    notes = [
        f"prices: {catalog.price_meta.get('region', '?')}, as of "
        f"{catalog.price_meta.get('as_of', '?')}, status {catalog.price_meta.get('status', '?')}"
    ]
    if unknown:
        notes.append("unknown prices: " + ", ".join(sorted(set(unknown))))
    if spot_price_fraction is not None:
        notes.append(f"Spot priced at {spot_price_fraction:.0%} of on-demand")
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
        currency=catalog.price_meta.get("currency", ""),
        notes=tuple(notes),
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
        """Returns every step's estimate followed by the totals."""
        currency = self.steps[0].currency if self.steps else ""
        parts = [s.describe() for s in self.steps]
        parts.append(
            f"{self.label} total: {self.wall_hours:.2f} h, {self.gpu_hours:.2f} GPU-hours, "
            f"on-demand {format_money(self.on_demand_cost, currency)}, "
            f"Spot {format_money(self.spot_cost, currency)}"
        )
        return "\n".join(parts)


def estimate_pipeline_cost(
    steps: Sequence[CostEstimate], label: str = "pipeline run"
) -> PipelineCostEstimate:
    """Sums job estimates into the estimate of one pipeline run."""
    return PipelineCostEstimate(label=label, steps=tuple(steps))

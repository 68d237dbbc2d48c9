"""What a job holds per hour, one priced line per machine type or accelerator.

A worker pool holds ``replicaCount`` machines and, on N1 machines, ``acceleratorCount`` GPUs
per replica. Accelerator-optimized machines (a2, a3, a4, g2) and TPU VMs are priced as a
whole, their accelerators included; a ``cloud-tpu`` host is included in its TPU cores'
figure. Every line keeps the :class:`~vertex_retrain.specs.prices.PriceFigure` it was priced
with, so an estimate can say, line by line, whether a price is quoted, derived or unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vertex_retrain.specs.machine_catalog import Catalog
from vertex_retrain.specs.payload_io import as_int, mapping
from vertex_retrain.specs.pool_rules import replica_count
from vertex_retrain.specs.prices import TIERS, PriceBook, PriceFigure, Tier
from vertex_retrain.specs.tpu_rules import tpu_hosts

LABELS = (
    "labels: quoted = a Vertex price a source states; derived = computed from Vertex unit "
    "prices, or from a Compute Engine list price times the Vertex fee rule (x 1.15 in its "
    "source); assumed = the derivation rests on an unchecked assumption; unknown = no price "
    "found, never guessed"
)


@dataclass(frozen=True)
class PriceLine:
    """One item a job holds while it runs, and its hourly prices.

    Attributes:
        item: Machine type or accelerator enum name.
        units: How many the job holds (machines, GPUs or TPU cores).
        on_demand: Price of one unit per hour, on-demand.
        spot: Price of one unit per hour, on Spot.
        includes: What the unit price covers besides the item, e.g. ``1 NVIDIA_TESLA_A100``.
    """

    item: str
    units: int
    on_demand: PriceFigure
    spot: PriceFigure
    includes: str = ""

    @property
    def name(self) -> str:
        """The item with what its price covers, e.g. ``a2-highgpu-1g + 1 NVIDIA_TESLA_A100``."""
        return f"{self.item} + {self.includes}" if self.includes else self.item

    def figure(self, tier: Tier) -> PriceFigure:
        """Returns the unit price of ``tier``."""
        return self.on_demand if tier == "on_demand" else self.spot

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: item, units, includes and both figures with their labels."""
        return {
            "item": self.item,
            "units": self.units,
            "includes": self.includes,
            "on_demand": self.on_demand.to_dict(),
            "spot": self.spot.to_dict(),
        }


def _accelerator_lines(
    spec: Mapping[str, Any], replicas: int, location: str, book: PriceBook, includes: str = ""
) -> list[PriceLine]:
    accelerator = spec.get("acceleratorType")
    count = as_int(spec.get("acceleratorCount")) or 0
    if not isinstance(accelerator, str) or not accelerator or count <= 0:
        return []
    price = book.accelerator(location, accelerator)
    return [PriceLine(accelerator, replicas * count, price.on_demand, price.spot, includes)]


def _carried(machine: str, catalog: Catalog) -> str:
    """What one machine carries, per the catalog: ``1 NVIDIA_TESLA_A100``, ``4 TPU chips``."""
    if machine in catalog.bundled_gpus:
        accelerator, count = catalog.bundled_gpus[machine]
        return f"{count} {accelerator}"
    tpu = catalog.tpu_machines.get(machine)
    if tpu is not None and tpu.chips_per_host:
        return f"{tpu.chips_per_host} TPU {tpu.generation} chips"
    return "its accelerators"


def pool_lines(pool: Any, *, location: str, book: PriceBook, catalog: Catalog) -> list[PriceLine]:
    """Prices one worker pool: its machines and their accelerators.

    Args:
        pool: One ``workerPoolSpecs`` entry (camelCase); an empty pool holds nothing.
        location: Region whose prices apply.
        book: The price book.
        catalog: The machine catalog (TPU hosts per topology).

    Returns:
        The pool's lines (none for an empty pool).
    """
    replicas = replica_count(pool)
    spec = mapping(mapping(pool).get("machineSpec"))
    machine = str(spec.get("machineType") or "")
    if not replicas or not machine:
        return []
    if book.covered_by_accelerators(machine):
        return _accelerator_lines(spec, replicas, location, book, includes=f"its {machine} host")
    price = book.machine(location, machine)
    if book.covers_accelerators(machine):
        # A multi-host TPU slice is one replica of several hosts, each priced as a machine.
        hosts = tpu_hosts(spec, catalog) or 1
        units = replicas * hosts
        return [PriceLine(machine, units, price.on_demand, price.spot, _carried(machine, catalog))]
    lines = [PriceLine(machine, replicas, price.on_demand, price.spot)]
    return lines + _accelerator_lines(spec, replicas, location, book)


def merge_lines(lines: Iterable[PriceLine]) -> tuple[PriceLine, ...]:
    """Adds up the units of lines that price the same thing the same way (in first order)."""
    merged: dict[tuple[str, str, PriceFigure, PriceFigure], PriceLine] = {}
    for line in lines:
        key = (line.item, line.includes, line.on_demand, line.spot)
        old = merged.get(key)
        merged[key] = line if old is None else replace(old, units=old.units + line.units)
    return tuple(merged.values())


def hourly_total(lines: Sequence[PriceLine], tier: Tier) -> float | None:
    """Price per hour of everything on ``lines``; None when any line's price is unknown."""
    total = 0.0
    for line in lines:
        amount = line.figure(tier).amount
        if amount is None:
            return None
        total += line.units * amount
    return total


def unknown_items(lines: Sequence[PriceLine]) -> list[str]:
    """Names ``item tier`` for every unknown figure, e.g. ``a4-highgpu-8g on-demand``."""
    words = {"on_demand": "on-demand", "spot": "Spot"}
    return [
        f"{line.item} {words[tier]}"
        for line in lines
        for tier in TIERS
        if line.figure(tier).amount is None
    ]


def with_spot_fallback(lines: Sequence[PriceLine], fraction: float) -> tuple[PriceLine, ...]:
    """Prices each unknown Spot figure as ``fraction`` of a known on-demand one, labelled.

    Only for callers that ask for it: an estimate never guesses on its own.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"spot fallback fraction must be in (0, 1], got {fraction}")
    out = []
    for line in lines:
        on_demand = line.on_demand
        if line.spot.amount is None and on_demand.amount is not None:
            spot = PriceFigure(
                amount=on_demand.amount * fraction,
                basis="derived",
                source=f"{on_demand.source} on-demand x {fraction:g}".strip(),
                as_of=on_demand.as_of,
                assumption=(
                    f"Spot taken as {fraction:.0%} of on-demand: an explicit fallback, since no "
                    "Spot price is recorded."
                ),
            )
            line = replace(line, spot=spot)
        out.append(line)
    return tuple(out)


def _amount(figure: PriceFigure) -> str:
    return "unknown" if figure.amount is None else f"{figure.amount:.4f}"


def format_lines(lines: Sequence[PriceLine], *, indent: str = "    ") -> list[str]:
    """The lines as a text table: item, units, then price and label/source/date per tier."""
    header = ("item", "units", "on-demand/h", "on-demand basis", "Spot/h", "Spot basis")
    rows = [header] + [
        (
            line.name,
            str(line.units),
            _amount(line.on_demand),
            line.on_demand.citation(),
            _amount(line.spot),
            line.spot.citation(),
        )
        for line in lines
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    right = {1, 2, 4}
    return [
        indent
        + "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def figure_notes(lines: Sequence[PriceLine]) -> list[str]:
    """Distinct assumptions and notes of the lines' figures, each naming its figures."""
    words = {"on_demand": "on-demand", "spot": "Spot"}
    texts: dict[str, list[str]] = {}
    for line in lines:
        for tier in TIERS:
            figure = line.figure(tier)
            for prefix, text in (("assumed", figure.assumption), ("note", figure.note)):
                if text:
                    texts.setdefault(f"{prefix}: {text}", []).append(f"{line.item} {words[tier]}")
    return [f"{text} ({', '.join(dict.fromkeys(names))})" for text, names in texts.items()]


def cited_sources(lines: Sequence[PriceLine], book: PriceBook) -> tuple[tuple[str, str], ...]:
    """``(id, description)`` of every source the lines cite, and the derivation rule if used."""
    cited = {
        key
        for line in lines
        for tier in TIERS
        for key in re.findall(r"\bS\d+\b", line.figure(tier).source)
    }
    pairs = [(key, what) for key, what in book.sources.items() if key in cited]
    if any(" x " in line.figure(tier).source for line in lines for tier in TIERS):
        pairs.append((f"x {book.multiplier:g}", book.rule))
    return tuple(pairs)


def price_legend(lines: Sequence[PriceLine], sources: Iterable[tuple[str, str]]) -> list[str]:
    """What the labels mean, the figures' assumptions and notes, then each source once."""
    if not lines:
        return []
    out = [f"  {LABELS}"]
    out += [f"  {text}" for text in figure_notes(lines)]
    out += [f"  {key}: {what}" for key, what in dict(sources).items()]
    return out

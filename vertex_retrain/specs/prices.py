"""Vertex AI training prices per region, each figure labelled quoted, derived or unknown.

The facts live in ``prices.yaml`` next to this module: Vertex prices that a source states,
and Compute Engine list prices of the same shapes, each with its source and date. This module
turns them into one :class:`PriceFigure` per item, region and tier (on-demand, Spot):

* **quoted**: a Vertex training price a source states;
* **derived**: computed, either from Vertex unit prices a source states or as the Compute
  Engine list price × the file's multiplier (1.15); a derivation that rests on an unchecked
  assumption (every Spot figure, every TPU figure) carries that assumption;
* **unknown**: nothing found. Nothing is ever guessed.

Pure (stdlib + PyYAML), loaded once per path.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from vertex_retrain.specs.yaml_file import load_yaml_table

DEFAULT_PRICES_PATH = Path(__file__).with_name("prices.yaml")

Basis = Literal["quoted", "derived", "given", "unknown"]
Tier = Literal["on_demand", "spot"]
TIERS: tuple[Tier, ...] = ("on_demand", "spot")


@dataclass(frozen=True)
class PriceFigure:
    """One hourly price with where it comes from.

    Attributes:
        amount: Price per hour, or None when unknown.
        basis: ``quoted`` (a source states this Vertex price), ``derived`` (computed; see
            ``source``), ``given`` (a caller's override) or ``unknown``.
        source: Source ids and, for a derivation, how: ``S1, S2`` or ``S9 x 1.15``.
        as_of: Date of the source (``undated`` where the source has none).
        assumption: What a derived figure assumes beyond its sources (empty when nothing).
        note: Anything else a reader should know (low confidence, conflicting quotes).
    """

    amount: float | None
    basis: Basis
    source: str = ""
    as_of: str = ""
    assumption: str = ""
    note: str = ""

    @property
    def label(self) -> str:
        """``quoted``, ``derived``, ``derived, assumed``, ``given`` or ``unknown``."""
        return "derived, assumed" if self.basis == "derived" and self.assumption else self.basis

    def citation(self) -> str:
        """Label, source and date in one phrase, e.g. ``derived: S9 x 1.15, 2026-07-30``."""
        where = ", ".join(part for part in (self.source, self.as_of) if part)
        return f"{self.label}: {where}" if where else self.label

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``label`` is the display form of ``basis``)."""
        return {
            "amount": self.amount,
            "basis": self.basis,
            "label": self.label,
            "source": self.source,
            "as_of": self.as_of,
            "assumption": self.assumption,
            "note": self.note,
        }


UNKNOWN = PriceFigure(None, "unknown")


@dataclass(frozen=True)
class ItemPrice:
    """On-demand and Spot figures of one machine type or accelerator in one region."""

    on_demand: PriceFigure = UNKNOWN
    spot: PriceFigure = UNKNOWN

    def tier(self, tier: Tier) -> PriceFigure:
        """Returns the figure of ``tier`` (``on_demand`` or ``spot``)."""
        return self.on_demand if tier == "on_demand" else self.spot


@dataclass(frozen=True)
class PriceBook:
    """Immutable view of ``prices.yaml``. Build it with :func:`load_prices`.

    Attributes:
        version: File version.
        assembled_on: When the facts were assembled.
        currency: Currency of every figure.
        default_location: Region used when none is named.
        multiplier: Vertex price = Compute Engine price × this (the derivation rule).
        rule: The derivation rule and where it was checked, in words.
        sources: Source id -> what it is and its date.
        machines: Region -> machine type -> prices.
        accelerators: Region -> accelerator enum name -> prices.
        covering: Patterns of machines whose figure covers the accelerators they carry.
        covered: Patterns of machines whose host the accelerator figure covers.
    """

    version: int
    assembled_on: str
    currency: str
    default_location: str
    multiplier: float
    rule: str
    sources: Mapping[str, str]
    machines: Mapping[str, Mapping[str, ItemPrice]]
    accelerators: Mapping[str, Mapping[str, ItemPrice]]
    covering: tuple[str, ...]
    covered: tuple[str, ...]

    def locations(self) -> tuple[str, ...]:
        """Returns the regions with recorded prices, sorted."""
        return tuple(sorted(self.machines))

    def machine(self, location: str, name: str) -> ItemPrice:
        """Returns a machine type's prices in ``location`` (unknown where not recorded)."""
        return self.machines.get(location, {}).get(name, ItemPrice())

    def accelerator(self, location: str, name: str) -> ItemPrice:
        """Returns one accelerator's prices in ``location`` (unknown where not recorded)."""
        return self.accelerators.get(location, {}).get(name, ItemPrice())

    def covers_accelerators(self, machine: str) -> bool:
        """True when the machine's figure includes the accelerators it carries."""
        return any(fnmatch.fnmatchcase(machine, p) for p in self.covering)

    def covered_by_accelerators(self, machine: str) -> bool:
        """True when the machine's host is included in its accelerators' figure."""
        return any(fnmatch.fnmatchcase(machine, p) for p in self.covered)

    def with_overrides(
        self,
        overrides: Mapping[str, Mapping[str, float | None]],
        *,
        location: str | None = None,
    ) -> PriceBook:
        """Returns a copy with the caller's prices (labelled ``given``).

        Args:
            overrides: Machine type or accelerator name -> ``{"on_demand": x, "spot": y}``; a
                missing key keeps the recorded figure, None makes it unknown.
            location: Region to override (default: every region).

        Returns:
            A new book; this one is unchanged.

        Raises:
            ValueError: On an unknown name, region or key, or a price that is not a number
                >= 0.
        """
        regions = self.locations() if location is None else (location,)
        if location is not None and location not in self.machines:
            raise ValueError(
                f"price override location {location!r}: no prices recorded; known: "
                f"{', '.join(self.locations())}"
            )
        machines = {r: dict(items) for r, items in self.machines.items()}
        accelerators = {r: dict(items) for r, items in self.accelerators.items()}
        for name, values in overrides.items():
            _check_override(name, values)
            if any(name in machines[r] for r in regions):
                table = machines
            elif any(name in accelerators[r] for r in regions):
                table = accelerators
            else:
                raise ValueError(
                    f"price override for {name!r}: not a machine type or accelerator with "
                    "recorded prices"
                )
            for region in regions:
                old = table[region].get(name, ItemPrice())
                table[region][name] = ItemPrice(
                    **{tier: _given(values, tier, old.tier(tier)) for tier in TIERS}
                )
        return replace(self, machines=_freeze(machines), accelerators=_freeze(accelerators))


def _check_override(name: str, values: Mapping[str, Any]) -> None:
    bad_keys = set(values) - set(TIERS)
    if bad_keys:
        raise ValueError(
            f"price override for {name!r}: unknown keys {sorted(bad_keys)}; "
            "expected 'on_demand' and/or 'spot'"
        )
    for key, amount in values.items():
        if amount is not None and (
            isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0
        ):
            raise ValueError(
                f"price override {name}.{key} = {amount!r}: expected a number >= 0 or None"
            )


def _given(values: Mapping[str, Any], tier: Tier, old: PriceFigure) -> PriceFigure:
    if tier not in values:
        return old
    amount = values[tier]
    return UNKNOWN if amount is None else PriceFigure(float(amount), "given", "override")


def _freeze(
    table: Mapping[str, Mapping[str, ItemPrice]],
) -> Mapping[str, Mapping[str, ItemPrice]]:
    return MappingProxyType({r: MappingProxyType(dict(items)) for r, items in table.items()})


@dataclass(frozen=True)
class _Rules:
    """What the loader needs to turn one entry into figures."""

    multiplier: float
    source_dates: Mapping[str, str]
    assumptions: Mapping[str, str]
    notes: Mapping[str, str]


def _text(value: Any) -> str:
    return "" if value is None else " ".join(str(value).split())


def _dated(date: str) -> str:
    return date if date == "undated" else f"as of {date}"


def _vertex_figure(vertex: Mapping[str, Any], rules: _Rules) -> PriceFigure:
    source = _text(vertex.get("source"))
    basis = str(vertex.get("basis", "quoted"))
    if basis not in ("quoted", "derived"):
        raise ValueError(f"vertex basis must be quoted or derived, got {basis!r}")
    return PriceFigure(
        amount=float(vertex["on_demand"]),
        basis="quoted" if basis == "quoted" else "derived",
        source=source,
        as_of=_text(vertex.get("as_of")) or rules.source_dates.get(source, "undated"),
        note=_text(vertex.get("note")),
    )


def _derived_figure(
    amount: float, source: str, assumption: str, note: str, rules: _Rules
) -> PriceFigure:
    return PriceFigure(
        amount=round(amount * rules.multiplier, 8),
        basis="derived",
        source=f"{source} x {rules.multiplier:g}".strip(),
        as_of=rules.source_dates.get(source, "undated"),
        assumption=assumption,
        note=note,
    )


def _item(name: str, entry: Mapping[str, Any] | None, rules: _Rules) -> ItemPrice:
    entry = entry or {}
    vertex = entry.get("vertex")
    compute = entry.get("compute_engine") or {}
    source = str(compute.get("source", ""))
    assume = entry.get("assume")
    assumed = [rules.assumptions[str(assume)]] if assume else []
    notes = [_text(entry.get("note")), _text(compute.get("note"))]
    notes += [text for pattern, text in rules.notes.items() if fnmatch.fnmatchcase(name, pattern)]
    note = " ".join(n for n in notes if n)
    figures: dict[str, PriceFigure] = {}
    for tier in TIERS:
        if tier == "on_demand" and vertex:
            figures[tier] = _vertex_figure(vertex, rules)
        elif compute.get(tier) is not None:
            tier_assumed = assumed + ([rules.assumptions["spot"]] if tier == "spot" else [])
            figures[tier] = _derived_figure(
                float(compute[tier]), source, " ".join(tier_assumed), note, rules
            )
        else:
            figures[tier] = UNKNOWN
    return ItemPrice(**figures)


def _parse(raw: Mapping[str, Any]) -> PriceBook:
    derivation = raw["derivation"]
    sources = raw.get("sources") or {}
    rules = _Rules(
        multiplier=float(derivation["multiplier"]),
        source_dates={k: _text(v.get("as_of")) or "undated" for k, v in sources.items()},
        assumptions={k: _text(v) for k, v in (derivation.get("assumptions") or {}).items()},
        notes={k: _text(v) for k, v in (derivation.get("notes") or {}).items()},
    )
    regions = raw["regions"]
    return PriceBook(
        version=int(raw["version"]),
        assembled_on=str(raw["assembled_on"]),
        currency=str(raw["currency"]),
        default_location=str(raw["default_location"]),
        multiplier=rules.multiplier,
        rule=f"{_text(derivation['rule'])} {_text(derivation.get('checked'))}".strip(),
        sources=MappingProxyType(
            {
                k: f"{_text(v['what'])}, " + _dated(rules.source_dates[k])
                for k, v in sorted(sources.items(), key=lambda kv: (len(kv[0]), kv[0]))
            }
        ),
        machines=_freeze(
            {
                region: {n: _item(n, e, rules) for n, e in (data.get("machines") or {}).items()}
                for region, data in regions.items()
            }
        ),
        accelerators=_freeze(
            {
                region: {n: _item(n, e, rules) for n, e in (data.get("accelerators") or {}).items()}
                for region, data in regions.items()
            }
        ),
        covering=tuple(raw.get("machines_covering_accelerators") or ()),
        covered=tuple(raw.get("machines_covered_by_accelerators") or ()),
    )


@functools.lru_cache(maxsize=4)
def _load_cached(path: Path) -> PriceBook:
    return load_yaml_table(path, what="price file", default=DEFAULT_PRICES_PATH, parse=_parse)


def load_prices(path: str | Path | None = None) -> PriceBook:
    """Loads the price book (cached per path).

    Args:
        path: A prices YAML file; defaults to the ``prices.yaml`` shipped with the package.

    Returns:
        The immutable price book.

    Raises:
        ValueError: When the file cannot be read or does not have the expected structure.
    """
    return _load_cached(Path(path or DEFAULT_PRICES_PATH).resolve())

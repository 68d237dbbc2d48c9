"""The price book read from a small price file written here: each figure's amount, label,
source, date, assumption and note, for each way an entry can state a price."""

from __future__ import annotations

from pathlib import Path

import pytest

from vertex_retrain.specs.prices import UNKNOWN, ItemPrice, PriceFigure, load_prices

BOOK = """
version: 3
assembled_on: "2026-12-01"
currency: EUR
default_location: europe-west4
derivation:
  multiplier: 1.2
  rule: >-
    Vertex = Compute Engine x 1.2.
  checked: >-
    Checked   once.
  assumptions:
    spot: Spot floats.
    tpu: TPU is a guess.
  notes:
    "big-*": Big note.
machines_covering_accelerators: ["big-*"]
machines_covered_by_accelerators: ["host-tpu"]
sources:
  S10:
    what: ten
  S2:
    what: two
    as_of: "2026-02-02"
  S1:
    what: one
    as_of: "2026-01-01"
regions:
  europe-west4:
    machines:
      quoted-dated:
        vertex: {on_demand: 1.5, source: S1, as_of: "2025-05-05", note: "  A   note. "}
      quoted-undated-source: {vertex: {on_demand: 2, source: S1}}
      quoted-unknown-source: {vertex: {on_demand: 2, source: S9}}
      vertex-derived: {vertex: {on_demand: 3, basis: derived, source: S2}}
      from-compute:
        compute_engine: {on_demand: 1.0, spot: 0.25, source: S2, note: Compute note.}
        note: Entry note.
      big-one:
        compute_engine: {on_demand: 2.0, source: S10}
        assume: tpu
      mixed:
        vertex: {on_demand: 4, source: S1}
        compute_engine: {on_demand: 9.0, spot: 0.5, source: S2}
      empty:
      unlisted-source: {compute_engine: {on_demand: 1.0, source: S7}}
      no-source: {compute_engine: {on_demand: 0.123456789}}
  asia-east1:
    accelerators:
      GPU: {compute_engine: {spot: 1.0, source: S1}}
"""


@pytest.fixture
def book_path(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(BOOK, encoding="utf-8")
    return path


def test_load_prices_reads_the_book_s_header(book_path: Path) -> None:
    book = load_prices(book_path)
    assert (book.version, book.assembled_on, book.currency) == (3, "2026-12-01", "EUR")
    assert (book.default_location, book.multiplier) == ("europe-west4", 1.2)
    assert book.rule == "Vertex = Compute Engine x 1.2. Checked once."
    # Short ids first, then by name; each with its date or "undated".
    assert list(book.sources.items()) == [
        ("S1", "one, as of 2026-01-01"),
        ("S2", "two, as of 2026-02-02"),
        ("S10", "ten, undated"),
    ]
    assert (book.covering, book.covered) == (("big-*",), ("host-tpu",))
    assert book.locations() == ("asia-east1", "europe-west4")
    assert book.covers_accelerators("big-two") and not book.covers_accelerators("small")
    assert book.covered_by_accelerators("host-tpu") and not book.covered_by_accelerators("host")


@pytest.mark.parametrize(
    ("machine", "on_demand", "spot"),
    [
        ("quoted-dated", PriceFigure(1.5, "quoted", "S1", "2025-05-05", note="A note."), UNKNOWN),
        ("quoted-undated-source", PriceFigure(2.0, "quoted", "S1", "2026-01-01"), UNKNOWN),
        ("quoted-unknown-source", PriceFigure(2.0, "quoted", "S9", "undated"), UNKNOWN),
        ("vertex-derived", PriceFigure(3.0, "derived", "S2", "2026-02-02"), UNKNOWN),
        (
            "from-compute",
            PriceFigure(1.2, "derived", "S2 x 1.2", "2026-02-02",
                        note="Entry note. Compute note."),
            PriceFigure(0.3, "derived", "S2 x 1.2", "2026-02-02", assumption="Spot floats.",
                        note="Entry note. Compute note."),
        ),
        (
            "big-one",
            PriceFigure(2.4, "derived", "S10 x 1.2", "undated", assumption="TPU is a guess.",
                        note="Big note."),
            UNKNOWN,
        ),
        (
            "mixed",  # Vertex's own on-demand price wins; Spot is derived
            PriceFigure(4.0, "quoted", "S1", "2026-01-01"),
            PriceFigure(0.6, "derived", "S2 x 1.2", "2026-02-02", assumption="Spot floats."),
        ),
        ("empty", UNKNOWN, UNKNOWN),
        ("unlisted-source", PriceFigure(1.2, "derived", "S7 x 1.2", "undated"), UNKNOWN),
        # Rounded to 8 decimals (0.1481481468 before).
        ("no-source", PriceFigure(0.14814815, "derived", "x 1.2", "undated"), UNKNOWN),
        ("not-in-the-book", UNKNOWN, UNKNOWN),
    ],
)  # fmt: skip
def test_load_prices_labels_each_figure_by_where_it_comes_from(
    book_path: Path, machine: str, on_demand: PriceFigure, spot: PriceFigure
) -> None:
    assert load_prices(book_path).machine("europe-west4", machine) == ItemPrice(on_demand, spot)


def test_load_prices_keeps_regions_apart(book_path: Path) -> None:
    book = load_prices(book_path)
    assert book.accelerator("asia-east1", "GPU") == ItemPrice(
        UNKNOWN, PriceFigure(1.2, "derived", "S1 x 1.2", "2026-01-01", assumption="Spot floats.")
    )
    assert book.accelerator("europe-west4", "GPU") == ItemPrice()
    assert book.machine("asia-east1", "quoted-dated") == ItemPrice()


def test_load_prices_refuses_a_vertex_basis_it_does_not_know(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(BOOK.replace("basis: derived", "basis: guessed"), encoding="utf-8")
    with pytest.raises(ValueError, match="vertex basis must be quoted or derived, got 'guessed'"):
        load_prices(path)


@pytest.mark.parametrize(
    ("figure", "label", "citation"),
    [
        (PriceFigure(1.0, "quoted", "S1", "2026-01-01"), "quoted", "quoted: S1, 2026-01-01"),
        (PriceFigure(1.0, "derived", "S2 x 1.2", ""), "derived", "derived: S2 x 1.2"),
        (PriceFigure(1.0, "derived", "", "", assumption="a"), "derived, assumed",
         "derived, assumed"),
        (PriceFigure(1.0, "given", "", "2026-03-03"), "given", "given: 2026-03-03"),
        (PriceFigure(1.0, "quoted", "", "", note="only a note"), "quoted", "quoted"),
        (UNKNOWN, "unknown", "unknown"),
    ],
)  # fmt: skip
def test_price_figure_label_and_citation(figure: PriceFigure, label: str, citation: str) -> None:
    assert (figure.label, figure.citation()) == (label, citation)


def test_price_figure_to_dict_holds_every_attribute() -> None:
    figure = PriceFigure(0.3, "derived", "S2 x 1.2", "2026-02-02", "Spot floats.", "n")
    assert figure.to_dict() == {
        "amount": 0.3, "basis": "derived", "label": "derived, assumed", "source": "S2 x 1.2",
        "as_of": "2026-02-02", "assumption": "Spot floats.", "note": "n",
    }  # fmt: skip

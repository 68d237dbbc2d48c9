"""What a BigQuery window query costs, and the line a summary or an estimate shows for it."""

from __future__ import annotations

import pytest

from vertex_retrain.specs.bigquery_cost import TIB, bigquery_query_cost, warehouse_line

PRICE = "at 6.25 USD/TiB on demand (assumed)"


@pytest.mark.parametrize(
    ("billed", "usd"), [(0, 0.0), (TIB, 6.25), (TIB // 2, 3.125), (2_000_000, 0.000011)]
)
def test_bigquery_query_cost_prices_bytes_at_the_on_demand_rate(billed: int, usd: float) -> None:
    assert bigquery_query_cost(billed) == usd  # rounded to 6 decimals


def test_warehouse_line_of_a_run_states_the_bytes_billed_and_their_price() -> None:
    assert warehouse_line({"bytes_billed": TIB, "max_bytes": 5}) == (
        f"BigQuery billed 1,099,511,627,776 bytes: 6.2500 USD {PRICE}"
    )


def test_warehouse_line_of_an_estimate_states_the_budget_or_its_absence() -> None:
    assert warehouse_line({"max_bytes": 2 * TIB}) == (
        "BigQuery window query: at most 2,199,023,255,552 bytes (source.max_bytes): at most "
        f"12.5000 USD a run {PRICE}"
    )
    unbounded = (
        "BigQuery window query: no source.max_bytes declared, so its cost has no bound "
        "(declare one: the extraction then refuses a larger scan)"
    )
    assert warehouse_line({"max_bytes": 0}) == unbounded
    assert warehouse_line({}) == unbounded

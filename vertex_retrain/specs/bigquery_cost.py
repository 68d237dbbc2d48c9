"""What a BigQuery source's window query costs: bytes billed at the on-demand price.

The run summary prices the bytes BigQuery billed (``extract_window``'s ``bytes_billed``); an
estimate prices the declared budget (``source.max_bytes``), the most a run may be billed, as
the extraction refuses a query that would scan more. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["BIGQUERY_PRICE", "TIB", "bigquery_query_cost", "warehouse_line"]

TIB = 2**40
"""Bytes in a tebibyte, BigQuery's billing unit."""

BIGQUERY_PRICE: dict[str, Any] = {
    "usd_per_tib": 6.25,
    "basis": "assumed",
    "source": (
        "BigQuery on-demand compute, US multi-region list price "
        "(cloud.google.com/bigquery/pricing); other locations, editions and reservations differ"
    ),
}
"""The on-demand query price the figures use, with where it comes from."""


def bigquery_query_cost(bytes_billed: int) -> float:
    """USD for ``bytes_billed`` at the on-demand price (:data:`BIGQUERY_PRICE`)."""
    return round(bytes_billed / TIB * float(BIGQUERY_PRICE["usd_per_tib"]), 6)


def warehouse_line(facts: Mapping[str, Any]) -> str:
    """One line for a summary or an estimate: the bytes, their price and its basis.

    Args:
        facts: ``bytes_billed`` (a run) or ``max_bytes`` (an estimate's budget; 0: none).
    """
    price = f"at {BIGQUERY_PRICE['usd_per_tib']} USD/TiB on demand ({BIGQUERY_PRICE['basis']})"
    if "bytes_billed" in facts:
        billed = int(facts["bytes_billed"])
        return f"BigQuery billed {billed:,} bytes: {bigquery_query_cost(billed):.4f} USD {price}"
    budget = int(facts.get("max_bytes") or 0)
    if not budget:
        return (
            "BigQuery window query: no source.max_bytes declared, so its cost has no bound "
            "(declare one: the extraction then refuses a larger scan)"
        )
    return (
        f"BigQuery window query: at most {budget:,} bytes (source.max_bytes): at most "
        f"{bigquery_query_cost(budget):.4f} USD a run {price}"
    )

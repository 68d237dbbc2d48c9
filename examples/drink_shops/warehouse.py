"""The drink shops' data in a warehouse: BigQuery on Vertex, its DuckDB stand-in locally.

The chain's purchases, drinks and shops are the tables ``drink_shops.transactions``,
``drink_shops.drinks`` and ``drink_shops.stores`` of its BigQuery project. The weekly pipeline
reads them through the same declaration on both backends (``WAREHOUSE_DECLARATION``: the
declaration of ``dataset.yaml`` with a BigQuery ``source``): on Vertex the window query runs in
BigQuery; locally DuckDB runs it on ``warehouse.duckdb`` beside the data, where the tables of
the same dataset and name stand in for BigQuery's.

    python examples/drink_shops/warehouse.py DATA_DIR   # writes DATA_DIR/warehouse.duckdb
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vertex_retrain.contracts.dataset import load_dataset_declaration, parse_dataset_declaration

HERE = Path(__file__).resolve().parent

DATASET = "drink_shops"
"""The BigQuery dataset (and the DuckDB schema standing in for it)."""

WAREHOUSE_SOURCE: dict[str, Any] = {
    "kind": "bigquery",
    "table": f"{DATASET}.transactions",  # in the pipeline's project
    "database": "warehouse.duckdb",  # locally: DuckDB reads drink_shops.transactions here
    "max_bytes": 50 * 2**30,  # about $0.31 a week at on-demand prices; the chain's 3 years fit
}

WAREHOUSE_DECLARATION: dict[str, Any] = parse_dataset_declaration(
    {**load_dataset_declaration(HERE / "dataset.yaml"), "source": WAREHOUSE_SOURCE}
).to_dict()
"""``dataset.yaml`` read from the warehouse: pass it as ``dataset_declaration``."""


def load_duckdb(data_dir: str | Path) -> Path:
    """Writes the Parquet folder's tables into ``<data_dir>/warehouse.duckdb`` (replaced whole).

    Args:
        data_dir: The dataset folder ``trainer.data generate`` wrote.

    Returns:
        The database file.
    """
    import duckdb

    root = Path(data_dir)
    target = root / WAREHOUSE_SOURCE["database"]
    fd, temporary = tempfile.mkstemp(prefix=".warehouse.", suffix=".duckdb", dir=root)
    os.close(fd)
    os.unlink(temporary)  # DuckDB creates the file itself
    try:
        with duckdb.connect(temporary) as connection:
            connection.execute(f"CREATE SCHEMA {DATASET}")
            for table, files in (
                ("transactions", root / "transactions" / "*.parquet"),
                ("drinks", root / "drinks.parquet"),
                ("stores", root / "stores.parquet"),
            ):
                connection.execute(
                    f"CREATE TABLE {DATASET}.{table} AS SELECT * FROM read_parquet(?)",
                    [str(files)],
                )
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)
        Path(temporary + ".wal").unlink(missing_ok=True)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``warehouse.py DATA_DIR``: loads the folder's Parquet files into its DuckDB file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", help="the dataset folder (trainer.data generate's output)")
    print(load_duckdb(parser.parse_args(argv).data_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Sample declarations the tests share: a daily sales table and an RMSE rule."""

from __future__ import annotations

from typing import Any

DATASET: dict[str, Any] = {
    "format": "vertex-retrain-dataset/v1",
    "table": {
        "folder": "sales",
        "time_column": "day",
        "period": "day",
        "columns": {"day": "date32[day]", "store": "string", "item": "string", "units": "double"},
        "key_columns": ["day", "store", "item"],
        "distinct_columns": ["item"],
        "group_column": "store",
    },
    "dimensions": {
        "items": {
            "file": "items.parquet",
            "key": "item",
            "columns": {"item": "string", "family": "string"},
        }
    },
    "mix": {"category_column": "family", "dimension": "items"},
}


EVALUATION: dict[str, Any] = {
    "primary": "rmse",
    "metrics": {"rmse": "lower", "coverage": "higher"},
    "min_improvement": 0.1,
    "guardrails": {"coverage": 0.02},
    "floors": {"rmse": 40},
    "reference": "seasonal_naive",
}

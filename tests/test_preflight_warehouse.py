"""Preflight of a BigQuery source: the table exists, is readable, and is in the pipeline's region.

Fakes at the client boundary: no Google API is called.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions
from google.cloud import bigquery

from tests.examples import DRINK_SHOPS, example_module
from vertex_retrain.backends.vertex.preflight_warehouse import (
    BigQueryTableChecker,
    TableFacts,
    warehouse_problems,
)
from vertex_retrain.cli import preflight as preflight_module

WAREHOUSE = example_module(DRINK_SHOPS, "warehouse")
DECLARATION = WAREHOUSE.WAREHOUSE_DECLARATION
IMAGE = "europe-west4-docker.pkg.dev/drink-shops/ml/vertex-retrain:1"


@dataclass
class FakeTables:
    facts: dict[str, TableFacts | None]
    asked: list[str] = field(default_factory=list)

    def bigquery_table(self, table: str) -> TableFacts | None:
        self.asked.append(table)
        return self.facts.get(table, TableFacts(True, True, "europe-west4"))


def _codes(problems: list[Any]) -> list[tuple[str, str]]:
    return [(p.severity, p.code) for p in problems]


@pytest.mark.parametrize(
    ("facts", "codes"),
    [
        (TableFacts(True, True, "europe-west4"), []),
        (TableFacts(False), [("error", "bigquery-table-missing")]),
        (TableFacts(True, False, "europe-west4"), [("error", "bigquery-table-unreadable")]),
        (TableFacts(True, True, "us"), [("error", "bigquery-region")]),
        (None, [("warning", "unchecked")]),
    ],
)
def test_preflight_warehouse_table_exists_is_readable_and_in_the_region(
    facts: TableFacts | None, codes: list[tuple[str, str]]
) -> None:
    table = "drink-shops.drink_shops.transactions"
    checker = FakeTables({table: facts})
    problems = warehouse_problems(checker, DECLARATION, "europe-west4", "drink-shops")
    assert _codes(problems) == codes
    # The table named without a project is in the pipeline's; the dimensions are checked too.
    assert checker.asked == [
        table,
        "drink-shops.drink_shops.drinks",
        "drink-shops.drink_shops.stores",
    ]


def test_preflight_warehouse_ignores_a_parquet_folder_source() -> None:
    parquet = {key: value for key, value in DECLARATION.items() if key != "source"}
    assert warehouse_problems(FakeTables({}), parquet, "europe-west4", "p") == []


@dataclass
class FakeClient:
    found: Any
    refuse_query: Exception | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def get_table(self, table: str) -> Any:
        self.calls.append(("get_table", table))
        if isinstance(self.found, Exception):
            raise self.found
        return self.found

    def query(self, sql: str, job_config: bigquery.QueryJobConfig, location: str) -> None:
        self.calls.append(("query", (sql, job_config.dry_run, location)))
        if self.refuse_query is not None:
            raise self.refuse_query


def _table(location: str) -> bigquery.Table:
    table = bigquery.Table("p.d.t")
    table._properties["location"] = location
    return table


@pytest.mark.parametrize(
    ("client", "facts"),
    [
        (FakeClient(_table("EU")), TableFacts(True, True, "eu")),
        (FakeClient(exceptions.NotFound("no")), TableFacts(False)),
        (FakeClient(_table("US"), exceptions.Forbidden("no")), TableFacts(True, False, "us")),
        (FakeClient(exceptions.InternalServerError("down")), None),
    ],
)
def test_preflight_warehouse_checker_asks_tables_get_then_a_dry_run(
    client: FakeClient, facts: TableFacts | None
) -> None:
    assert BigQueryTableChecker("p", client=client).bigquery_table("p.d.t") == facts
    if facts is not None and facts.exists:
        sql, dry_run, location = client.calls[1][1]
        assert sql == "SELECT * FROM `p.d.t` LIMIT 1" and dry_run is True
        assert location == facts.location.upper()


def test_preflight_with_project_checks_the_bigquery_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "declaration.json"
    path.write_text(json.dumps(DECLARATION))
    args = argparse.Namespace(
        pipelines=[f"{DRINK_SHOPS / 'pipelines.py'}:weekly"],
        component_image=IMAGE,
        param=[f"dataset_declaration=@{path}"],
        project="drink-shops",
        location="europe-west4",
        pipeline_root="gs://drink-shops-ml/root",
        service_account="retrain@drink-shops.iam.gserviceaccount.com",
        json=True,
    )

    class Checker(FakeTables):
        def image_exists(self, image_uri: str) -> bool:
            return True

        def bucket_location(self, bucket: str) -> str:
            return "europe-west4"

        def service_account_exists(self, email: str) -> bool:
            return True

        def bucket_permissions(self, bucket: str, permissions: Any) -> frozenset[str]:
            return frozenset(permissions)

    checker = Checker({"drink-shops.drink_shops.transactions": TableFacts(True, True, "us")})
    preflight_module.cli_preflight(args, checker_factory=lambda project: checker)
    (result,) = json.loads(capsys.readouterr().out)
    assert "bigquery-region" in [p["code"] for p in result["problems"]]

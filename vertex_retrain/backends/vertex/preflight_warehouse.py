"""Preflight of a BigQuery source, with credentials: the table exists, the run can read it, and
it is where the pipeline runs.

``extract_window`` queries the table in the pipeline's project and region, and BigQuery runs a
query only where its data is: a table in another location (a multi-region such as ``US``
included) fails the run at its first step. The check goes through the official client
(:class:`BigQueryTableChecker`); tests pass a fake with the same method.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vertex_retrain.specs.problems import Problem, error, warning

__all__ = [
    "BigQueryTableChecker",
    "TableChecker",
    "TableFacts",
    "warehouse_problems",
]

FIELD = "--param dataset_declaration"


@dataclass(frozen=True)
class TableFacts:
    """What BigQuery says of a table, as these credentials see it.

    Attributes:
        exists: False when BigQuery has no such table (or hides it from these credentials).
        readable: Whether a query may read it (a dry run succeeds); None: could not tell.
        location: Its dataset's location, lowercase (``europe-west4``, ``us``).
    """

    exists: bool
    readable: bool | None = None
    location: str = ""


class TableChecker(Protocol):
    """What the warehouse preflight asks."""

    def bigquery_table(self, table: str) -> TableFacts | None:
        """The table's facts; None when BigQuery could not be asked."""
        ...


class BigQueryTableChecker:
    """Asks BigQuery through the official client (``tables.get``, then a dry-run query).

    Args:
        project: The pipeline's project (the dry run is a job there, billed nothing).
        client: A ``google.cloud.bigquery.Client`` (a test's fake); built on first use.
    """

    def __init__(self, project: str, client: Any = None) -> None:
        self.project = project
        self._client = client

    def bigquery_table(self, table: str) -> TableFacts | None:
        """``tables.get`` for existence and location; a dry run for read access."""
        from google.api_core import exceptions
        from google.cloud import bigquery

        if self._client is None:
            self._client = bigquery.Client(project=self.project)
        try:
            found = self._client.get_table(table)
        except exceptions.NotFound:
            return TableFacts(exists=False)
        except exceptions.GoogleAPICallError:
            return None
        location = str(found.location or "").lower()
        config = bigquery.QueryJobConfig(dry_run=True, use_query_cache=False)
        try:
            self._client.query(
                f"SELECT * FROM `{table}` LIMIT 1", job_config=config, location=found.location
            )
        except exceptions.Forbidden:
            return TableFacts(exists=True, readable=False, location=location)
        except exceptions.GoogleAPICallError:
            return TableFacts(exists=True, readable=None, location=location)
        return TableFacts(exists=True, readable=True, location=location)


def warehouse_problems(
    checker: Any, declaration: Mapping[str, Any], region: str, project: str
) -> list[Problem]:
    """Errors for a BigQuery source the run could not read in ``region``; [] for other sources.

    Args:
        checker: A :class:`TableChecker` (a checker without ``bigquery_table`` is "could not
            check").
        declaration: The run's dataset declaration (its JSON object).
        region: The pipeline's region.
        project: The pipeline's project (a table named without one is there).
    """
    from vertex_retrain.contracts.dataset import (
        DatasetDeclarationError,
        parse_dataset_declaration,
    )

    try:
        source = parse_dataset_declaration(declaration).source
    except DatasetDeclarationError:
        return []  # the offline checks report the declaration itself
    if source.kind != "bigquery":
        return []
    tables = [source.table, *source.dimension_tables.values()]
    problems: list[Problem] = []
    for table in tables:
        named = table if table.count(".") == 2 else f"{project}.{table}"
        facts = checker.bigquery_table(named) if hasattr(checker, "bigquery_table") else None
        if facts is None:
            problems.append(
                warning(FIELD, named, "Could not check the BigQuery table.", code="unchecked")
            )
        elif not facts.exists:
            problems.append(
                error(
                    FIELD,
                    named,
                    "BigQuery has no such table (or hides it from these "
                    "credentials): the run's extract-window step would fail.",
                    [
                        "bq show " + named.replace(".", ":", 1),
                        "source.table of an existing table or view",
                    ],
                    code="bigquery-table-missing",
                )
            )
        elif facts.readable is False:
            problems.append(
                error(
                    FIELD,
                    named,
                    "These credentials cannot query the table: the pipeline's "
                    "service account needs the same access.",
                    [
                        "roles/bigquery.dataViewer on its dataset and roles/bigquery.jobUser on "
                        "the project"
                    ],
                    code="bigquery-table-unreadable",
                )
            )
        elif facts.location and facts.location != region.lower():
            problems.append(
                error(
                    FIELD,
                    named,
                    f"The table is in {facts.location}, the pipeline in "
                    f"{region}: BigQuery runs a query only where its data is, so the run's "
                    "query in the pipeline's region would not find it.",
                    [
                        f"a copy of the dataset in {region}",
                        f"--location {facts.location} when that is a Vertex region",
                    ],
                    code="bigquery-region",
                )
            )
    return problems

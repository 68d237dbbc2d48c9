"""The declared contracts: validation errors name the field, and both sides agree on them.

The library and the reference trainer never import each other, so the contract's names are
written on both sides; these tests (which may import both) fail when one side drifts.
"""

from __future__ import annotations

import math
import subprocess
import sys
from typing import Any

import pytest

from trainer.data import SCHEMA, drinks_table, stores_table
from trainer.evaluate import METRICS_FORMAT as TRAINER_METRICS_FORMAT
from trainer.evaluate import build_parser, finite_metrics
from trainer.split import MANIFEST_FORMAT as TRAINER_MANIFEST_FORMAT
from trainer.split import MANIFEST_NAME as TRAINER_MANIFEST_NAME
from trainer.world import WorldConfig, build_world
from vertex_retrain.contracts.dataset_manifest import (
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    WeekFile,
    content_hash,
    plan_time_split,
)
from vertex_retrain.contracts.evaluation import (
    METRICS_FORMAT,
    EvaluationContractError,
    evaluation_args,
    parse_metrics,
)
from vertex_retrain.contracts.transactions import (
    DRINKS,
    STORES,
    TRANSACTIONS,
    Column,
    SchemaMismatchError,
    TableContract,
)

GOOD: dict[str, Any] = {
    "format": METRICS_FORMAT,
    "candidate": {"ndcg_at_10": 0.31, "recall_at_10": 0.5},
    "champion": {"ndcg_at_10": 0.3, "recall_at_10": 0.49},
    "baseline": {"ndcg_at_10": 0.2},
}


def _parse(payload: Any, expect_champion: bool = True) -> Any:
    return parse_metrics(payload, expect_champion=expect_champion, source="gs://b/m.json")


# --- evaluation ---------------------------------------------------------------------------


def test_parse_metrics_reads_a_conforming_file_as_floats() -> None:
    parsed = _parse({**GOOD, "candidate": {"ndcg_at_10": 1}, "extra": "ignored"})
    assert parsed.candidate == {"ndcg_at_10": 1.0} and isinstance(
        parsed.candidate["ndcg_at_10"], float
    )
    assert parsed.champion == GOOD["champion"] and parsed.baseline == GOOD["baseline"]
    without = _parse({"format": METRICS_FORMAT, "candidate": {"x": 0.1}}, expect_champion=False)
    assert without.champion is None and without.baseline == {}


@pytest.mark.parametrize(
    ("payload", "expect_champion", "message"),
    [
        ([1, 2], True, "field the file is [1, 2]; expected a JSON object"),
        ({**GOOD, "format": "v0"}, True, f"field format is 'v0'; expected '{METRICS_FORMAT}'"),
        ({"format": METRICS_FORMAT, "champion": None}, False, "field candidate is None"),
        ({**GOOD, "candidate": {}}, True, "field candidate is {}; expected at least one metric"),
        ({**GOOD, "candidate": [0.3]}, True, "field candidate is [0.3]; expected an object"),
        ({**GOOD, "candidate": {"ndcg_at_10": math.nan}}, True, "candidate.ndcg_at_10 is nan"),
        ({**GOOD, "champion": {"ndcg_at_10": math.inf}}, True, "champion.ndcg_at_10 is inf"),
        ({**GOOD, "baseline": {"ndcg_at_10": "0.2"}}, True, "baseline.ndcg_at_10 is '0.2'"),
        ({**GOOD, "candidate": {"ndcg_at_10": True}}, True, "candidate.ndcg_at_10 is True"),
        ({**GOOD, "champion": None}, True, "--champion-model-dir was given"),
        (GOOD, False, "no --champion-model-dir was given"),
    ],
)
def test_parse_metrics_refuses_a_broken_file_naming_the_field(
    payload: Any, expect_champion: bool, message: str
) -> None:
    with pytest.raises(EvaluationContractError) as error:
        _parse(payload, expect_champion)
    assert message in str(error.value)
    assert str(error.value).startswith("gs://b/m.json: field ")


def test_evaluation_args_are_what_the_reference_entry_point_parses() -> None:
    args = evaluation_args(
        candidate_model_dir="gs://b/c",
        champion_model_dir="-odd",
        data="gs://b/d",
        metrics_output="gs://b/m.json",
    )
    parsed = build_parser().parse_args(args)
    assert (parsed.candidate_model_dir, parsed.champion_model_dir) == ("gs://b/c", "-odd")
    assert (parsed.data, parsed.metrics_output) == ("gs://b/d", "gs://b/m.json")
    no_champion = evaluation_args(
        candidate_model_dir="c", champion_model_dir=None, data="d", metrics_output="m"
    )
    assert build_parser().parse_args(no_champion).champion_model_dir == ""
    assert TRAINER_METRICS_FORMAT == METRICS_FORMAT


def test_reference_entry_point_leaves_out_non_finite_metrics() -> None:
    kept = finite_metrics({"ndcg_at_10": 0.3, "ndcg_at_10_lift": math.inf}, "candidate")
    assert kept == {"ndcg_at_10": 0.3}
    _parse({**GOOD, "candidate": kept})


# --- transactions and the manifest ------------------------------------------------------------


def test_table_contract_lists_every_mismatch_with_found_and_expected_types() -> None:
    contract = TableContract("t", (Column("a", "int32"), Column("b", "string")))
    with pytest.raises(SchemaMismatchError) as error:
        contract.check({"a": "int64", "c": "bool"}, where="gs://b/t.parquet")
    message = str(error.value)
    assert "gs://b/t.parquet does not match the t contract" in message
    assert "column 'a' has type int64; the t contract expects int32" in message
    assert "column 'b' is missing; the t contract expects it with type string" in message
    contract.check({"a": "int32", "b": "string", "extra": "bool"}, where="ok")


def test_declared_tables_are_what_the_reference_generator_writes() -> None:
    world = build_world(WorldConfig(members=20, stores=5, weeks=2, seed=0))
    for contract, schema in (
        (TRANSACTIONS, SCHEMA),
        (DRINKS, drinks_table(world).schema),
        (STORES, stores_table(world).schema),
    ):
        assert contract.problems({f.name: str(f.type) for f in schema}) == [], contract.name
    assert (MANIFEST_FORMAT, MANIFEST_NAME) == (TRAINER_MANIFEST_FORMAT, TRAINER_MANIFEST_NAME)


def test_plan_time_split_holds_out_the_last_weeks_with_every_file_of_a_week() -> None:
    files = [
        WeekFile("transactions/w1-b.parquet", 1, 5, "b"),
        WeekFile("transactions/w0.parquet", 0, 10, "a"),
        WeekFile("transactions/w1-a.parquet", 1, 7, "c"),
        WeekFile("transactions/w2.parquet", 2, 3, "d"),
    ]
    catalogue = {"drinks.parquet": "e", "stores.parquet": "f"}
    manifest = plan_time_split("gs://b/data", files, catalogue, validation_weeks=2)
    assert manifest["train"] == {"weeks": [0], "files": ["transactions/w0.parquet"], "rows": 10}
    assert manifest["validation"] == {
        "weeks": [1, 2],
        "files": [
            "transactions/w1-a.parquet",
            "transactions/w1-b.parquet",
            "transactions/w2.parquet",
        ],
        "rows": 15,
    }
    assert set(manifest["sha256"]) == {f.path for f in files} | set(catalogue)
    assert manifest["content_hash"] == content_hash(
        {**catalogue, **{f.path: f.sha256 for f in files}}
    )
    with pytest.raises(ValueError, match="between 1 and 2 for 3 weeks of data, got 3"):
        plan_time_split("gs://b/data", files, catalogue, validation_weeks=3)


# --- the library imports no model code ------------------------------------------------------


def test_library_imports_neither_trainer_nor_torch() -> None:
    code = """
import importlib, pkgutil, sys
import vertex_retrain, vertex_retrain.components, vertex_retrain.pipelines
for package in (vertex_retrain, vertex_retrain.components, vertex_retrain.pipelines):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
from vertex_retrain.steps import evaluate, prepare
loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("trainer", "torch"))
print(loaded)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"

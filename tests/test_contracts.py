"""The declared contracts: validation errors name the field, and both sides agree on them.

The library and the reference trainer never import each other, so the contract's names are
written on both sides; these tests (which may import both) fail when one side drifts.
"""

from __future__ import annotations

import datetime as dt
import math
import subprocess
import sys
from typing import Any

import pytest

from tests.declarations import DATASET
from trainer.evaluate import METRICS_FORMAT as TRAINER_METRICS_FORMAT
from trainer.evaluate import build_parser, finite_metrics
from trainer.split import MANIFEST_FORMAT as TRAINER_MANIFEST_FORMAT
from trainer.split import MANIFEST_NAME as TRAINER_MANIFEST_NAME
from vertex_retrain.contracts.dataset import parse_dataset_declaration
from vertex_retrain.contracts.dataset_manifest import (
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    PeriodFile,
    content_hash,
    plan_time_split,
    training_manifest,
)
from vertex_retrain.contracts.evaluation import (
    METRICS_FORMAT,
    EvaluationContractError,
    evaluation_args,
    parse_metrics,
)

GOOD: dict[str, Any] = {
    "format": METRICS_FORMAT,
    "candidate": {"ndcg_at_10": 0.31, "recall_at_10": 0.5},
    "champion": {"ndcg_at_10": 0.3, "recall_at_10": 0.49},
    "references": {"popularity": {"ndcg_at_10": 0.2}},
}


def _parse(payload: Any, expect_champion: bool = True) -> Any:
    return parse_metrics(payload, expect_champion=expect_champion, source="gs://b/m.json")


# --- evaluation ---------------------------------------------------------------------------


def test_parse_metrics_reads_a_conforming_file_as_floats() -> None:
    parsed = _parse({**GOOD, "candidate": {"ndcg_at_10": 1}, "extra": "ignored"})
    assert parsed.candidate == {"ndcg_at_10": 1.0} and isinstance(
        parsed.candidate["ndcg_at_10"], float
    )
    assert parsed.champion == GOOD["champion"] and parsed.references == GOOD["references"]
    without = _parse({"format": METRICS_FORMAT, "candidate": {"x": 0.1}}, expect_champion=False)
    assert without.champion is None and without.references == {}


def test_parse_metrics_reads_a_baseline_as_the_reference_of_that_name() -> None:
    legacy = {k: v for k, v in GOOD.items() if k != "references"} | {"baseline": {"x": 0.2}}
    assert _parse(legacy).references == {"baseline": {"x": 0.2}}


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
        ({**GOOD, "references": {"p": {"ndcg_at_10": "0.2"}}}, True, "references.p.ndcg_at_10 is"),
        ({**GOOD, "references": [1]}, True, "field references is [1]; expected an object"),
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


# --- the manifest ---------------------------------------------------------------------------


def test_plan_time_split_parts_the_periods_in_time_with_every_file_of_a_period() -> None:
    day = dt.date(2026, 3, 2)
    files = [
        PeriodFile("sales/d1-b.parquet", day + dt.timedelta(days=1), 5, "b"),
        PeriodFile("sales/d0.parquet", day, 10, "a"),
        PeriodFile("sales/d1-a.parquet", day + dt.timedelta(days=1), 7, "c"),
        PeriodFile("sales/d2.parquet", day + dt.timedelta(days=2), 3, "d"),
    ]
    dimensions = {"items.parquet": "e"}
    declaration = parse_dataset_declaration(DATASET)
    manifest = plan_time_split("gs://b/data", declaration, files, dimensions, 1, 1)
    assert manifest["train"] == {
        "periods": ["2026-03-02"],
        "files": ["sales/d0.parquet"],
        "rows": 10,
    }
    assert manifest["selection"] == {
        "periods": ["2026-03-03"],
        "files": ["sales/d1-a.parquet", "sales/d1-b.parquet"],
        "rows": 12,
    }
    assert manifest["gate"] == {"periods": ["2026-03-04"], "files": ["sales/d2.parquet"], "rows": 3}
    no_selection = plan_time_split("gs://b/data", declaration, files, dimensions, 0, 2)
    assert no_selection["selection"] == {"periods": [], "files": [], "rows": 0}
    assert no_selection["gate"]["periods"] == ["2026-03-03", "2026-03-04"]
    assert manifest["dimensions"] == {"items": "items.parquet"} and manifest["period"] == "day"
    assert manifest["declaration"] == declaration.to_dict()
    assert set(manifest["sha256"]) == {f.path for f in files} | set(dimensions)
    assert manifest["content_hash"] == content_hash(
        {**dimensions, **{f.path: f.sha256 for f in files}}
    )
    assert (MANIFEST_FORMAT, MANIFEST_NAME) == (TRAINER_MANIFEST_FORMAT, TRAINER_MANIFEST_NAME)


@pytest.mark.parametrize(
    ("selection", "gate", "problem"),
    [
        (0, 1, ""),
        (1, 1, ""),
        (0, 2, ""),
        (1, 2, "must leave a training period of the 3 period(s) in the window: at most 2"),
        (0, 3, "must leave a training period"),
        (1, 0, "gate_periods must be at least 1"),
        (-1, 1, "selection_periods must be 0 or more"),
    ],
)
def test_plan_time_split_needs_a_training_and_a_gate_period(
    selection: int, gate: int, problem: str
) -> None:
    day = dt.date(2026, 3, 2)
    files = [PeriodFile(f"sales/{i}.parquet", day + dt.timedelta(days=i), 1, "x") for i in range(3)]
    declaration = parse_dataset_declaration(DATASET)
    if not problem:
        manifest = plan_time_split("gs://b", declaration, files, {}, selection, gate)
        assert len(manifest["gate"]["periods"]) == gate
        assert len(manifest["train"]["periods"]) == 3 - selection - gate
        return
    with pytest.raises(ValueError) as error:
        plan_time_split("gs://b", declaration, files, {}, selection, gate)
    assert problem in str(error.value)


def test_training_manifest_withholds_the_gate_and_hashes_what_is_left() -> None:
    day = dt.date(2026, 3, 2)
    files = [
        PeriodFile(f"sales/{i}.parquet", day + dt.timedelta(days=i), 1, f"{i}") for i in range(3)
    ]
    manifest = plan_time_split("gs://b", parse_dataset_declaration(DATASET), files, {"i": "e"})
    training = training_manifest(manifest)
    assert "gate" not in training and training["withheld"] == {"gate": ["2026-03-04"]}
    assert training["sha256"] == {"sales/0.parquet": "0", "sales/1.parquet": "1", "i": "e"}
    assert training["content_hash"] == content_hash(training["sha256"])
    assert {k: v for k, v in manifest.items() if k not in ("gate", "sha256", "content_hash")} == {
        k: v for k, v in training.items() if k not in ("withheld", "sha256", "content_hash")
    }


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

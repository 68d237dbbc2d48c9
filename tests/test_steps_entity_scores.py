"""The per-entity scores file: its contract, how evaluate_model reads it, the intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vertex_retrain.contracts.evaluation import EvaluationContractError, parse_metrics
from vertex_retrain.contracts.evaluation_declaration import parse_evaluation_declaration
from vertex_retrain.contracts.evaluation_scores import ScoresContractError, check_scores
from vertex_retrain.steps.entity_scores import primary_intervals, read_entity_scores

ENTITIES = 40
WEIGHT = np.arange(1, ENTITIES + 1, dtype=float)
CANDIDATE = np.linspace(0.4, 0.8, ENTITIES)
CHAMPION = CANDIDATE - 0.05
USUAL = CANDIDATE - 0.1


def _mean(values: np.ndarray) -> float:
    return float(np.sum(WEIGHT * values) / np.sum(WEIGHT))


def _columns(**changes: Any) -> dict[str, Any]:
    columns: dict[str, Any] = {
        "entity": np.arange(100, 100 + ENTITIES),
        "weight": WEIGHT,
        "candidate": CANDIDATE,
        "champion": CHAMPION,
        "reference:usual": USUAL,
    }
    columns.update(changes)
    return {name: value for name, value in columns.items() if value is not None}


def _expected() -> dict[str, float]:
    return {
        "candidate": _mean(CANDIDATE),
        "champion": _mean(CHAMPION),
        "reference:usual": _mean(USUAL),
    }


def test_check_scores_sorts_by_entity_and_checks_every_role_against_the_metrics() -> None:
    order = np.random.default_rng(0).permutation(ENTITIES)
    shuffled = {name: np.asarray(values)[order] for name, values in _columns().items()}
    scores = check_scores(shuffled, expect_champion=True, metric_values=_expected(), source="s")
    assert list(scores.entity) == list(range(100, 100 + ENTITIES))
    assert scores.mean("candidate") == pytest.approx(_expected()["candidate"])
    assert set(scores.roles) == {"candidate", "champion", "reference:usual"}
    names = check_scores(
        _columns(entity=np.array([f"m{i:02d}" for i in range(ENTITIES)]), weight=None),
        expect_champion=True,
        metric_values={},
        source="s",
    )
    assert names.entity[0] == "m00" and (names.weight == 1).all()


@pytest.mark.parametrize(
    ("changes", "expect_champion", "message"),
    [
        ({"entity": None}, True, "column entity is None; expected a column of entity ids"),
        (
            {"entity": np.zeros(ENTITIES, dtype=int)},
            True,
            "column entity is 0; expected each entity once",
        ),
        ({"entity": np.array([1.5] * ENTITIES)}, True, "expected integers or strings"),
        ({"weight": np.zeros(ENTITIES)}, True, "column weight is 0.0; expected positive weights"),
        ({"candidate": None}, True, "column candidate is None; expected the candidate's metric"),
        ({"candidate": np.full(ENTITIES, np.nan)}, True, "is 'a null or NaN'; expected finite"),
        ({"candidate": np.array(["x"] * ENTITIES)}, True, "expected numbers with no null"),
        ({"candidate": np.ones(3)}, True, "column candidate is '3 value(s)'; expected 40"),
        ({"champion": None}, True, "column champion is None; expected the champion's metric"),
        ({}, False, "column champion is 'present'; expected no champion column"),
        ({"extra": np.ones(ENTITIES)}, True, "column extra is 'an unknown column'"),
        ({"candidate": CANDIDATE + 0.01}, True, "expected 0.6"),  # disagrees with the metrics
    ],
)
def test_check_scores_refuses_a_file_that_breaks_the_contract(
    changes: dict[str, Any], expect_champion: bool, message: str
) -> None:
    with pytest.raises(ScoresContractError) as error:
        check_scores(
            _columns(**changes),
            expect_champion=expect_champion,
            metric_values=_expected(),
            source="gs://b/e/scores.parquet",
        )
    assert message in str(error.value) and "gs://b/e/scores.parquet" in str(error.value)


def test_check_scores_needs_two_entities() -> None:
    one = {name: np.asarray(values)[:1] for name, values in _columns().items()}
    with pytest.raises(ScoresContractError, match="at least 2 entities"):
        check_scores(one, expect_champion=True, metric_values={}, source="s")


def _metrics_file(**scores: Any) -> dict[str, Any]:
    return {
        "format": "vertex-retrain-evaluation-metrics/v1",
        "candidate": {"score": _expected()["candidate"]},
        "champion": {"score": _expected()["champion"]},
        "references": {"usual": {"score": _expected()["reference:usual"]}},
        **({"scores": scores} if scores else {}),
    }


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ({"file": "../x.parquet", "metric": "score"}, "scores.file is '../x.parquet'"),
        ({"file": "a/b.parquet", "metric": "score"}, "a file name beside the metrics file"),
        ({"file": "s.parquet"}, "scores.metric is None"),
        ({"metric": "score"}, "scores.file is None"),
    ],
)
def test_metrics_file_scores_entry_names_a_file_beside_it(
    scores: dict[str, Any], message: str
) -> None:
    with pytest.raises(EvaluationContractError, match=message.replace(".", r"\.")):
        parse_metrics(_metrics_file(**scores), expect_champion=True, source="m")


def _write(folder: Path, **changes: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(_columns(**changes)), folder / "scores.parquet")


def test_read_entity_scores_reads_the_named_file_and_bootstraps_champion_and_reference(
    tmp_path: Path,
) -> None:
    _write(tmp_path)
    metrics = parse_metrics(
        _metrics_file(file="scores.parquet", metric="score"), expect_champion=True, source="m"
    )
    scores = read_entity_scores("local", str(tmp_path), metrics, "score")
    assert scores is not None
    declaration = parse_evaluation_declaration(
        {"primary": "score", "metrics": {"score": "higher"}, "confidence": {"resamples": 200}}
    )
    intervals = primary_intervals(scores, declaration, "usual")
    assert set(intervals) == {"champion", "reference:usual"}
    assert intervals["champion"].point == pytest.approx(0.05)
    assert intervals["reference:usual"].low == pytest.approx(0.1)
    assert intervals["champion"].resamples == 200
    # Another metric in the file than the primary one: no interval, nothing read.
    assert read_entity_scores("local", str(tmp_path), metrics, "recall") is None
    assert primary_intervals(scores, declaration, "") == {"champion": intervals["champion"]}


def test_read_entity_scores_refuses_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    metrics = parse_metrics(
        _metrics_file(file="scores.parquet", metric="score"), expect_champion=True, source="m"
    )
    with pytest.raises(FileNotFoundError, match=r"names the scores file 'scores\.parquet'"):
        read_entity_scores("local", str(tmp_path), metrics, "score")
    (tmp_path / "scores.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match="is not a Parquet file"):
        read_entity_scores("local", str(tmp_path), metrics, "score")
    _write(tmp_path, entity=pa.array([None, *range(1, ENTITIES)], pa.int64()))
    with pytest.raises(ScoresContractError, match="column entity"):
        read_entity_scores("local", str(tmp_path), metrics, "score")
    assert read_entity_scores("local", str(tmp_path), parse_metrics(
        _metrics_file(), expect_champion=True, source="m"), "score") is None  # fmt: skip

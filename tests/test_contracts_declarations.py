"""The dataset and evaluation declarations: what parses, and errors that name the field, the
value and what would work."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from tests.declarations import DATASET, EVALUATION
from vertex_retrain.contracts.dataset import (
    Column,
    DatasetDeclarationError,
    SchemaMismatchError,
    check_schema,
    load_dataset_declaration,
    parse_dataset_declaration,
)
from vertex_retrain.contracts.evaluation_declaration import (
    EvaluationDeclarationError,
    load_evaluation_declaration,
    parse_evaluation_declaration,
)


def _with(path: str, value: Any) -> dict[str, Any]:
    """DATASET with the field at dotted ``path`` set to ``value`` (None: removed)."""
    changed = copy.deepcopy(DATASET)
    *parents, last = path.split(".")
    node = changed
    for part in parents:
        node = node[part]
    if value is None:
        node.pop(last)
    else:
        node[last] = value
    return changed


def test_parse_dataset_declaration_reads_every_part_and_round_trips() -> None:
    declaration = parse_dataset_declaration(DATASET)
    assert declaration.table.schema()["day"] == "date32[day]"
    assert declaration.table.period_days == 1
    assert declaration.dimensions["items"].key == "item"
    assert declaration.mix is not None and declaration.mix.dimension == "items"
    again = declaration.to_dict()
    assert parse_dataset_declaration(json.loads(json.dumps(again))) == declaration
    assert again["table"]["week_start"] == "monday"  # the default, written out


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("format", "v0", "format is 'v0'; expected 'vertex-retrain-dataset/v1'"),
        ("table.period", "month", "table.period is 'month'; expected one of day, week"),
        ("table.week_start", "someday", "table.week_start is 'someday'; expected one of monday"),
        ("table.time_column", "when", "table.time_column is 'when'; expected a declared column"),
        ("table.time_column", "store", "table.columns.store is 'string'; expected date32[day]"),
        ("table.columns.units", "float64", "table.columns.units is 'float64'; expected an Arrow"),
        ("table.folder", "../elsewhere", "table.folder is '../elsewhere'; expected a path"),
        ("table.folder", "gs://b/sales", "expected a path relative to the dataset URI"),
        ("table.key_columns", ["day", "shop"], "table.key_columns is 'shop'; expected a declared"),
        ("table.group_column", "shop", "table.group_column is 'shop'"),
        ("table.extra", 1, "table.extra is 1; expected one of the keys folder"),
        ("dimensions.items.key", "family", "a column the table declares too"),
        ("dimensions.items.key", "sku", "dimensions.items.key is 'sku'; expected one of its"),
        (
            "mix.dimension",
            "shops",
            "mix.dimension is 'shops'; expected a declared dimension: items",
        ),
        ("mix.category_column", "color", "mix.category_column is 'color'; expected a column of"),
        ("table.group_column", None, "table.group_column is None; expected a declared column when"),
    ],
)
def test_parse_dataset_declaration_names_the_field_value_and_alternatives(
    path: str, value: Any, message: str
) -> None:
    with pytest.raises(DatasetDeclarationError) as error:
        parse_dataset_declaration(_with(path, value))
    assert message in str(error.value)
    assert str(error.value).startswith("dataset declaration: ")


def test_parse_dataset_declaration_refuses_an_empty_one_with_how_to_pass_it() -> None:
    with pytest.raises(DatasetDeclarationError, match=r"dataset_declaration=@dataset\.yaml"):
        parse_dataset_declaration({})


@pytest.mark.parametrize(
    ("week_start", "day", "start"),
    [
        ("monday", dt.date(2026, 11, 30), dt.date(2026, 11, 30)),  # a Monday starts its week
        ("monday", dt.date(2026, 12, 6), dt.date(2026, 11, 30)),  # Sunday ends it
        ("monday", dt.date(2026, 12, 7), dt.date(2026, 12, 7)),  # the next Monday starts anew
        ("sunday", dt.date(2026, 12, 6), dt.date(2026, 12, 6)),
        ("sunday", dt.date(2026, 12, 5), dt.date(2026, 11, 29)),
    ],
)
def test_period_start_of_a_week_is_its_declared_first_day(
    week_start: str, day: dt.date, start: dt.date
) -> None:
    weekly = _with("table.period", "week")
    weekly["table"]["week_start"] = week_start
    table = parse_dataset_declaration(weekly).table
    assert table.period_start(day) == start
    assert table.period_start(dt.datetime.combine(day, dt.time(23, 59))) == start


def test_check_schema_lists_every_mismatch_with_found_and_expected_types() -> None:
    columns = (Column("a", "int32"), Column("b", "string"))
    with pytest.raises(SchemaMismatchError) as error:
        check_schema(
            columns, {"a": "int64", "c": "bool"}, what="the table", where="gs://b/t.parquet"
        )
    message = str(error.value)
    assert "gs://b/t.parquet does not match the dataset declaration" in message
    assert "column 'a' has type int64; the table declares int32" in message
    assert "column 'b' is missing; the table declares it with type string" in message
    check_schema(columns, {"a": "int32", "b": "string", "extra": "bool"}, what="t", where="ok")


def test_load_dataset_declaration_reads_yaml_and_names_the_file_it_cannot_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(DATASET))
    assert load_dataset_declaration(path) == parse_dataset_declaration(DATASET).to_dict()
    with pytest.raises(DatasetDeclarationError, match=str(tmp_path / "missing.yaml")):
        load_dataset_declaration(tmp_path / "missing.yaml")


def test_parse_evaluation_declaration_reads_directions_and_bounds() -> None:
    declaration = parse_evaluation_declaration(EVALUATION)
    assert declaration.gain("rmse", 9.0, 10.0) == 1.0  # lower is better
    assert declaration.gain("coverage", 0.9, 0.8) == pytest.approx(0.1)
    assert declaration.reaches("rmse", 40.0, 40.0) and not declaration.reaches("rmse", 40.1, 40.0)
    assert declaration.floors == {"rmse": 40.0} and isinstance(declaration.floors["rmse"], float)
    assert parse_evaluation_declaration(declaration.to_dict()) == declaration


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"primary": "mae"}, "primary is 'mae'; expected a metric declared under metrics: rmse"),
        ({"metrics": {"rmse": "smaller"}}, "metrics.rmse is 'smaller'; expected 'higher' or"),
        ({"metrics": {}}, "metrics is {}; expected an object of metric name"),
        ({"guardrails": {"mae": 1}}, "guardrails.mae is 'mae'; expected a metric declared"),
        ({"guardrails": {"coverage": -0.1}}, "guardrails.coverage is -0.1; expected a number >= 0"),
        ({"floors": {"rmse": float("nan")}}, "floors.rmse is nan; expected a finite number"),
        ({"min_improvement": True}, "min_improvement is True; expected a finite number"),
        ({"reference": ""}, "reference is ''; expected a reference name the metrics file"),
        ({"reference": []}, "reference is []; expected a reference name"),
        ({"reference": ["a", 3]}, "reference[1] is 3; expected a reference name"),
        ({"reference": ["a", "a"]}, "expected a list of distinct reference names"),
        ({"confidence": 0.95}, "confidence is 0.95; expected an object with level"),
        ({"confidence": {"level": 1.0}}, "confidence.level is 1.0; expected a coverage in"),
        ({"confidence": {"level": 0.4}}, "confidence.level is 0.4; expected a coverage in"),
        ({"confidence": {"resamples": 99}}, "confidence.resamples is 99; expected an integer"),
        ({"confidence": {"resamples": 100_001}}, "confidence.resamples is 100001; expected"),
        ({"confidence": {"resamples": 1e3 + 0.5}}, "confidence.resamples is 1000.5; expected an"),
        ({"confidence": {"seed": 1.5}}, "confidence.seed is 1.5; expected an integer >= 0"),
        ({"confidence": {"seed": -1}}, "confidence.seed is -1; expected an integer >= 0"),
        ({"confidence": {"require": "yes"}}, "confidence.require is 'yes'; expected true or"),
        ({"confidence": {"levels": 0.9}}, "confidence.levels is 0.9; expected one of the keys"),
        ({"gaurdrails": {}}, "gaurdrails is {}; expected one of the keys primary"),
    ],
)
def test_parse_evaluation_declaration_names_the_field_value_and_alternatives(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(EvaluationDeclarationError) as error:
        parse_evaluation_declaration({**EVALUATION, **change})
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("reference", "expected"),
    [(None, ()), ("naive", ("naive",)), (["naive", "mean"], ("naive", "mean"))],
)
def test_parse_evaluation_declaration_reads_one_or_several_references(
    reference: Any, expected: tuple[str, ...]
) -> None:
    raw = {**EVALUATION, "reference": reference} if reference is not None else dict(EVALUATION)
    raw.pop("reference") if reference is None else None
    declaration = parse_evaluation_declaration(raw)
    assert declaration.references == expected
    assert declaration.has_bar is bool(expected or declaration.floors)
    assert parse_evaluation_declaration(declaration.to_dict()) == declaration


def test_parse_evaluation_declaration_confidence_defaults_and_bounds() -> None:
    plain = parse_evaluation_declaration(EVALUATION).confidence
    assert (plain.level, plain.resamples, plain.seed, plain.require) == (0.95, 1000, 0, False)
    edge = parse_evaluation_declaration(
        {**EVALUATION, "confidence": {"level": 0.5, "resamples": 100, "seed": 3, "require": True}}
    ).confidence
    assert (edge.level, edge.resamples, edge.seed, edge.require) == (0.5, 100, 3, True)
    # A pipeline's dict parameter carries every number as a double: 1000.0 is 1000.
    doubled = parse_evaluation_declaration(
        {**EVALUATION, "confidence": {"resamples": 1000.0, "seed": 3.0}}
    )
    assert (doubled.confidence.resamples, doubled.confidence.seed) == (1000, 3)
    assert isinstance(doubled.confidence.resamples, int)
    top = parse_evaluation_declaration({**EVALUATION, "confidence": {"resamples": 100_000}})
    assert top.confidence.resamples == 100_000


def test_parse_evaluation_declaration_refuses_an_empty_one_with_how_to_pass_it() -> None:
    with pytest.raises(
        EvaluationDeclarationError, match=r"evaluation_declaration=@evaluation\.yaml"
    ):
        parse_evaluation_declaration({})


def test_load_evaluation_declaration_reads_yaml(tmp_path: Path) -> None:
    path = tmp_path / "evaluation.yaml"
    path.write_text("primary: rmse\nmetrics: {rmse: lower}\n")
    assert load_evaluation_declaration(path)["metrics"] == {"rmse": "lower"}

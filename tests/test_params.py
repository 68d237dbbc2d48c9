"""`--param NAME=VALUE` parsing and value checks against compiled parameter definitions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vertex_retrain.cli.params import (
    ParameterError,
    TemplateError,
    check_values,
    load_parameter_definitions,
    parse_overrides,
)

PARAMETERS = {
    "model_name": {"parameterType": "STRING", "defaultValue": "guess-your-order"},
    "epochs": {"parameterType": "NUMBER_INTEGER", "defaultValue": 10.0, "isOptional": True},
    "learning_rate": {"parameterType": "NUMBER_DOUBLE", "defaultValue": 0.001},
    "tune": {"parameterType": "BOOLEAN", "defaultValue": False},
    "shops": {"parameterType": "LIST", "defaultValue": []},
    "machine_spec": {"parameterType": "STRUCT", "defaultValue": {}},
    "data_uri": {"parameterType": "STRING"},
}


def test_parse_overrides_converts_each_type() -> None:
    values = parse_overrides(
        [
            "model_name=recommender",
            "epochs=-3",
            "learning_rate=1e-4",
            "tune=TRUE",
            'shops=["taipei", 2]',
            'machine_spec={"machineType": "g2-standard-8", "count": 1}',
        ],
        PARAMETERS,
    )
    assert values == {
        "model_name": "recommender",
        "epochs": -3,
        "learning_rate": 1e-4,
        "tune": True,
        "shops": ["taipei", 2],
        "machine_spec": {"machineType": "g2-standard-8", "count": 1},
    }
    assert type(values["epochs"]) is int and type(values["learning_rate"]) is float


def test_parse_overrides_keeps_text_after_the_first_equals_sign() -> None:
    assert parse_overrides(["data_uri=gs://b/p?x=1", "model_name="], PARAMETERS) == {
        "data_uri": "gs://b/p?x=1",
        "model_name": "",
    }


def test_parse_overrides_rejects_an_override_without_equals_sign() -> None:
    with pytest.raises(ParameterError, match=r"'epochs': expected NAME=VALUE"):
        parse_overrides(["epochs"], PARAMETERS)


def test_parse_overrides_suggests_close_matches_for_an_unknown_name() -> None:
    with pytest.raises(ParameterError) as caught:
        parse_overrides(["epoch=3"], PARAMETERS)
    message = str(caught.value)
    assert "unknown parameter 'epoch'" in message
    assert "did you mean 'epochs'" in message
    assert "learning_rate" not in message  # the likely name, not every name
    assert f"lists this pipeline's {len(PARAMETERS)} parameters" in message
    with pytest.raises(ParameterError) as far:
        parse_overrides(["zzz=3"], PARAMETERS)
    assert "did you mean" not in str(far.value)
    assert "learning_rate" in str(far.value)  # no close name: every name is listed


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        ("epochs=ten", "expects NUMBER_INTEGER (an integer)"),
        ("epochs=1.5", "expects NUMBER_INTEGER"),
        ("learning_rate=fast", "expects NUMBER_DOUBLE"),
        ("learning_rate=nan", "expects NUMBER_DOUBLE"),
        ("learning_rate=1e999", "not a finite number"),
        ("tune=yes", "expects BOOLEAN (true or false)"),
        ("shops={}", "JSON dict, not a JSON list"),
        ("shops=[1,", "expects LIST"),
        ("shops=[NaN]", "NaN is not allowed"),
        ("machine_spec=[1]", "JSON list, not a JSON dict"),
    ],
)
def test_parse_overrides_reports_expected_type_with_an_example(pair: str, expected: str) -> None:
    with pytest.raises(ParameterError) as caught:
        parse_overrides([pair], PARAMETERS)
    message = str(caught.value)
    assert expected in message
    name = pair.split("=")[0]
    assert f"for example --param {name}=" in message


def test_parse_overrides_reports_every_problem_at_once() -> None:
    with pytest.raises(ParameterError) as caught:
        parse_overrides(["epochs=x", "nope=1", "tune", "epochs=1", "epochs=2"], PARAMETERS)
    assert len(caught.value.problems) == 4
    assert "given more than once" in caught.value.problems[-1]


def test_parse_overrides_rejects_deeply_nested_json_with_the_documented_error() -> None:
    with pytest.raises(ParameterError, match="expects LIST"):
        parse_overrides(["shops=" + "[" * 100_000], PARAMETERS)


# Mostly well-formed NAME=VALUE pairs with arbitrary values, plus arbitrary text.
_PAIRS = st.one_of(
    st.text(),
    st.builds("{}={}".format, st.sampled_from(sorted(PARAMETERS)), st.text()),
)


@given(st.lists(_PAIRS, max_size=5))
def test_parse_overrides_on_arbitrary_text_returns_known_names_or_raises_parameter_error(
    pairs: list[str],
) -> None:
    try:
        values = parse_overrides(pairs, PARAMETERS)
    except ParameterError as error:
        assert error.problems
    else:
        assert set(values) <= set(PARAMETERS)
        check_values(values, PARAMETERS, require_all=False)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@given(
    epochs=st.integers(min_value=-(2**53), max_value=2**53),  # a double holds these exactly
    rate=st.floats(allow_nan=False, allow_infinity=False),
    tune=st.booleans(),
    shops=st.lists(_JSON, max_size=4),
    spec=st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
    name=st.text(),
)
def test_parse_overrides_round_trips_values_written_as_text(
    epochs: int, rate: float, tune: bool, shops: list, spec: dict, name: str
) -> None:
    pairs = [
        f"epochs={epochs}",
        f"learning_rate={rate!r}",
        f"tune={str(tune).lower()}",
        f"shops={json.dumps(shops)}",
        f"machine_spec={json.dumps(spec)}",
        f"model_name={name}",
    ]
    values = parse_overrides(pairs, PARAMETERS)
    assert values["epochs"] == epochs
    assert values["learning_rate"] == rate and math.copysign(1, values["learning_rate"]) == (
        math.copysign(1, rate)
    )
    assert values["tune"] is tune
    assert values["shops"] == shops and values["machine_spec"] == spec
    assert values["model_name"] == name


def test_check_values_treats_integral_doubles_as_integers_but_not_booleans() -> None:
    check_values({"epochs": 3.0, "learning_rate": 2}, PARAMETERS, require_all=False)
    with pytest.raises(ParameterError, match="expects NUMBER_INTEGER"):
        check_values({"epochs": True}, PARAMETERS, require_all=False)
    with pytest.raises(ParameterError, match="expects NUMBER_INTEGER"):
        check_values({"epochs": 2.5}, PARAMETERS, require_all=False)


def test_check_values_reports_missing_required_parameters_and_unknown_names() -> None:
    with pytest.raises(ParameterError) as caught:
        check_values({"tunee": True}, PARAMETERS)
    problems = caught.value.problems
    assert any("did you mean 'tune'" in problem for problem in problems)
    assert any("'data_uri' has no default" in problem for problem in problems)
    check_values({"data_uri": "gs://b/d"}, PARAMETERS)  # everything else has a default


def test_load_parameter_definitions_reads_a_compiled_pipeline(tmp_path: Path) -> None:
    template = tmp_path / "p.yaml"
    template.write_text(
        "pipelineInfo:\n  name: p\nroot:\n  inputDefinitions:\n    parameters:\n"
        "      epochs:\n        parameterType: NUMBER_INTEGER\n        defaultValue: 3.0\n"
        "---\nplatforms: {}\n",
        encoding="utf-8",
    )
    definitions = load_parameter_definitions(template)
    assert definitions == {"epochs": {"parameterType": "NUMBER_INTEGER", "defaultValue": 3.0}}
    assert parse_overrides(["epochs=4"], definitions) == {"epochs": 4}


@pytest.mark.parametrize("content", ["a: [", "just text", "pipelineInfo: {name: p}\n"])
def test_load_parameter_definitions_rejects_files_that_are_not_compiled_pipelines(
    tmp_path: Path, content: str
) -> None:
    template = tmp_path / "bad.yaml"
    template.write_text(content, encoding="utf-8")
    with pytest.raises(TemplateError, match=r"bad\.yaml"):
        load_parameter_definitions(template)

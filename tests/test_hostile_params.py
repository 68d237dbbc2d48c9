"""Numbers outside what a pipeline can run: refused before the run, naming the range.

Every numeric parameter of the pipelines has a declared range
(`vertex_retrain.pipelines.defaults.PARAMETER_RANGES`); `--param` overrides and already
typed values (`check_values`, used on submission) are checked against it. Integers beyond
±2^53, which a double (Vertex's parameter number) cannot hold, are refused everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.cli.main import main
from vertex_retrain.cli.params import (
    RANGE_KEY,
    ParameterError,
    check_values,
    parameter_definitions,
    parse_overrides,
)
from vertex_retrain.pipelines import catalog
from vertex_retrain.pipelines.defaults import PARAMETER_RANGES

NUMBERS = {"NUMBER_INTEGER", "NUMBER_DOUBLE"}


@pytest.fixture(scope="module")
def definitions() -> dict[str, dict[str, dict[str, Any]]]:
    return {
        name: parameter_definitions(compile_to_dict(catalog.pipeline_by_name(name)))
        for name in catalog.PIPELINES
    }


def test_every_numeric_parameter_has_a_range_holding_its_default(
    definitions: dict[str, dict[str, dict[str, Any]]],
) -> None:
    for pipeline, parameters in definitions.items():
        for name, definition in parameters.items():
            if definition["parameterType"] not in NUMBERS:
                continue
            assert RANGE_KEY in definition, f"{pipeline}: {name} has no PARAMETER_RANGES entry"
            low, high = definition[RANGE_KEY]
            assert low <= definition["defaultValue"] <= high, (pipeline, name)
    used = {n for parameters in definitions.values() for n in parameters}
    assert set(PARAMETER_RANGES) <= used, "a range for a parameter no pipeline has"


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        ("accelerator_count=-1", "'accelerator_count' must be from 0 to 16, got -1"),
        ("batch_size=0", "'batch_size' must be from 1 to 65536, got 0"),
        ("epochs=99999999999999999999", "'epochs' must be from 1 to 1000"),
        ("learning_rate=2.5", "'learning_rate' must be from 1e-07 to 1.0, got 2.5"),
        ("traffic_percentage=101", "'traffic_percentage' must be from 0 to 100"),
        ("keep_last_n=1", "'keep_last_n' must be from 2 to 100"),
    ],
)
def test_overrides_outside_the_declared_range_are_refused_with_it(
    definitions: dict[str, dict[str, dict[str, Any]]], pair: str, expected: str
) -> None:
    with pytest.raises(ParameterError) as raised:
        parse_overrides([pair], definitions["weekly-retraining"])
    (problem,) = raised.value.problems
    assert expected in problem and "PARAMETER_RANGES" in problem


def test_every_problem_is_reported_at_once_and_in_range_values_pass(
    definitions: dict[str, dict[str, dict[str, Any]]],
) -> None:
    parameters = definitions["train-only"]
    with pytest.raises(ParameterError) as raised:
        parse_overrides(["epochs=0", "batch_size=0", "accelerator_count=99"], parameters)
    assert len(raised.value.problems) == 3
    assert parse_overrides(["epochs=1000", "accelerator_count=0"], parameters) == {
        "epochs": 1000,
        "accelerator_count": 0,
    }


def test_check_values_refuses_typed_values_outside_the_range(
    definitions: dict[str, dict[str, dict[str, Any]]],
) -> None:
    parameters = definitions["weekly-retraining"]
    with pytest.raises(ParameterError, match="'worker_count' must be from 0 to 64, got 65"):
        check_values({"worker_count": 65}, parameters, require_all=False)
    check_values({"worker_count": 64}, parameters, require_all=False)


def test_integers_beyond_2_to_53_are_refused_without_a_range() -> None:
    parameters = {"seed": {"parameterType": "NUMBER_INTEGER"}}
    assert parse_overrides([f"seed={2**53}"], parameters) == {"seed": 2**53}
    with pytest.raises(ParameterError, match="beyond ±2\\^53"):
        parse_overrides([f"seed=-{2**53 + 1}"], parameters)


def test_templates_of_other_pipelines_get_no_ranges() -> None:
    spec = {
        "pipelineInfo": {"name": "someone-else"},
        "root": {
            "inputDefinitions": {"parameters": {"epochs": {"parameterType": "NUMBER_INTEGER"}}}
        },
    }
    assert parameter_definitions(spec) == {"epochs": {"parameterType": "NUMBER_INTEGER"}}


@pytest.mark.parametrize("command", ["run", "estimate"])
def test_compile_py_refuses_out_of_range_values_up_front(
    root: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    extra = ["--local"] if command == "run" else []
    code = main([command, "weekly-retraining", *extra, "--param", "accelerator_count=-1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "'accelerator_count' must be from 0 to 16, got -1" in err and "Traceback" not in err
    assert not any(root.iterdir()) if root.exists() else True  # nothing ran, nothing written

"""Numbers outside what a pipeline can run: refused before the run, naming the range.

A numeric parameter named like one of the components' inputs has a range, whatever pipeline
declares it (`vertex_retrain.pipelines.ranges.PARAMETER_RANGES`); `--param` overrides and
already typed values (`check_values`, used on submission) are checked against it. Integers
beyond ±2^53, which a double (Vertex's parameter number) cannot hold, are refused everywhere.
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
from vertex_retrain.pipelines.ranges import PARAMETER_RANGES

NUMBERS = {"NUMBER_INTEGER", "NUMBER_DOUBLE"}
USER_PIPELINE = str(Path(__file__).resolve().parent / "data" / "pipelines" / "scheduled.py")


def _spec(**parameters: str) -> dict[str, Any]:
    """A compiled pipeline of someone else's, with these parameters (name -> type)."""
    return {
        "pipelineInfo": {"name": "someone-else"},
        "root": {
            "inputDefinitions": {
                "parameters": {name: {"parameterType": kind} for name, kind in parameters.items()}
            }
        },
    }


@pytest.fixture(scope="module")
def definitions() -> dict[str, dict[str, Any]]:
    return parameter_definitions(
        _spec(
            accelerator_count="NUMBER_INTEGER",
            worker_count="NUMBER_INTEGER",
            traffic_percentage="NUMBER_INTEGER",
            keep_last_n="NUMBER_INTEGER",
            timeout_seconds="NUMBER_INTEGER",
            epochs="NUMBER_INTEGER",
            learning_rate="NUMBER_DOUBLE",
        )
    )


def test_ranges_apply_by_name_to_any_pipeline(definitions: dict[str, dict[str, Any]]) -> None:
    assert definitions["accelerator_count"][RANGE_KEY] == [0, 16]
    assert definitions["keep_last_n"][RANGE_KEY] == list(PARAMETER_RANGES["keep_last_n"])
    # A model's own hyperparameters mean what the model says: no range.
    assert RANGE_KEY not in definitions["epochs"] and RANGE_KEY not in definitions["learning_rate"]
    assert not {"epochs", "learning_rate", "embedding_dim", "batch_size"} & set(PARAMETER_RANGES)


def test_ranges_apply_to_numbers_only() -> None:
    (definition,) = parameter_definitions(_spec(worker_count="STRING")).values()
    assert RANGE_KEY not in definition


@pytest.mark.parametrize("name", sorted(catalog.PIPELINES))
def test_template_defaults_lie_inside_their_ranges(name: str) -> None:
    parameters = parameter_definitions(compile_to_dict(catalog.pipeline_by_name(name)))
    for parameter, definition in parameters.items():
        if definition["parameterType"] in NUMBERS and RANGE_KEY in definition:
            low, high = definition[RANGE_KEY]
            assert low <= definition["defaultValue"] <= high, (name, parameter)


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        ("accelerator_count=-1", "'accelerator_count' must be from 0 to 16, got -1"),
        ("accelerator_count=17", "'accelerator_count' must be from 0 to 16, got 17"),
        ("worker_count=99999999999999999999", "'worker_count' must be from 0 to 64"),
        ("timeout_seconds=59", "'timeout_seconds' must be from 60 to 604800, got 59"),
        ("traffic_percentage=101", "'traffic_percentage' must be from 0 to 100"),
        ("keep_last_n=1", "'keep_last_n' must be from 2 to 100"),
    ],
)
def test_overrides_outside_the_range_are_refused_with_it(
    definitions: dict[str, dict[str, Any]], pair: str, expected: str
) -> None:
    with pytest.raises(ParameterError) as raised:
        parse_overrides([pair], definitions)
    (problem,) = raised.value.problems
    assert expected in problem and "vertex_retrain.pipelines.ranges" in problem


def test_every_problem_is_reported_at_once_and_in_range_values_pass(
    definitions: dict[str, dict[str, Any]],
) -> None:
    with pytest.raises(ParameterError) as raised:
        parse_overrides(["worker_count=65", "traffic_percentage=-1", "accelerator_count=99"],
                        definitions)  # fmt: skip
    assert len(raised.value.problems) == 3
    assert parse_overrides(["accelerator_count=16", "epochs=100000"], definitions) == {
        "accelerator_count": 16,
        "epochs": 100000,
    }


def test_check_values_refuses_typed_values_outside_the_range(
    definitions: dict[str, dict[str, Any]],
) -> None:
    with pytest.raises(ParameterError, match="'worker_count' must be from 0 to 64, got 65"):
        check_values({"worker_count": 65}, definitions, require_all=False)
    check_values({"worker_count": 64}, definitions, require_all=False)


def test_integers_beyond_2_to_53_are_refused_without_a_range() -> None:
    parameters = {"seed": {"parameterType": "NUMBER_INTEGER"}}
    assert parse_overrides([f"seed={2**53}"], parameters) == {"seed": 2**53}
    with pytest.raises(ParameterError, match="beyond ±2\\^53"):
        parse_overrides([f"seed=-{2**53 + 1}"], parameters)


@pytest.mark.parametrize("command", ["run", "estimate"])
def test_compile_py_refuses_out_of_range_values_up_front(
    root: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    extra = ["--local"] if command == "run" else []
    pipeline = f"{USER_PIPELINE}:weekly"  # a user's pipeline: the range holds there too
    code = main([command, pipeline, *extra, "--param", "accelerator_count=-1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "'accelerator_count' must be from 0 to 16, got -1" in err and "Traceback" not in err
    assert not any(root.iterdir()) if root.exists() else True  # nothing ran, nothing written

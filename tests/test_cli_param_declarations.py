"""A ``dataset_declaration`` or ``evaluation_declaration`` given as a parameter value is parsed
by the library's own parser before anything runs (vertex_retrain.pipelines.declarations): a
``--param`` of ``run`` (locally or before a submission), ``estimate`` and ``preflight``, a
schedule's ``parameter_values`` (dry run or not) and ``vertex_retrain.run_local``'s arguments
are refused with one line naming the parameter and the parser's message, exit 2, instead of
failing at the step that reads it.

The pipeline is a user's small one (tests/data/pipelines/declared.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.data.pipelines.declared import DATASET, EVALUATION, configured
from vertex_retrain.cli.main import main
from vertex_retrain.cli.params import ParameterError, check_values, parse_overrides

FILE = Path(__file__).resolve().parent / "data" / "pipelines" / "declared.py"
CONFIGURED = f"{FILE}:configured"
STRUCTS = {
    "dataset_declaration": {"parameterType": "STRUCT"},
    "evaluation_declaration": {"parameterType": "STRUCT"},
}
LOGLOSS = {"primary": "logloss", "metrics": {"log_loss": "lower"}}
PRIMARY = "primary is 'logloss'; expected a metric declared under metrics: log_loss"


def _dataset_file(tmp_path: Path, period: str) -> str:
    declaration = json.loads(json.dumps(DATASET))
    declaration["table"]["period"] = period
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(declaration))
    return str(path)


def test_parse_overrides_refuses_an_evaluation_declaration_its_parser_refuses() -> None:
    pair = f"evaluation_declaration={json.dumps(LOGLOSS)}"
    with pytest.raises(ParameterError) as raised:
        parse_overrides([pair], STRUCTS)
    (line,) = raised.value.problems
    assert line.startswith(f"--param {pair!r}: parameter 'evaluation_declaration': ")
    assert PRIMARY in line
    good = {**LOGLOSS, "primary": "log_loss"}
    values = parse_overrides([f"evaluation_declaration={json.dumps(good)}"], STRUCTS)
    assert values == {"evaluation_declaration": good}


@pytest.mark.parametrize(("period", "refused"), [("weekly", True), ("week", False)])
def test_parse_overrides_parses_a_dataset_declaration_read_from_a_file(
    tmp_path: Path, period: str, refused: bool
) -> None:
    pair = f"dataset_declaration=@{_dataset_file(tmp_path, period)}"
    if not refused:
        assert parse_overrides([pair], STRUCTS)["dataset_declaration"]["table"]["period"] == "week"
        return
    with pytest.raises(ParameterError) as raised:
        parse_overrides([pair], STRUCTS)
    (line,) = raised.value.problems
    assert "parameter 'dataset_declaration': dataset declaration: table.period is 'weekly'" in line
    assert "expected one of day, week" in line


def test_check_values_refuses_a_declaration_its_parser_refuses() -> None:
    with pytest.raises(ParameterError) as raised:
        check_values({"evaluation_declaration": LOGLOSS}, STRUCTS, require_all=False)
    (line,) = raised.value.problems
    assert line.startswith("parameter 'evaluation_declaration': ") and PRIMARY in line
    check_values({"evaluation_declaration": EVALUATION, "dataset_declaration": DATASET}, STRUCTS)


@pytest.mark.parametrize(
    ("name", "path", "field"),
    [
        ("evaluation_declaration", ["primary"], "primary"),
        ("dataset_declaration", ["table", "period"], "table.period"),
        ("dataset_declaration", ["table", "group_column"], "table.group_column"),
        ("dataset_declaration", ["mix", "dimension"], "mix.dimension"),
    ],
)
def test_a_list_where_a_declaration_wants_a_name_is_one_problem_not_a_traceback(
    name: str, path: list[str], field: str
) -> None:
    # A list is unhashable: looked up among the names, it raised TypeError (a traceback).
    base = EVALUATION if name == "evaluation_declaration" else DATASET
    declaration = json.loads(json.dumps(base))
    where = declaration
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = ["x"]
    with pytest.raises(ParameterError) as raised:
        parse_overrides([f"{name}={json.dumps(declaration)}"], STRUCTS)
    (line,) = raised.value.problems
    assert f"parameter {name!r}: " in line and f"{field} is ['x']; expected " in line


def test_a_parameter_of_that_name_but_not_an_object_is_not_parsed_as_a_declaration() -> None:
    # A user's STRING parameter of the same name holds something else (a path, a name).
    text = {"dataset_declaration": {"parameterType": "STRING"}}
    assert parse_overrides(["dataset_declaration=dataset.yaml"], text) == {
        "dataset_declaration": "dataset.yaml"
    }


def _one_line(capsys: pytest.CaptureFixture[str], prefix: str) -> str:
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(prefix) and "parameter 'evaluation_declaration': " in line
    assert PRIMARY in line
    return line


BAD = ["--param", f"evaluation_declaration={json.dumps(LOGLOSS)}"]


def test_run_local_refuses_a_declaration_param_before_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    assert main(["run", CONFIGURED, "--local", *BAD]) == 2
    _one_line(capsys, "error: --param ")
    assert not (tmp_path / "root").exists()  # nothing ran, nothing was made


def test_run_local_takes_a_declaration_param_its_parser_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vertex_retrain.cli import run_command

    def started(*args: Any, **kwargs: Any) -> int:
        return 7

    monkeypatch.setattr(run_command, "_run_local", started)
    good = json.dumps({**LOGLOSS, "primary": "log_loss"})
    assert main(["run", CONFIGURED, "--local", "--param", f"evaluation_declaration={good}"]) == 7


def test_run_submission_refuses_a_declaration_param_before_vertex(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vertex_retrain.cli import vertex_submit

    def submit(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("submitted")

    monkeypatch.setattr(vertex_submit, "submit_spec", submit)
    where = ["--project", "p", "--location", "europe-west4", "--pipeline-root", "gs://b/r"]
    assert main(["run", CONFIGURED, *where, *BAD]) == 2
    _one_line(capsys, "error: --param ")


def test_estimate_refuses_a_declaration_param(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", CONFIGURED, *BAD]) == 2
    _one_line(capsys, "error: --param ")


def test_preflight_refuses_a_declaration_param_as_bad_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["preflight", CONFIGURED, *BAD]) == 2
    _one_line(capsys, "preflight: error: --param ")


@pytest.mark.parametrize("primary", ["logloss", "log_loss"])
def test_schedule_dry_run_parses_the_declarations_in_parameter_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], primary: str
) -> None:
    values = json.dumps({"evaluation_declaration": {**LOGLOSS, "primary": primary}})
    schedules = tmp_path / "schedules.yaml"
    schedules.write_text(
        f"- display_name: nightly\n  pipeline_name: configured\n  pipeline: {CONFIGURED}\n"
        f'  cron: "0 6 * * 1"\n  time_zone: UTC\n  parameter_values: {values}\n'
    )
    code = main(["schedule", "--schedules", str(schedules), "--dry-run"])
    if primary == "log_loss":
        assert code == 0, capsys.readouterr().err
        return
    assert code == 2
    _one_line(capsys, "schedule: nightly: parameter_values: ")


def test_run_local_api_refuses_a_declaration_argument_before_any_step(tmp_path: Path) -> None:
    from vertex_retrain import run_local

    with pytest.raises(ParameterError) as raised:
        run_local(configured, {"evaluation_declaration": LOGLOSS})
    (line,) = raised.value.problems
    assert line.startswith("parameter 'evaluation_declaration': ") and PRIMARY in line

"""``--param NAME=@FILE``: a LIST or STRUCT value read from a JSON or YAML file, through the
bounded loader; a bad file is one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from vertex_retrain.cli.main import main
from vertex_retrain.cli.params import ParameterError, parse_overrides

PARAMETERS = {
    "declaration": {"parameterType": "STRUCT", "defaultValue": {}},
    "specs": {"parameterType": "LIST", "defaultValue": []},
    "note": {"parameterType": "STRING", "defaultValue": ""},
}
USER_JOBS = Path(__file__).resolve().parent / "data" / "pipelines" / "user_jobs.py"


def test_param_reads_a_struct_from_yaml_and_a_list_from_json(tmp_path: Path) -> None:
    declaration = tmp_path / "dataset.yaml"
    declaration.write_text("table:\n  folder: sales\n  period: day\n")
    specs = tmp_path / "specs.json"
    specs.write_text('[{"parameterId": "lr"}]')
    values = parse_overrides(
        [f"declaration=@{declaration}", f"specs=@{specs}", "note=@not-a-file"], PARAMETERS
    )
    assert values == {
        "declaration": {"table": {"folder": "sales", "period": "day"}},
        "specs": [{"parameterId": "lr"}],
        "note": "@not-a-file",  # a STRING is its text
    }


@pytest.mark.parametrize(
    ("content", "pair", "message"),
    [
        (None, "declaration=@{missing}", "cannot read a JSON object from"),
        ("[1, 2]", "declaration=@{file}", "holds a list, not a JSON object"),
        ("a: [1, 2", "declaration=@{file}", "cannot read a JSON object from"),
        ("{}", "specs=@{file}", "holds a dict, not a JSON list"),
        ("", "specs=@", "no file after '@'"),
    ],
)
def test_param_file_problems_are_one_line(
    tmp_path: Path, content: str | None, pair: str, message: str
) -> None:
    file = tmp_path / "value.yaml"
    if content is not None:
        file.write_text(content)
    with pytest.raises(ParameterError) as raised:
        parse_overrides([pair.format(file=file, missing=tmp_path / "nope.yaml")], PARAMETERS)
    (problem,) = raised.value.problems
    assert message in problem and "\n" not in problem


def test_param_file_must_be_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="is a folder, not a regular file"):
        parse_overrides([f"specs=@{tmp_path}"], PARAMETERS)


def test_a_bad_param_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = f"{USER_JOBS}:shaped_by_parameters"
    good = tmp_path / "labels.yaml"
    good.write_text("team: forecasting\n")
    assert main(["estimate", pipeline, "--param", f"labels=@{good}"]) == 0
    capsys.readouterr()
    bad = tmp_path / "list.yaml"
    bad.write_text("- not\n- a mapping\n")
    assert main(["estimate", pipeline, "--param", f"labels=@{bad}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds a list, not a JSON object" in err
    assert "labels" in err and "Traceback" not in err

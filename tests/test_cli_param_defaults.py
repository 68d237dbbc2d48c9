"""A default set through ``configure()`` (or compiled into a pipeline file) that ``--param``
would refuse as a value is refused the same way before anything runs, is written or is sent:
one line per default, exit 2 (vertex_retrain.cli.param_defaults).

The pipeline is a user's small one (tests/data/pipelines/configured_defaults.py): every
command refuses before its step could run.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.data.pipelines.configured_defaults import ranged, too_short, two_bad
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.cli.main import main
from vertex_retrain.cli.param_defaults import check_defaults, default_problems
from vertex_retrain.cli.params import ParameterError

FILE = Path(__file__).resolve().parent / "data" / "pipelines" / "configured_defaults.py"
TWO_BAD = f"{FILE}:two_bad"
RANGE = "must be from 60 to 604800, got 5"


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return compile_to_dict(ranged)


def _with_default(spec: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(spec)
    changed["root"]["inputDefinitions"]["parameters"][name]["defaultValue"] = value
    return changed


def _refused(capsys: pytest.CaptureFixture[str], prefix: str) -> list[str]:
    """The stderr lines of a refusal: one per bad default, each naming it."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 2, captured.err
    assert all(line.startswith(prefix) and "the default of pipeline 'two-bad'" in line
               for line in lines)  # fmt: skip
    assert "'accelerator_count' must be from 0 to 16, got -1" in lines[0]
    assert "'timeout_seconds' " + RANGE in lines[1]
    return lines


def test_default_problems_name_the_pipeline_parameter_value_and_range() -> None:
    (line,) = default_problems(compile_to_dict(too_short))
    assert line.startswith("the default of pipeline 'too-short': parameter 'timeout_seconds' ")
    assert RANGE in line and line.endswith("or pass --param timeout_seconds=VALUE")


def test_default_problems_hold_the_range_ends_and_refuse_beyond_them(
    spec: dict[str, Any],
) -> None:
    assert default_problems(_with_default(spec, "timeout_seconds", 60.0)) == []
    assert default_problems(_with_default(spec, "timeout_seconds", 604800.0)) == []
    assert len(default_problems(_with_default(spec, "timeout_seconds", 59.0))) == 1
    assert len(default_problems(_with_default(spec, "timeout_seconds", 604801.0))) == 1


def test_default_problems_refuse_a_compiled_default_of_another_type(
    spec: dict[str, Any],
) -> None:
    (line,) = default_problems(_with_default(spec, "accelerator_count", 1.5))
    assert "'accelerator_count' expects NUMBER_INTEGER" in line and "got 1.5" in line


def test_default_problems_leave_out_a_default_the_run_gives_a_value_for() -> None:
    assert default_problems(compile_to_dict(too_short), given=["timeout_seconds"]) == []


def test_default_problems_say_how_the_caller_gives_another_value() -> None:
    compiled = compile_to_dict(too_short)
    (line,) = default_problems(compiled, override="declare parameter_values: {{{name}: VALUE}}")
    assert line.endswith("or declare parameter_values: {timeout_seconds: VALUE}")
    (line,) = default_problems(compiled, override=None)
    assert line.endswith("(vertex_retrain.pipelines.configure)")


def test_check_defaults_raises_one_problem_per_default() -> None:
    with pytest.raises(ParameterError) as raised:
        check_defaults(compile_to_dict(two_bad))
    assert len(raised.value.problems) == 2


def test_run_local_refuses_configured_defaults_before_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    assert main(["run", TWO_BAD, "--local"]) == 2
    _refused(capsys, "error: ")
    assert not (tmp_path / "root").exists()  # nothing ran, nothing was made


def test_run_local_takes_a_param_that_replaces_the_bad_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the defaults the run uses are checked: with --param, the check passes and the
    run goes on (stopped here, where it would start the steps)."""
    from vertex_retrain.cli import run_command

    def started(*args: Any, **kwargs: Any) -> int:
        return 7

    monkeypatch.setattr(run_command, "_run_local", started)
    flags = ["--param", "timeout_seconds=60", "--param", "accelerator_count=0"]
    assert main(["run", TWO_BAD, "--local", *flags]) == 7


def test_run_submission_refuses_configured_defaults_before_vertex(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vertex_retrain.cli import vertex_submit

    def submit(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("submitted")

    monkeypatch.setattr(vertex_submit, "submit_spec", submit)
    where = ["--project", "p", "--location", "europe-west4", "--pipeline-root", "gs://b/r"]
    assert main(["run", TWO_BAD, *where]) == 2
    _refused(capsys, "error: ")


def test_run_local_api_refuses_configured_defaults(tmp_path: Path) -> None:
    from vertex_retrain import run_local

    with pytest.raises(ParameterError) as raised:
        run_local(too_short, {"accelerator_count": 1})
    (line,) = raised.value.problems
    assert "'timeout_seconds' " + RANGE in line
    assert line.endswith("or pass timeout_seconds in arguments")


def test_estimate_refuses_configured_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", TWO_BAD]) == 2
    _refused(capsys, "error: ")


def test_preflight_refuses_configured_defaults_as_bad_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["preflight", TWO_BAD]) == 2
    _refused(capsys, "preflight: error: ")


def test_compile_refuses_configured_defaults_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compile", TWO_BAD, "--out", str(tmp_path / "dist")]) == 2
    (line, _) = _refused(capsys, "error: ")
    assert "--param" not in line  # the file carries the default: it must change
    assert not (tmp_path / "dist").exists()


def test_upload_refuses_configured_defaults_before_sending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["upload", TWO_BAD, "--registry-dir", str(tmp_path / "registry")]) == 2
    _refused(capsys, "upload: ")
    assert not (tmp_path / "registry").exists()


def test_schedule_refuses_the_configured_defaults_its_runs_would_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedules = tmp_path / "schedules.yaml"
    schedules.write_text(
        f"- display_name: nightly\n  pipeline_name: too-short\n  pipeline: {FILE}:too_short\n"
        '  cron: "0 6 * * 1"\n  time_zone: UTC\n  parameter_values: {}\n'
    )
    assert main(["schedule", "--schedules", str(schedules), "--dry-run"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("schedule: nightly: the default of pipeline 'too-short': ")
    assert RANGE in line and "declare parameter_values: {timeout_seconds: VALUE}" in line
    # A value of the schedule's own replaces the default: nothing is refused for it.
    schedules.write_text(schedules.read_text().replace("{}", "{timeout_seconds: 3600}"))
    assert main(["schedule", "--schedules", str(schedules), "--dry-run"]) == 0


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_configure_refuses_a_number_that_is_not_finite(value: float) -> None:
    from tests.data.pipelines.planned_training import planned_training
    from vertex_retrain.pipelines import configure

    # KFP's compiler would stop on it later, naming no parameter.
    with pytest.raises(ValueError, match="'expected_training_hours' takes a finite number"):
        configure(planned_training, name="not-finite", expected_training_hours=value)
    configure(planned_training, name="finite", expected_training_hours=1e300)


def test_check_values_refuses_an_integer_a_double_would_round() -> None:
    from vertex_retrain.cli.params import check_values

    seed = {"seed": {"parameterType": "NUMBER_INTEGER"}}
    check_values({"seed": 2**53}, seed, require_all=False)
    check_values({"seed": -(2**53)}, seed, require_all=False)
    with pytest.raises(ParameterError, match=r"got 9007199254740993 \(beyond ±2\^53"):
        check_values({"seed": 2**53 + 1}, seed, require_all=False)


def test_default_problems_refuse_a_compiled_integer_beyond_what_a_double_holds(
    spec: dict[str, Any],
) -> None:
    (line,) = default_problems(_with_default(spec, "timeout_seconds", 2.0**60))
    assert "'timeout_seconds' expects NUMBER_INTEGER" in line and "beyond ±2^53" in line

"""``schedule --schedules``: the schedules a user's repository declares, in a YAML file or as a
tuple of ScheduleDeclaration in Python; the library declares none."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_schedule_reconcile import URIS_A, WEEKLY_FILE, FakeScheduleClient, _args

from vertex_retrain.cli import schedule_command
from vertex_retrain.cli.main import main
from vertex_retrain.schedules import ScheduleError, load_declarations

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "drink_shops" / "schedules.yaml"
ENTRY = (
    "- display_name: nightly\n  pipeline_name: demand\n  cron: '0 2 * * *'\n"
    "  time_zone: Europe/Amsterdam\n"
)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("display_name: nightly\n", "expected a list of schedules"),
        ("- nightly\n", "schedule 1: expected a mapping of fields"),
        (ENTRY + "  crn: x\n", "schedule 1 (nightly): unknown field 'crn' (did you mean 'cron'?)"),
        ("- display_name: nightly\n  cron: '0 2 * * *'\n", "(nightly): missing pipeline_name"),
        (ENTRY.replace("'0 2 * * *'", "'0 2 * *'"), "schedule 1: nightly: cron"),
        (ENTRY.replace("Europe/Amsterdam", "Europe/Amsterdm"), "Europe/Amsterdam"),
        (ENTRY + "  paused: 'no'\n", "paused must be true or false"),
        (ENTRY + "  parameter_values: [1]\n", "parameter_values must be a mapping"),
        (ENTRY + "  pipeline: 3\n", "pipeline must be text"),
        (ENTRY + ENTRY, "display names declared more than once: nightly"),
    ],
)
def test_load_declarations_refuses_mistakes_in_one_line_naming_file_and_schedule(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "schedules.yaml"
    path.write_text(content)
    with pytest.raises(ScheduleError) as raised:
        load_declarations(path)
    assert message in str(raised.value) and str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_drink_shops_schedule_is_declared_in_the_example_not_the_library() -> None:
    import importlib.util

    assert importlib.util.find_spec("vertex_retrain.pipelines.schedules") is None
    (weekly,) = load_declarations(EXAMPLE)
    assert weekly.pipeline == "pipelines.py:weekly"  # next to the schedules file


def test_schedule_without_schedules_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schedule", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pass --schedules FILE.yaml" in err
    assert "the library declares none" in err


def test_schedule_dry_run_shows_the_examples_schedules_offline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schedule", "--schedules", str(EXAMPLE), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "schedule drink-shops-weekly-retraining (active)",
        "  pipeline: drink-shops-weekly",
        "  source: pipelines.py:weekly",
    ]
    assert "  cron: 0 3 * * 1 in Asia/Taipei, at most 1 run(s) at once" in lines


def test_schedule_takes_a_tuple_of_declarations_from_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scheduled = REPO / "tests" / "data" / "pipelines" / "scheduled.py"
    code = tmp_path / "my_schedules.py"
    code.write_text(
        "from vertex_retrain.schedules import ScheduleDeclaration\n"
        "SCHEDULES = (ScheduleDeclaration('nightly', 'weekly-retraining', cron='0 2 * * *',\n"
        f"    time_zone='Europe/Amsterdam', pipeline='{scheduled}:weekly'),)\n"
        "NOT_SCHEDULES = 'text'\n"
    )
    assert main(["schedule", "--schedules", f"{code}:SCHEDULES", "--dry-run"]) == 0
    assert "schedule nightly (active)" in capsys.readouterr().out
    assert main(["schedule", "--schedules", f"{code}:NOT_SCHEDULES", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "NOT_SCHEDULES is a str, not a tuple of ScheduleDeclaration" in err


def test_schedule_refuses_a_declared_source_of_another_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scheduled = REPO / "tests" / "data" / "pipelines" / "scheduled.py"
    path = tmp_path / "schedules.yaml"
    path.write_text(
        WEEKLY_FILE.read_text().replace("../pipelines/scheduled.py:weekly", f"{scheduled}:weekly")
        .replace("pipeline_name: weekly-retraining", "pipeline_name: other")
    )  # fmt: skip
    client = FakeScheduleClient()
    version = URIS_A["weekly-retraining"].replace("weekly-retraining", "other")
    args = _args(dry_run=False, schedules=str(path), template_version=[version])
    assert schedule_command.cli_schedule(args, client=client) == 2
    err = capsys.readouterr().err
    assert "is named 'weekly-retraining', but pipeline_name is 'other'" in err
    assert client.calls == []


def test_schedule_dry_run_refuses_a_pipeline_reference_that_names_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scheduled = REPO / "tests" / "data" / "pipelines" / "scheduled.py"
    path = tmp_path / "schedules.yaml"
    path.write_text(
        WEEKLY_FILE.read_text().replace("../pipelines/scheduled.py:weekly", f"{scheduled}:weekley")
    )
    assert main(["schedule", "--schedules", str(path), "--dry-run"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(
        "schedule: drink-shops-weekly-retraining: the pipeline to check before scheduling: "
    )
    assert "weekley" in captured.err

"""``estimate``'s typical month follows the trainer's warm-start declaration, read as the run's
plan_training reads it (vertex_retrain.cli.trainer_declaration): all full retrains for a trainer
that declares none, warm weeks for one that does, and a plain "assumed, not read" when the
source cannot be read here.

The pipeline is a user's small weekly one (tests/data/pipelines/planned_training.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.data.pipelines.planned_training import planned_training
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.main import main
from vertex_retrain.cli.trainer_declaration import TrainerWarmStart, trainer_warm_start
from vertex_retrain.cli.week_costs import WEEKS_PER_MONTH, estimate_week_kinds

FILE = Path(__file__).resolve().parent / "data" / "pipelines" / "planned_training.py"
REFERENCE = f"{FILE}:planned_training"
DECLARED = '[tool.vertex-retrain]\nwarm-start-flag = "--warm_from"\n'
UNDECLARED = '[project]\nname = "mytrainer"\n'


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return compile_to_dict(planned_training)


def _trainer(folder: Path, pyproject: str | None) -> str:
    folder.mkdir(parents=True)
    if pyproject is not None:
        (folder / "pyproject.toml").write_text(pyproject)
    return str(folder)


def _read(spec: dict[str, Any], source_uri: str | None) -> TrainerWarmStart:
    arguments = default_arguments(spec)
    if source_uri is not None:
        arguments["source_uri"] = source_uri
    return trainer_warm_start(spec, arguments)


def test_trainer_warm_start_reads_the_declared_flag(spec: dict[str, Any], tmp_path: Path) -> None:
    found = _read(spec, _trainer(tmp_path / "src", DECLARED))
    assert found.declared is True and "declares warm starts (--warm_from)" in found.says


@pytest.mark.parametrize("pyproject", [UNDECLARED, None])
def test_trainer_warm_start_without_a_declaration_is_false(
    spec: dict[str, Any], tmp_path: Path, pyproject: str | None
) -> None:
    found = _read(spec, _trainer(tmp_path / "src", pyproject))
    assert found.declared is False and "declares no warm start" in found.says


def test_trainer_warm_start_reads_a_gs_source_where_local_runs_keep_it(
    spec: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    _trainer(tmp_path / "gcs" / "my-bucket" / "src", DECLARED)
    assert _read(spec, "gs://my-bucket/src").declared is True
    missing = _read(spec, "gs://my-bucket/elsewhere")
    assert missing.declared is None
    assert missing.says == (
        "the trainer's source 'gs://my-bucket/elsewhere' cannot be read on this machine: "
        "pass --param source_uri=<local path> to read it"
    )


def test_trainer_warm_start_hints_a_local_path_only_for_a_cloud_storage_source(
    spec: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    assert "--param source_uri=<local path>" in _read(spec, "/gcs/my-bucket/elsewhere").says
    local = _read(spec, str(tmp_path / "nowhere"))
    assert local.declared is None and local.says.endswith("cannot be read on this machine")


def test_trainer_warm_start_of_a_source_known_at_run_time_is_unknown(
    spec: dict[str, Any],
) -> None:
    found = _read(spec, None)  # source_uri has no default and no value
    assert found.declared is None and "known only at run time" in found.says


def test_trainer_warm_start_of_a_malformed_declaration_is_unknown_and_says_why(
    spec: dict[str, Any], tmp_path: Path
) -> None:
    bad = '[tool.vertex-retrain]\nwarm-start-flag = "from"\n'
    found = _read(spec, _trainer(tmp_path / "src", bad))
    assert found.declared is None and "expected a flag" in found.says


def _kinds(spec: dict[str, Any], trainer: TrainerWarmStart | None, **arguments: Any) -> Any:
    from vertex_retrain.cli.job_tasks import job_tasks

    values = {**default_arguments(spec), "source_uri": "unused", **arguments}
    payloads = [job.payload for job in job_tasks(spec, values) if job.payload is not None]
    return estimate_week_kinds(
        payloads, payloads, values, full_hours=2.0, location="us-central1", trainer=trainer
    )


def test_estimate_week_kinds_prices_all_full_weeks_for_a_trainer_without_warm_start(
    spec: dict[str, Any],
) -> None:
    kinds = _kinds(spec, TrainerWarmStart(False, "the trainer at src declares no warm start"))
    assert kinds.month.hours == pytest.approx(kinds.all_full_month.hours)
    assert kinds.full_weeks_per_month == round(WEEKS_PER_MONTH, 3)
    assert (
        kinds.assumption == "every week retrains fully: the trainer at src declares no warm start"
    )
    assert kinds.to_dict()["trainer_declares_warm_start"] is False


def test_estimate_week_kinds_warm_starts_a_trainer_that_declares_it(
    spec: dict[str, Any],
) -> None:
    kinds = _kinds(spec, TrainerWarmStart(True, "the trainer at src declares warm starts"))
    assert kinds.month.hours == pytest.approx(WEEKS_PER_MONTH * (2.0 / 4 + 0.5 * 3 / 4))
    assert "(the trainer at src declares warm starts)" in kinds.assumption
    assert "assumed, not read" not in kinds.assumption


@pytest.mark.parametrize(
    ("trainer", "said"),
    [
        (TrainerWarmStart(None, "its source cannot be read"), "its source cannot be read"),
        (None, "the trainer's declaration is not read"),
    ],
)
def test_estimate_week_kinds_says_a_warm_start_it_could_not_read_is_assumed(
    spec: dict[str, Any], trainer: TrainerWarmStart | None, said: str
) -> None:
    kinds = _kinds(spec, trainer)
    assert kinds.month.hours < kinds.all_full_month.hours  # the warm weeks are kept
    assert f"assumed, not read: {said}; a trainer that declares none" in kinds.assumption


def test_estimate_week_kinds_retrains_fully_with_warm_start_off_whatever_is_declared(
    spec: dict[str, Any],
) -> None:
    kinds = _kinds(spec, TrainerWarmStart(True, "declared"), warm_start=False)
    assert kinds.month.hours == pytest.approx(kinds.all_full_month.hours)


def test_estimate_command_prices_the_month_by_the_trainers_declaration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--location", "us-central1", "--json"]
    for name, pyproject in [("declares", DECLARED), ("plain", UNDECLARED)]:
        source = _trainer(tmp_path / name, pyproject)
        assert main(["estimate", REFERENCE, "--param", f"source_uri={source}", *flags]) == 0
    declares, plain = (
        json.loads(document)["week_kinds"] for document in _documents(capsys.readouterr().out)
    )
    assert declares["trainer_declares_warm_start"] is True
    assert plain["trainer_declares_warm_start"] is False
    assert plain["assumption"].startswith("every week retrains fully: the trainer at ")
    month, all_full = (plain["weeks"][i]["hours"] for i in (3, 4))
    assert month == pytest.approx(all_full)
    assert declares["weeks"][3]["hours"] < month


def _documents(out: str) -> list[str]:
    """The JSON documents printed one after another."""
    decoder, found, index = json.JSONDecoder(), [], 0
    while index < len(out):
        _, end = decoder.raw_decode(out, index)
        found.append(out[index:end])
        index = end
        while index < len(out) and out[index].isspace():
            index += 1
    return found


def test_estimate_command_says_which_month_it_priced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _trainer(tmp_path / "plain", UNDECLARED)
    argv = ["estimate", REFERENCE, "--location", "us-central1", "--param"]
    assert main([*argv, f"source_uri={source}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if "  month: " in line]
    assert f"every week retrains fully: the trainer at {source} declares no warm start" in line
    assert "expected_warm_training_hours" not in line  # no warm week in this month
    assert _week_kinds(lines) == ["full week", "typical month"]  # no week that never happens
    assert main([*argv, "source_uri=gs://my-bucket/unread"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (line,) = [line for line in lines if "  month: " in line]
    assert "warm-started (assumed, not read: the trainer's source 'gs://my-bucket/unread'" in line
    assert _week_kinds(lines) == [
        "full week", "warm week", "refused warm week", "typical month", "month of full retrains",
    ]  # fmt: skip


def _week_kinds(lines: list[str]) -> list[str]:
    """The kinds of week the estimate prices, in its order."""
    start = lines.index("by kind of week (training jobs only):") + 1
    return [line.split(":")[0].strip() for line in lines[start:] if " h of training" in line]


def test_trainer_warm_start_makes_no_local_root(
    spec: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    assert _read(spec, "gs://my-bucket/src").declared is None
    assert not (tmp_path / "root").exists()  # an estimate creates nothing

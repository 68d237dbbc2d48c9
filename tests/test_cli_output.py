"""What the command line prints: tables cut or whole, JSON, progress, the end-of-run report.

No ANSI codes off a terminal; colour and a live line on one; no dict reprs.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from data.serving.support import register_echo

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_tables import endpoints_table
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.cli.console import ANSI, Column, cell_text, render_table
from vertex_retrain.cli.registry_commands import cli_endpoints, cli_models
from vertex_retrain.cli.run_progress import RunProgress, format_duration
from vertex_retrain.cli.run_report import build_report
from vertex_retrain.invocation import ENVIRONMENT_VARIABLE


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


WIDE_RECORDS = [{"name": "recs", "metrics": {f"metric_{i}": i / 3 for i in range(40)}}]
WIDE_COLUMNS = (Column("name", "NAME"), Column("metrics", "METRICS", 20))


def test_render_table_cuts_wide_cells_on_a_terminal_unless_wide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    cut, whole = FakeTerminal(), FakeTerminal()
    render_table(cut, WIDE_COLUMNS, WIDE_RECORDS)
    render_table(whole, WIDE_COLUMNS, WIDE_RECORDS, wide=True)
    assert max(len(ANSI.sub("", line)) for line in cut.getvalue().splitlines()) <= 80
    assert "…" in cut.getvalue() and "metric_39=13" in whole.getvalue()
    assert "metric_39" not in cut.getvalue()
    assert "{" not in whole.getvalue()  # cells never show a dict repr
    hint = "(cells cut with … to fit the width; --wide shows them whole)"
    assert cut.getvalue().splitlines()[-1] == hint
    assert hint not in whole.getvalue()


def test_render_table_keeps_cells_whole_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    piped = io.StringIO()
    render_table(piped, WIDE_COLUMNS, WIDE_RECORDS)
    assert "metric_39=13" in piped.getvalue() and "…" not in piped.getvalue()
    assert "cells cut" not in piped.getvalue()
    assert not ANSI.search(piped.getvalue())


def test_render_table_cuts_only_digest_cells_off_a_terminal() -> None:
    columns = (Column("uri", "URI", 10), Column("metrics", "METRICS", 20, digest=True))
    uri = "gs://bucket/a/long/path/to/the/model/"
    piped = io.StringIO()
    render_table(piped, columns, [{"uri": uri, **WIDE_RECORDS[0]}])
    row = piped.getvalue().splitlines()[1]
    assert row.startswith(uri + " ")  # the URI whole, though longer than its max_width
    assert "…" in row and "metric_39" not in row  # the digest cut at its max_width
    assert len(row) <= len(uri) + 2 + 20
    assert piped.getvalue().splitlines()[-1].startswith("(cells cut with …")


def test_render_table_gives_no_hint_when_every_cell_fits() -> None:
    out = io.StringIO()
    render_table(out, (Column("name", "NAME"), Column("m", "M", 20)), [{"name": "a", "m": "b"}])
    assert out.getvalue().splitlines() == ["NAME  M", "a     b"]


def test_render_table_says_none_under_the_headings_when_empty() -> None:
    out = io.StringIO()
    render_table(out, (Column("a", "A"),), [])
    assert out.getvalue().splitlines() == ["A", "(none)"]


def test_cell_text_shows_values_not_reprs() -> None:
    assert cell_text({"champion": "2", "rate": 0.123456}) == "champion=2, rate=0.1235"
    assert cell_text(["a", "b"]) == "a, b"
    assert cell_text(None) == cell_text([]) == "-"
    assert cell_text(True) == "yes"


def test_models_json_and_table_show_the_same_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    register_echo(ModelRegistry(), "a", 0)
    as_json = io.StringIO()
    assert cli_models(argparse.Namespace(model=None, json=True), as_json) == 0
    (record,) = json.loads(as_json.getvalue())
    assert (record["model"], record["versions"], record["latest_version"]) == ("recs", 1, "1")
    table = io.StringIO()
    assert cli_models(argparse.Namespace(model="recs", wide=True), table) == 0
    assert "gs://test-bucket/models/recs/a" in table.getvalue()
    versions = io.StringIO()
    assert cli_models(argparse.Namespace(model="recs", json=True), versions) == 0
    assert json.loads(versions.getvalue())[0]["artifact_uri"] == "gs://test-bucket/models/recs/a"


def _feed(progress: RunProgress, *lines: str) -> None:
    for line in lines:
        progress.feed(line)


def test_run_progress_shows_epoch_loss_and_eta_from_the_replica_log() -> None:
    out = io.StringIO()
    times = iter([0.0, 10.0, 20.0, 30.0, 95.0])
    progress = RunProgress(out, clock=lambda: next(times))
    _feed(
        progress,
        "05:16 - INFO - Executing task \x1b[96m'train'\x1b[0m",
        "    [workerpool0-0] 2026 INFO trainer.train: progress step=100/1000 epoch=1 loss=3.1",
        "    [workerpool0-0] 2026 INFO trainer.train: progress step=200/1000 epoch=1 loss=2.9",
        "    [workerpool0-0] 2026 INFO trainer.train: progress step=300/1000 epoch=2 loss=2.5",
        "    [executor] warning: a GPU image",
        "    [executor] warning: a GPU image",
        "05:17 - INFO - Task \x1b[96m'train'\x1b[0m finished with status \x1b[92mSUCCESS\x1b[0m",
    )
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "step train: running"
    # 100 steps per 10 s from the first progress line: 700 steps left, 70 s.
    assert "  train: epoch 2, step 300/1000 (30%), loss 2.5, ETA 1m10s" in lines
    assert lines.count("  warning: a GPU image") == 1
    assert lines[-1] == "✓ step train: done in 1m35s"
    assert not ANSI.search(out.getvalue())


def test_run_progress_on_a_terminal_draws_a_live_line_in_colour() -> None:
    out = FakeTerminal()
    progress = RunProgress(out)
    _feed(
        progress,
        "Executing task 'prepare'",
        "Task 'prepare' finished with status FAILURE",
    )
    progress.close()
    assert ANSI.search(out.getvalue()) and "step prepare: FAILURE" in out.getvalue()


def test_format_duration() -> None:
    assert [format_duration(s) for s in (4.24, 83, 3725)] == ["4.2s", "1m23s", "1h02m05s"]


def _task(run_dir: Path, name: str, outputs: dict[str, object]) -> Path:
    folder = run_dir / name
    folder.mkdir(parents=True)
    (folder / "executor_output.json").write_text(json.dumps(outputs))
    return folder


def test_run_report_names_root_tuning_report_model_and_endpoint(tmp_path: Path) -> None:
    run_dir = tmp_path / "pipeline-root" / "weekly-retraining-1"
    _task(run_dir, "evaluate-model", {
        "parameterValues": {"is_better": True, "reason": "beats the champion", "rule": {
            "primary": "ndcg_at_10", "metrics": {"ndcg_at_10": "higher"},
            "reference": "popularity"}},
        "artifacts": {"metrics": {"artifacts": [{"metadata": {
            "candidate_ndcg_at_10": 0.61, "champion_ndcg_at_10": 0.6,
            "reference_popularity_ndcg_at_10": 0.25, "reference_usual_ndcg_at_10": 0.6,
            "candidate_recall_at_10": 0.8}}]}},
    })  # fmt: skip
    _task(run_dir, "register-model", {
        "parameterValues": {"version_id": "3", "aliases": ["champion", "default"]},
        "artifacts": {"vertex_model": {"artifacts": [{"metadata": {
            "resourceName": "models/guess-your-order@3"}}]}},
    })  # fmt: skip
    _task(run_dir, "deploy-model", {"parameterValues": {"deployed_model_id": "7",
                                                        "traffic": {"7": 100}}})  # fmt: skip
    tune = _task(run_dir, "hp-tune", {})
    (tune / "trials_report").write_text("<html>study</html>")
    report = build_report(
        "weekly-retraining",
        succeeded=True,
        wall_seconds=125,
        log_path=tmp_path / "run.log",
        run_dir=run_dir,
        arguments={"model_display_name": "guess-your-order", "endpoint_display_name": "gyo"},
        summary={"training": {"model_uri": "gs://b/m"},
                 "cost_on_vertex": {"on_demand": 2.0, "spot": 0.7, "currency": "USD",
                                    "assumed_training_hours": 2}},
    )  # fmt: skip
    assert (run_dir / "tuning-report.html").read_text() == "<html>study</html>"
    out = io.StringIO()
    report.render(out)
    text = out.getvalue()
    assert text.startswith("run weekly-retraining succeeded in 2m05s\n")
    assert f"pipeline root   {run_dir}\n" in text
    assert f"tuning report   {run_dir / 'tuning-report.html'}\n" in text
    assert "model           guess-your-order version 3 (aliases champion, default)" in text
    # The primary metric first, against the champion and the declared reference only.
    assert "ndcg_at_10 0.6100 (champion 0.6000, popularity 0.2500); recall_at_10 0.8000" in text
    assert "model servers   stopped with this run" in text
    assert "endpoint        gyo: 100% to deployed model id 7 (version 3)\n" in text
    # The URL is where the endpoint answers once served again, never a dead "URL" row.
    assert (
        "serve again     vertex-retrain serve gyo, then POST to "
        "http://127.0.0.1:8080/v1/endpoints/gyo:predict\n"
    ) in text
    assert text.count("http://") == 1
    assert "roll back" not in text  # the endpoint's first deployment: nothing to go back to
    assert "evaluation      better than the champion: beats the champion" in text
    assert "{" not in text and not ANSI.search(text)
    as_json = report.to_json()
    assert as_json["model"] == {
        "display_name": "guess-your-order",
        "version": "3",
        "aliases": ["champion", "default"],
        "promoted": True,
    }
    assert as_json["endpoint"]["traffic"] == {"7": 100}
    assert json.loads(json.dumps(as_json))["tuning_report"].endswith("tuning-report.html")
    # On an 80-column terminal too, a path stays on one line (the terminal's soft wrap copies
    # as one line; a cell wrapped by us would not).
    terminal = FakeTerminal()
    report.render(terminal)
    plain = ANSI.sub("", terminal.getvalue())
    assert len(str(run_dir)) + 16 > 80
    assert any(line.endswith(str(run_dir)) for line in plain.splitlines()), plain


@pytest.mark.parametrize(
    ("previous", "row"),
    [
        (
            {"6": 100},
            "roll back      vertex-retrain endpoints rollback 'shop recs' restores the split "
            "before this deployment, 100% to deployed model id 6\n",
        ),
        ({"7": 100}, None),  # a re-run that changed no share
    ],
)
def test_run_report_names_the_rollback_command_and_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, previous: dict[str, int], row: str | None
) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    run_dir = tmp_path / "weekly-retraining-2"
    deployed = {"deployed_model_id": "7", "traffic": {"7": 100}, "previous_traffic": previous}
    _task(run_dir, "deploy-model", {"parameterValues": deployed})
    report = build_report(
        "weekly-retraining", succeeded=True, wall_seconds=1, log_path=tmp_path / "run.log",
        run_dir=run_dir, arguments={"endpoint_display_name": "shop recs"}, summary={},
    )  # fmt: skip
    out = io.StringIO()
    report.render(out)
    # Both commands paste back as they are, quoted.
    assert "serve again    vertex-retrain serve 'shop recs', then POST" in out.getvalue()
    if row is None:
        assert "roll back" not in out.getvalue()
    else:
        assert row in out.getvalue(), out.getvalue()
    assert report.to_json()["endpoint"]["previous_traffic"] == previous
    assert report.to_json()["endpoint"]["rollback_command"] == (
        "vertex-retrain endpoints rollback 'shop recs'"
    )


def test_run_report_of_a_run_that_never_promotes_says_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "pipeline-root" / "train-only-1"
    _task(run_dir, "evaluate-model", {"parameterValues": {
        "is_better": True, "champion_score": -1.0,
        "reason": "no champion yet: the candidate becomes the first champion"}})  # fmt: skip
    _task(run_dir, "register-model", {
        "parameterValues": {"version_id": "1", "aliases": ["challenger", "default"]},
    })  # fmt: skip
    report = build_report(
        "train-only",
        succeeded=True,
        wall_seconds=5,
        log_path=tmp_path / "run.log",
        run_dir=run_dir,
        arguments={"model_display_name": "guess-your-order"},
        summary=None,
    )
    out = io.StringIO()
    report.render(out)
    text = out.getvalue()
    [evaluation] = [line for line in text.splitlines() if line.startswith("evaluation ")]
    assert evaluation.split(None, 1)[1] == (
        "no champion yet; registered as challenger: train-only never promotes"
    )
    assert "first champion" not in text
    assert report.to_json()["model"]["promoted"] is False


@pytest.mark.parametrize(
    ("better", "said"),
    [
        (True, "promoted: no champion yet: the candidate becomes the first champion"),
        (False, "not promoted: below the floor"),
    ],
)
def test_run_report_of_a_first_candidate_says_promoted_or_not(
    tmp_path: Path, better: bool, said: str
) -> None:
    # With no champion yet there is nothing to be "better than": the line says the outcome.
    run_dir = tmp_path / "pipeline-root" / "weekly-1"
    reason = (
        "no champion yet: the candidate becomes the first champion"
        if better
        else ("below the floor")
    )
    _task(run_dir, "evaluate-model", {"parameterValues": {
        "is_better": better, "champion_score": -1.0, "reason": reason}})  # fmt: skip
    report = build_report(
        "weekly", succeeded=True, wall_seconds=5, log_path=tmp_path / "run.log",
        run_dir=run_dir, arguments={}, summary=None,
    )  # fmt: skip
    out = io.StringIO()
    report.render(out)
    [evaluation] = [line for line in out.getvalue().splitlines() if line.startswith("evaluation ")]
    assert evaluation.split(None, 1)[1] == said


def test_run_report_cost_line_names_the_region_of_its_prices() -> None:
    from vertex_retrain.cli.run_report import _cost_line

    cost = {"currency": "USD", "on_demand": 1.5, "spot": 0.5, "assumed_training_hours": 2.0}
    assert _cost_line({**cost, "location": "europe-west4"}) == (
        "on-demand 1.50 USD, Spot 0.50 USD in europe-west4 (2 h of training assumed)"
    )
    assert _cost_line(cost) == "on-demand 1.50 USD, Spot 0.50 USD (2 h of training assumed)"


def test_endpoints_table_heads_the_deployed_model_id_apart_from_the_version(root: Path) -> None:
    table = io.StringIO()
    assert cli_endpoints(argparse.Namespace(action=None), table) == 0
    assert table.getvalue().split()[:5] == ["ENDPOINT", "DEPLOYED", "ID", "MODEL", "VERSION"]
    history = io.StringIO()
    LocalEndpoints().get_or_create("ep")
    assert cli_endpoints(argparse.Namespace(action="history", endpoint="ep"), history) == 0
    assert "TRAFFIC (deployed model id=%)" in history.getvalue()
    assert endpoints_table().split()[:3] == ["ENDPOINT", "DEPLOYED", "ID"]


def test_run_report_shows_the_week_s_last_decision_and_registration(tmp_path: Path) -> None:
    # A refused warm start, then the full retrain in the same run: its tasks are "-2"; a
    # pipeline with ten uses of a component puts "-10" after "-9", not after "-1".
    run_dir = tmp_path / "pipeline-root" / "weekly-retraining-2"
    _task(run_dir, "evaluate-model", {"parameterValues": {"is_better": False,
                                                          "reason": "warm: worse"}})  # fmt: skip
    _task(run_dir, "evaluate-model-2", {"parameterValues": {"is_better": False,
                                                            "reason": "full: worse"}})  # fmt: skip
    for task, version in (("register-model", "8"), ("register-model-9", "9"),
                          ("register-model-10", "10")):  # fmt: skip
        _task(run_dir, task, {"parameterValues": {"version_id": version,
                                                  "aliases": ["challenger"]}})  # fmt: skip
    (run_dir / "register-model-11").mkdir()  # a task that started and wrote nothing
    report = build_report(
        "weekly-retraining", succeeded=True, wall_seconds=5, log_path=tmp_path / "run.log",
        run_dir=run_dir, arguments={"model_display_name": "m"}, summary=None,
    )  # fmt: skip
    assert report.model["version"] == "10"
    assert report.decision["reason"] == "full: worse"


def _report_of_summary(
    tmp_path: Path, summary: dict[str, Any], *, succeeded: bool
) -> tuple[str, dict[str, Any]]:
    """The run report of a run without a run folder, from its summary alone: rendered, and
    as ``run --json`` gives it."""
    report = build_report(
        "weekly-retraining", succeeded=succeeded, wall_seconds=5, log_path=tmp_path / "run.log",
        run_dir=None, arguments={}, summary=summary,
    )  # fmt: skip
    out = io.StringIO()
    report.render(out)
    return out.getvalue(), report.to_json()


def test_run_report_shows_no_cost_for_a_run_that_trained_nothing(tmp_path: Path) -> None:
    cost = {"on_demand": 0.44, "spot": 0.1, "currency": "USD", "assumed_training_hours": 2}
    stopped, trained = (
        _report_of_summary(tmp_path, summary, succeeded=False)[0]
        for summary in ({"cost_on_vertex": cost}, {"cost_on_vertex": cost, "training": {}})
    )
    assert "cost on Vertex" not in stopped  # the data gate stopped it: nothing was paid
    assert "cost on Vertex  on-demand 0.44 USD" in trained


def test_run_report_says_which_kind_of_training_ran_and_why(tmp_path: Path) -> None:
    kind = {"kind": "warm", "planned": "warm", "reason": "warm start from champion version 3"}
    text, as_json = _report_of_summary(tmp_path, {"training_kind": kind}, succeeded=True)
    assert re.search(r"^training +warm: warm start from champion version 3$", text, re.M)
    assert as_json["training_kind"] == kind
    text, as_json = _report_of_summary(tmp_path, {"training_kind": None}, succeeded=True)
    assert not re.search(r"^training ", text, re.M)  # no plan: nothing said
    assert as_json["training_kind"] == {}


NARROW_COLUMNS = tuple(Column(f"c{i}", f"COLUMN{i:02d}") for i in range(12))
NARROW_RECORDS = [{f"c{i}": f"value{i:03d}" for i in range(12)}]


@pytest.mark.parametrize(
    ("width", "gap", "wrapped"),
    [("118", "  ", False), ("117", " ", False), ("107", " ", False), ("106", " ", True)],
)
def test_render_table_never_drops_a_column_wider_than_the_terminal(
    monkeypatch: pytest.MonkeyPatch, width: str, gap: str, wrapped: bool
) -> None:
    # 12 columns of 8 characters: 96, and 22 blanks between them at 2 a gap, 11 at 1.
    monkeypatch.setenv("COLUMNS", width)
    out = FakeTerminal()
    render_table(out, NARROW_COLUMNS, NARROW_RECORDS)
    lines = ANSI.sub("", out.getvalue()).splitlines()
    assert "COLUMN11" in out.getvalue() and "value011" in out.getvalue()  # rich dropped them
    assert lines[0].startswith(f"COLUMN00{gap}COLUMN01{gap}C")
    note = f"(rows wider than the terminal's {width} columns: wrapped, none left out)"
    assert (lines[-1] == note) is wrapped

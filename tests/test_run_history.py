"""The weeks on record: the run record, the local history, Vertex AI Experiments, `history`."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.backend import LocalBackend
from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryDatabase,
    RegistryNotFoundError,
)
from vertex_retrain.backends.local.model_registry.registry_schema import SCHEMA_VERSION, migrate
from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.backends.vertex.experiments import experiment_name, log_week
from vertex_retrain.cli.main import main
from vertex_retrain.run_record import RunRecord, record_from_summary
from vertex_retrain.steps.run_history import record_week

FACTS: dict[str, Any] = {
    "pipeline_run": "weekly-retraining-20261123",
    "state": "SUCCEEDED",
    "data_window": {
        "as_of": "2026-11-23",
        "source": "schedule",
        "first_row": "2026-08-31T07:00:00",
        "train_rows": 900,
        "content_hash": "sha256:ab",
    },
    "data_gate": {
        "passed": True,
        "verdict": "data gate passed for week 12",
        "breaches": [],
        "statistics": {"rows": 353, "distinct_member_id": 199, "groups": 8},
    },
    "decision": {
        "is_better": True,
        "reason": "ndcg_at_10 improved by +0.0100",
        "candidate_score": 0.23,
        "champion_score": 0.22,
        "rule": {
            "primary": "ndcg_at_10",
            "metrics": {"ndcg_at_10": "higher", "recall_at_10": "higher"},
            "reference": "popularity",
        },
    },
    "metrics": {
        "candidate_ndcg_at_10": 0.23,
        "champion_ndcg_at_10": 0.22,
        "reference_popularity_ndcg_at_10": 0.2,
        "candidate_recall_at_10": 0.44,
        "reference_popularity_recall_at_10": 0.41,
        "reference_last_week_recall_at_10": 0.3,
        "is_better": 1.0,
    },
    "training": {"goodput": 0.9, "restarts": 2.0, "spot_fallback": 1.0},
    "cost_on_vertex": {
        "assumed_training_hours": 2.0,
        "on_demand": 1.68,
        "spot": 0.71,
        "currency": "USD",
    },
    "spot_fallback": {
        "spot_hours": 1.0,
        "on_demand_hours": 0.5,
        "total_cost": 0.775,
        "currency": "USD",
    },
}


def _record(**changes: Any) -> RunRecord:
    record = record_from_summary(FACTS, model="guess-your-order", backend="local")
    return replace(record, recorded_at="2026-11-23T04:00:00+00:00", **changes)


def test_record_from_summary_keeps_window_gate_roles_decision_cost_and_fallback() -> None:
    record = _record()
    assert (record.run, record.as_of, record.state) == (
        "weekly-retraining-20261123",
        "2026-11-23",
        "SUCCEEDED",
    )
    assert record.window == {
        "source": "schedule",
        "first_row": "2026-08-31T07:00:00",
        "train_rows": 900,
    }
    assert record.data["passed"] is True and record.data["statistics"]["rows"] == 353
    assert record.candidate == {"ndcg_at_10": 0.23, "recall_at_10": 0.44}
    assert record.champion == {"ndcg_at_10": 0.22}
    assert record.references == {
        "popularity": {"ndcg_at_10": 0.2, "recall_at_10": 0.41},
        "last_week": {"recall_at_10": 0.3},  # a reference name may hold underscores
    }
    assert record.decision["is_better"] is True
    assert (record.decision["primary_metric"], record.decision["reference"]) == (
        "ndcg_at_10",
        "popularity",
    )
    assert record.decision["metrics"] == ["ndcg_at_10", "recall_at_10"]
    assert record.cost["spot_plan"] == 0.71 and record.cost["on_demand_plan"] == 1.68
    assert (record.goodput, record.restarts) == (0.9, 2)
    assert record.spot_fallback["total_cost"] == 0.775
    assert RunRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_record_of_a_failed_run_keeps_its_error_and_no_metrics() -> None:
    failed = record_from_summary(
        {"pipeline_run": "r", "state": "FAILED", "error": "boom", "cost_on_vertex": {}},
        model="m",
        backend="vertex",
    )
    assert (failed.state, failed.error, failed.candidate, failed.cost) == ("FAILED", "boom", {}, {})
    assert failed.experiment_metrics() == {}


def test_run_history_replaces_a_run_and_orders_weeks_oldest_first(root: Path) -> None:
    history = RunHistory()
    history.record(_record(run="b", as_of="2026-11-30"))
    history.record(_record(run="a", as_of="2026-11-23", state="FAILED"))
    history.record(_record(run="a", as_of="2026-11-23"))  # the exit handler ran again
    history.record(_record(run="c", model="other"))
    assert [(r.run, r.state) for r in history.weeks("guess-your-order")] == [
        ("a", "SUCCEEDED"),
        ("b", "SUCCEEDED"),
    ]
    assert history.models() == ["guess-your-order", "other"]
    with pytest.raises(RegistryNotFoundError, match="models with runs: guess-your-order, other"):
        history.weeks("nope")


def test_registry_migrates_a_version_2_database_to_keep_run_records(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    migrate(connection, target=2)
    connection.execute("COMMIT")
    connection.close()
    RunHistory(RegistryDatabase(path)).record(_record())
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 3
        assert check.execute("SELECT run_name FROM pipeline_runs").fetchall() == [
            ("weekly-retraining-20261123",)
        ]


@dataclass
class FakeExperiments:
    """Records every call to the Vertex AI Experiments seam."""

    calls: list[tuple[str, Any]] = field(default_factory=list)

    def init(self, *, project: str, location: str, experiment: str, tensorboard: str = "") -> None:
        self.calls.append(
            ("init", {"project": project, "location": location, "experiment": experiment})
        )

    def start_run(self, run: str) -> None:
        self.calls.append(("start_run", run))

    def log_params(self, params: dict[str, Any]) -> None:
        self.calls.append(("log_params", params))

    def log_metrics(self, metrics: dict[str, float]) -> None:
        self.calls.append(("log_metrics", metrics))

    def end_run(self, state: str) -> None:
        self.calls.append(("end_run", state))


def test_log_week_logs_one_experiment_run_with_the_weeks_params_and_metrics() -> None:
    fake = FakeExperiments()
    where = log_week(_record(), project="p", location="asia-east1", client=fake)
    calls = dict(fake.calls)
    assert [name for name, _ in fake.calls] == [
        "init",
        "start_run",
        "log_params",
        "log_metrics",
        "end_run",
    ]
    assert calls["init"] == {
        "project": "p",
        "location": "asia-east1",
        "experiment": "guess-your-order",
    }
    assert calls["start_run"] == "weekly-retraining-20261123"
    assert calls["log_params"] == {
        "model": "guess-your-order",
        "backend": "local",
        "state": "SUCCEEDED",
        "as_of": "2026-11-23",
        "window_source": "schedule",
        "first_row": "2026-08-31T07:00:00",
        "data_gate": "passed",
        "decision": "champion",
        "decision_reason": "ndcg_at_10 improved by +0.0100",
        "spot_fallback": "yes",
    }
    metrics = calls["log_metrics"]
    assert metrics["candidate_ndcg_at_10"] == 0.23
    assert metrics["champion_ndcg_at_10"] == 0.22
    assert metrics["reference_popularity_recall_at_10"] == 0.41
    assert metrics["data_rows"] == 353.0 and metrics["data_groups"] == 8.0
    assert (metrics["goodput"], metrics["restarts"]) == (0.9, 2.0)
    assert (metrics["cost_spot_plan"], metrics["cost_on_demand_plan"]) == (0.71, 1.68)
    assert metrics["fallback_total_cost"] == 0.775
    assert all(isinstance(value, float) for value in metrics.values())
    assert calls["end_run"] == "COMPLETE"
    assert where == "Vertex AI experiment guess-your-order, run weekly-retraining-20261123"


def test_log_week_ends_a_failed_weeks_run_as_failed() -> None:
    fake = FakeExperiments()
    log_week(_record(state="FAILED"), project="p", location="l", client=fake)
    assert fake.calls[-1] == ("end_run", "FAILED")


def test_vertex_backend_records_the_week_through_its_experiments_client() -> None:
    fake = FakeExperiments()
    backend = VertexBackend("p", "europe-west4", experiments=fake)
    record, where = record_week(FACTS, backend=backend, model="Guess Your Order!")
    assert where.startswith("Vertex AI experiment guess-your-order, run ")
    assert record.backend == "vertex" and record.recorded_at
    assert ("start_run", "weekly-retraining-20261123") in fake.calls


def test_record_week_reports_a_failing_record_keeper_instead_of_raising() -> None:
    class Broken(FakeExperiments):
        def init(
            self, *, project: str, location: str, experiment: str, tensorboard: str = ""
        ) -> None:
            raise PermissionError("aiplatform.metadataStores.get denied")

    _, where = record_week(FACTS, backend=VertexBackend("p", "l", experiments=Broken()), model="m")
    assert where == "not recorded (PermissionError: aiplatform.metadataStores.get denied)"


def test_experiment_name_fits_vertex_rules() -> None:
    assert experiment_name("Guess Your_Order 2") == "guess-your-order-2"
    assert len(experiment_name("x" * 300)) == 128
    with pytest.raises(ValueError, match="no letter or digit"):
        experiment_name("__")


def test_local_backend_record_run_goes_to_the_registry_database(root: Path) -> None:
    where = LocalBackend().record_run(_record())
    assert str(root / "registry.db") in where
    assert [r.run for r in RunHistory().weeks("guess-your-order")] == ["weekly-retraining-20261123"]


EVIDENCE: dict[str, Any] = {
    "reference": "popularity",
    "champion_comparison": "compared",
    "intervals": {
        "champion": {
            "other": "champion",
            "point": 0.01,
            "low": 0.004,
            "high": 0.016,
            "level": 0.95,
            "resamples": 1000,
            "entities": 199,
        },
    },
    "override": {},
}


def _record_two_weeks() -> None:
    history = RunHistory()
    history.record(_record(run="w1", as_of="2026-11-16", spot_fallback={}))
    history.record(_record(run="w2", as_of="2026-11-23"))


def test_record_keeps_the_decisions_evidence_interval_comparison_and_override() -> None:
    replay = "not comparable: the gate period lies in the champion's training window"
    evidence = {
        **EVIDENCE,
        "reference": "usual",
        "champion_comparison": replay,
        "override": {"decision": "better", "reason": "drill", "rule_said": "..."},
    }
    facts = {**FACTS, "decision": {**FACTS["decision"], "evidence": evidence}}
    record = record_from_summary(facts, model="m", backend="local")
    assert record.decision["reference"] == "usual"  # the one it had to beat, not the first
    assert record.decision["champion_comparison"] == replay
    assert record.decision["intervals"]["champion"]["low"] == 0.004
    assert record.decision["override"]["reason"] == "drill"
    params = record.experiment_params()
    assert params["override_reason"] == "drill" and params["champion_comparison"] == replay
    assert RunRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    listed = record_from_summary(
        {**FACTS, "decision": {**FACTS["decision"], "rule": {"reference": ["a", "b"]}}},
        model="m",
        backend="local",
    )
    assert listed.decision["reference"] == "a"  # without evidence: the first declared


def test_history_shows_the_interval_and_marks_forced_and_replayed_weeks(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = RunHistory()
    with_evidence = {**FACTS, "decision": {**FACTS["decision"], "evidence": EVIDENCE}}
    history.record(replace(record_from_summary(with_evidence, model="m", backend="local"), run="a"))
    forced = {
        **EVIDENCE,
        "intervals": {},
        "champion_comparison": "not comparable: a replay",
        "override": {"decision": "better", "reason": "drill", "rule_said": "x"},
    }
    facts = {**FACTS, "decision": {**FACTS["decision"], "evidence": forced}}
    history.record(replace(record_from_summary(facts, model="m", backend="local"), run="b"))
    assert main(["history", "m", "--no-plot", "--all-runs"]) == 0  # two runs of one week
    lines = capsys.readouterr().out.splitlines()
    assert "! = decision forced, ~ = champion not comparable (a replay)" in lines[0]
    assert (
        "COST = Vertex's price of the training at the hours assumed for its TRAIN kind" in lines[0]
    )
    assert (
        "warm: expected_warm_training_hours" in lines[0]
        and "ROWS = the newest period's" in lines[0]
    )
    assert "CI-LOW" in lines[1].split()
    assert "+0.0040c" in lines[2].split()
    assert lines[3].split()[1] == "champion!~"


def test_history_prints_the_weeks_as_a_table_and_writes_the_plot(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _record_two_weeks()
    assert main(["history", "guess-your-order"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("guess-your-order: ndcg_at_10 of each model")
    assert lines[1].split() == [
        "AS", "OF", "OUTCOME", "ROWS", "CAND", "CHAMP", "REF", "CI-LOW", "GOODPUT", "COST",
    ]  # fmt: skip
    assert lines[2].split() == [
        "2026-11-16", "champion", "353", "0.2300", "0.2200", "0.2000", "-", "0.9", "0.71", "USD",
    ]  # fmt: skip
    assert lines[3].split()[0] == "2026-11-23" and lines[3].endswith("USD*")
    plot = root / "history" / "guess-your-order.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert lines[-1] == f"plot of guess-your-order (ndcg_at_10, recall_at_10): {plot}"


def test_history_json_lists_every_record_whole(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _record_two_weeks()
    plot = tmp_path / "weeks.png"
    assert main(["history", "guess-your-order", "--json", "--plot", str(plot)]) == 0
    captured = capsys.readouterr()
    records = json.loads(captured.out)
    assert [r["run"] for r in records] == ["w1", "w2"]
    assert records[1] == _record(run="w2", as_of="2026-11-23").to_dict()
    assert plot.is_file() and str(plot) in captured.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "no recorded runs of model 'nope'; models with runs: guess-your-order"),
        (["guess-your-order", "--plot", "weeks.pdf"], "--plot must name a .png file"),
        (["--db", "/nonexistent/registry.db"], "no registry database there"),
    ],
)
def test_history_bad_input_is_one_line_and_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    _record_two_weeks()
    assert main(["history", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_history_of_an_empty_root_says_nothing_is_recorded(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--no-plot"]) == 0
    assert "no run recorded yet" in capsys.readouterr().out


def test_history_metric_option_picks_the_column_else_each_runs_primary_metric(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = RunHistory()
    history.record(_record(run="w1", as_of="2026-11-16", spot_fallback={}))
    rmse_rule = {"primary": "rmse", "metrics": {"rmse": "lower"}}
    demand = record_from_summary(
        {
            **FACTS,
            "pipeline_run": "d1",
            "decision": {**FACTS["decision"], "rule": rmse_rule},
            "metrics": {"candidate_rmse": 11.5, "candidate_ndcg_at_10": 0.1},
        },
        model="demand",
        backend="local",
    )
    history.record(demand)
    assert main(["history", "demand", "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("demand: rmse of each model") and "11.5" in out
    assert main(["history", "guess-your-order", "--no-plot", "--metric", "recall_at_10"]) == 0
    row = capsys.readouterr().out.splitlines()[2].split()
    assert row[:5] == ["2026-11-16", "champion", "353", "0.4400", "-"]
    assert row[5] == "0.4100"  # the declared reference's recall, four decimals as the summary


def test_history_metric_no_run_recorded_is_one_line_and_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    RunHistory().record(_record(run="w1", as_of="2026-11-16", spot_fallback={}))
    assert main(["history", "guess-your-order", "--no-plot", "--metric", "recal_at_10"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "--metric 'recal_at_10'" in captured.err
    assert "did you mean 'recall_at_10'" in captured.err


def test_recorded_metrics_takes_every_role() -> None:
    from vertex_retrain.cli.history_command import recorded_metrics

    record = replace(_record(), candidate={"a": 1.0}, champion={"b": 1.0},
                     references={"usual": {"c": 1.0}})  # fmt: skip
    assert recorded_metrics([record]) == {"a", "b", "c"}


def test_history_metric_is_not_checked_without_runs(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--no-plot", "--metric", "anything"]) == 0
    assert "no run recorded yet" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("direction", "low", "high", "shown"),
    [
        ("higher", 0.004, 0.016, "+0.0040c"),  # a sure gain
        ("higher", -0.016, -0.004, "-0.0160c"),  # a sure loss
        ("lower", -0.016, -0.004, "+0.0040c"),  # lower loss: a sure gain
        ("lower", 0.004, 0.016, "-0.0160c"),  # higher loss: a sure loss
    ],
)
def test_history_interval_is_the_worst_gain_in_the_metrics_better_direction(
    root: Path,
    capsys: pytest.CaptureFixture[str],
    direction: str,
    low: float,
    high: float,
    shown: str,
) -> None:
    interval = {**EVIDENCE["intervals"]["champion"], "low": low, "high": high}
    evidence = {**EVIDENCE, "intervals": {"champion": interval}}
    rule = {"primary": "score", "metrics": {"score": direction}, "reference": "popularity"}
    decision = {**FACTS["decision"], "evidence": evidence, "rule": rule}
    record = record_from_summary({**FACTS, "decision": decision}, model="m", backend="local")
    assert record.decision["primary_direction"] == direction
    RunHistory().record(replace(record, run="a"))
    assert main(["history", "m", "--no-plot"]) == 0
    assert shown in capsys.readouterr().out.splitlines()[2].split()


def test_history_shows_the_deciding_run_of_a_week_unless_all_runs(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = RunHistory()
    history.record(_record(run="w1-failed", as_of="2026-11-16", state="FAILED"))
    again = _record(run="w1-again", as_of="2026-11-16")
    history.record(replace(again, recorded_at="2026-11-23T05:00:00+00:00"))
    history.record(_record(run="w2", as_of="2026-11-23"))
    assert main(["history", "guess-your-order", "--no-plot"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "(1 earlier run(s) of a week re-run are not shown; --all-runs shows them)"
    rows = [line.split()[:2] for line in lines[3:]]
    assert rows == [["2026-11-16", "champion"], ["2026-11-23", "champion"]]
    assert main(["history", "guess-your-order", "--no-plot", "--all-runs", "--json"]) == 0
    every = json.loads(capsys.readouterr().out)
    assert sorted(r["run"] for r in every) == ["w1-again", "w1-failed", "w2"]

"""A candidate that is the champion itself: nothing to decide, and the summary, the record and
the local run's report say so (the evaluation job's side: tests/test_steps_evaluate.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.cli.run_report import build_report
from vertex_retrain.contracts.evaluation_declaration import parse_evaluation_declaration
from vertex_retrain.rules.same_model import is_same_model, same_folder
from vertex_retrain.run_record import record_from_summary
from vertex_retrain.steps.nothing_to_decide import nothing_to_decide
from vertex_retrain.steps.summary import decision_verdict, render_markdown

RULE = parse_evaluation_declaration(
    {"primary": "rmse", "metrics": {"rmse": "lower", "mae": "lower"}, "guardrails": {"mae": 0.5}}
)


def test_same_folder_ignores_a_trailing_slash_only() -> None:
    assert same_folder("gs://b/runs/1/model", "gs://b/runs/1/model/")
    assert not same_folder("gs://b/runs/1/model", "gs://b/runs/2/model")
    assert not same_folder("", "")  # no folder is no model
    assert same_folder("/root/runs/1/model/", "/root/runs/1/model")  # either side, a path too
    assert not same_folder("gs://b/runs/1/modelX", "gs://b/runs/1/model")  # only "/" goes
    assert not same_folder("gs://b/runs/1/model", "gs://b/runs/1/modelX")


def test_nothing_to_decide_promotes_nothing_and_names_the_version() -> None:
    decision = nothing_to_decide({"rmse": 4.0, "mae": 3.0}, RULE, version_id="7")
    assert decision.is_better is False and not decision.override
    assert decision.reason == (
        "the candidate is the current champion (version 7): nothing to decide; it keeps its "
        "aliases and its traffic"
    )
    assert decision.champion_comparison == "same model: version 7"
    assert is_same_model(decision.champion_comparison) and not is_same_model("compared")
    assert (decision.candidate_score, decision.champion_score) == (4.0, 4.0)
    assert decision.reported_metrics()["champion_rmse"] == 4.0


def test_nothing_to_decide_still_checks_the_metrics_the_rule_names() -> None:
    with pytest.raises(ValueError, match="the candidate has no metric 'mae'"):
        nothing_to_decide({"rmse": 4.0}, RULE, version_id="7")


def _facts(comparison: str, is_better: bool = False) -> dict[str, Any]:
    decision = {
        "is_better": is_better,
        "reason": "why",
        "rule": RULE.to_dict(),
        "evidence": {"champion_comparison": comparison, "intervals": {}, "override": {}},
    }
    return {"pipeline_run": "r", "state": "SUCCEEDED", "decision": decision}


@pytest.mark.parametrize(
    ("comparison", "is_better", "verdict", "word"),
    [
        ("same model: version 7", False, "champion unchanged", "unchanged"),
        ("compared", False, "challenger only", "challenger"),
        ("compared", True, "new champion", "champion"),
    ],
)
def test_summary_and_record_say_the_candidate_was_the_champion(
    comparison: str, is_better: bool, verdict: str, word: str
) -> None:
    facts = _facts(comparison, is_better)
    assert decision_verdict(facts["decision"]) == verdict
    assert f"**Decision:** {verdict}: why" in render_markdown(facts)
    record = record_from_summary(facts, model="m", backend="local")
    assert record.experiment_params()["decision"] == word


def test_run_report_of_a_candidate_that_was_the_champion_gives_the_reason_alone(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "pipeline-root" / "weekly-retraining-2"
    reason = "the candidate is the current champion (version 3): nothing to decide"
    folder = run_dir / "evaluate-model"
    folder.mkdir(parents=True)
    parameters = {**_facts("same model: version 3")["decision"], "reason": reason}
    (folder / "executor_output.json").write_text(json.dumps({"parameterValues": parameters}))
    report = build_report(
        "weekly-retraining",
        succeeded=True,
        wall_seconds=5,
        log_path=tmp_path / "run.log",
        run_dir=run_dir,
        arguments={"model_display_name": "m"},
        summary=None,
    )
    out = io.StringIO()
    report.render(out)
    (line,) = [line for line in out.getvalue().splitlines() if line.startswith("evaluation ")]
    assert line.split(None, 1)[1] == reason  # not "not better than the champion: ..."

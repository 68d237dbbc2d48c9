"""The weekly template runs locally, end to end, through both branches of the champion gate,
and for the week after: configured for the drink shops (examples/drink_shops/pipelines.py).

The first run on an empty root is a module fixture (``first_run``): each test that needs a
champion gets one from it, so any test passes alone, in any order, or on another xdist worker.
The training code is a copy made for the module, so its digest (the build's cache key) stays
put while the tree is being edited.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, evaluation_declaration, example_module
from trainer.split import week_of
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry, ModelVersion
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.router import start_router
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.local_run import cached_tasks, local_arguments, run_pipeline_locally

CHAIN = example_module(DRINK_SHOPS, "pipelines")
MODEL = CHAIN.MODEL
TINY = {
    "training_args": ["--epochs", "1", "--batch_size", "256"],
    "hyperparameters": {"learning_rate": 0.01, "embedding_dim": 32},
}


def _other_model(learning_rate: float) -> dict[str, Any]:
    """Hyperparameters of another model than the first run's, for the same week."""
    return {**TINY["hyperparameters"], "learning_rate": learning_rate}


def _run(overrides: dict[str, Any]) -> Any:
    spec = compile_to_dict(CHAIN.weekly)
    source = Path(os.environ["VERTEX_LOCAL_ROOT"]) / "trainer-source"
    arguments = local_arguments(
        default_arguments(spec), {**TINY, "source_uri": str(source), **overrides}
    )
    with open("/dev/null", "w") as quiet:
        return run_pipeline_locally(CHAIN.weekly, arguments, console=quiet)


def _predict(endpoint: str) -> tuple[dict[str, int], list[Any]]:
    with start_router(endpoint) as router:
        request = urllib.request.Request(
            f"{router.url}/v1/endpoints/{endpoint}:predict",
            data=json.dumps({"instances": CHAIN.SAMPLE_INSTANCES}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return router.traffic_split(), json.loads(response.read())["predictions"]


@dataclass(frozen=True)
class FirstRun:
    """The first weekly run on an empty local root, and what it left, as it left it."""

    outcome: Any
    champion: ModelVersion
    traffic: dict[str, int]
    predictions: list[Any]


@pytest.fixture(scope="module")
def local_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from trainer.data import generate
    from trainer.world import WorldConfig

    root = tmp_path_factory.mktemp("weekly-local")
    with pytest.MonkeyPatch.context() as monkey:
        monkey.setenv("VERTEX_LOCAL_ROOT", str(root))
        monkey.chdir(root)
        target = root / "gcs" / "drink-shops-ml" / "transactions"
        generate(WorldConfig(members=400, stores=8, weeks=8, seed=3), str(target))
        shutil.copytree(
            DRINK_SHOPS / "trainer",
            root / "trainer-source",
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
        )
        try:
            yield root
        finally:  # no model server outlives the module, whichever tests ran or failed
            if (root / "registry.db").is_file():
                for endpoint in LocalEndpoints().list_endpoints():
                    stop_servers(endpoint.display_name)


@pytest.fixture(scope="module")
def first_run(local_root: Path) -> FirstRun:
    """Runs the pipeline once on the empty root, so every test that needs a champion has one
    whichever test runs first (or alone); records the state right after that run, which
    later tests change."""
    outcome = _run({})
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    champion = ModelRegistry().get_version(MODEL, "champion")
    traffic, predictions = _predict(MODEL)
    return FirstRun(outcome, champion, traffic, predictions)


def test_weekly_retraining_first_run_registers_and_serves_a_champion(
    first_run: FirstRun, local_root: Path
) -> None:
    # The run filled the field-table cache its job tasks check their payloads against.
    assert list((local_root / "cache").glob("aiplatform-v1-fields-*.json"))
    summary = first_run.outcome.summary
    assert summary is not None and summary["state"] == "SUCCEEDED"
    assert summary["decision"]["is_better"] is True
    assert set(first_run.champion.aliases) == {"champion", "default"}
    assert first_run.champion.lineage.pipeline_run == summary["pipeline_run"]
    assert list(first_run.traffic.values()) == [100]
    assert len(first_run.predictions) == 1 and first_run.predictions[0]["drinks"]
    assert summary["cost_on_vertex"]["on_demand"] > summary["cost_on_vertex"]["spot"] > 0


def test_weekly_retraining_candidate_below_a_minimum_metric_stays_challenger(
    first_run: FirstRun,
) -> None:
    endpoints = LocalEndpoints()
    traffic_before = endpoints.get(MODEL).traffic_split
    champion_before = ModelRegistry().get_version(MODEL, "champion")
    # No model beats "reorder your usual" by a whole NDCG point: the declared floor refuses it.
    rule = evaluation_declaration(DRINK_SHOPS)
    floored = {
        **rule,
        "metrics": {**rule["metrics"], "ndcg_at_10_usual_margin": "higher"},
        "floors": {"ndcg_at_10_usual_margin": 1.0},
    }
    # Other hyperparameters: the same week's training would come from the cache (the champion).
    outcome = _run({"evaluation_declaration": floored, "hyperparameters": _other_model(0.02)})
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    decision = outcome.summary["decision"] if outcome.summary else {}
    assert decision["is_better"] is False
    assert "ndcg_at_10_usual_margin is" in decision["reason"]
    assert "beyond the required minimum 1.0000" in decision["reason"]
    # The champion's week again: a warm start from it, refused, then a full retrain in the same
    # run, refused too; the summary keeps both (the warm attempt's decision, then the full's).
    kind = outcome.summary["training_kind"]
    assert kind["kind"] == "warm+full" and kind["planned"] == "warm"
    assert "the gate refused the warm-started candidate" in kind["reason"]
    assert "ndcg_at_10_usual_margin is" in kind["warm_attempt"]["decision"]
    registry = ModelRegistry()
    versions = registry.list_versions(MODEL)
    assert "challenger" in versions[-1].aliases
    # The week's decision is the full retrain's: its version, not the warm attempt's, holds
    # the alias (the full retrain follows the refused candidate's registration).
    warm_model = kind["warm_attempt"]["model_uri"].rstrip("/")
    assert registry.get_version(MODEL, "challenger").artifact_uri.rstrip("/") != warm_model
    assert any(v.artifact_uri.rstrip("/") == warm_model for v in versions)
    assert registry.get_version(MODEL, "champion") == champion_before
    assert endpoints.get(MODEL).traffic_split == traffic_before


def test_weekly_retraining_next_week_trains_on_the_new_week_and_a_better_candidate_takes_over(
    first_run: FirstRun, local_root: Path
) -> None:
    """Next Monday's run (one pipeline run for both): it trains on the new week and reuses
    the build; its candidate, declared better by a drill's override, moves the champion
    alias and all traffic."""
    from trainer.data import append_week

    assert first_run.outcome.summary is not None
    week_one = first_run.outcome.summary["data_window"]
    old_champion = ModelRegistry().get_version(MODEL, "champion")
    append_week(local_root / "gcs" / "drink-shops-ml" / "transactions")
    as_of = dt.date.fromisoformat(week_one["as_of"]) + dt.timedelta(days=7)
    drill = {"force_decision": "better", "force_reason": "drill: move the alias"}
    outcome = _run({"as_of": as_of.isoformat(), **drill})
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    week_two = outcome.summary["data_window"]
    # Fresh data: the new week is the gate, last week's gate week now selects.
    weeks = [[week_of(p) for p in w["gate_periods"]] for w in (week_one, week_two)]
    assert weeks == [[7], [8]]
    assert [week_of(p) for p in week_two["selection_periods"]] == [7]
    assert [week_of(p) for p in week_two["train_periods"]] == [0, 6]
    assert week_two["as_of"] == as_of.isoformat()
    assert week_two["content_hash"] != week_one["content_hash"]
    gate = outcome.summary["data_gate"]
    assert gate["passed"] is True and gate["verdict"].startswith(
        f"data gate passed for the period starting {week_two['gate_periods'][0]}"
    )
    # Only the build (same code) comes from the cache; everything keyed on the week ran.
    cached = cached_tasks(outcome.run_dir)
    assert "build-container" in cached
    assert not {
        "data-window",
        "source-digest",
        "check-data",
        "prepare-dataset",
        "train-custom-job",
        "evaluate-model",
    } & set(cached)
    registry = ModelRegistry()
    newest = registry.list_versions(MODEL)[-1]
    # The next week continues the champion (warm start, declared by the trainer's package).
    assert outcome.summary["training_kind"]["kind"] == "warm"
    assert newest.labels["training_kind"] == "warm"
    assert newest.labels["data_as_of"] == as_of.isoformat()
    assert newest.labels["data_from"] == "2023-01-02"
    assert newest.labels["data_gate_from"] == week_two["gate_periods"][0]

    # The drill's override decided: the new version is champion and takes all traffic.
    override = outcome.summary["decision"]["evidence"]["override"]
    assert override["decision"] == "better" and override["reason"] == "drill: move the alias"
    new_champion = registry.get_version(MODEL, "champion")
    assert new_champion.version_id == newest.version_id != old_champion.version_id
    assert "champion" not in registry.get_version(MODEL, old_champion.version_id).aliases
    endpoint = LocalEndpoints().get(MODEL)
    by_version = {m.model_version_id: m.traffic_percentage for m in endpoint.deployed_models}
    # The new champion takes all traffic; the previous one stays deployed for rollback.
    assert by_version[new_champion.version_id] == 100
    assert by_version[old_champion.version_id] == 0
    traffic, predictions = _predict(MODEL)
    assert sum(traffic.values()) == 100 and predictions[0]["drinks"]


def test_weekly_retraining_replay_does_not_judge_the_champion_on_its_training_data(
    first_run: FirstRun,
) -> None:
    from vertex_retrain.steps.summary import render_markdown

    assert first_run.outcome.summary is not None
    # A week earlier than the first run: its gate week (6) is one the champion selected on.
    replayed = dt.date.fromisoformat(first_run.outcome.summary["data_window"]["as_of"])
    outcome = _run({"as_of": (replayed - dt.timedelta(days=7)).isoformat()})
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    summary = outcome.summary
    assert [week_of(p) for p in summary["data_window"]["gate_periods"]] == [6]
    decision = summary["decision"]
    comparison = decision["evidence"]["champion_comparison"]
    assert comparison.startswith(
        "not comparable: the gate period (2023-02-13 to 2023-02-19) lies in the champion's "
        "training window (2023-01-02 to "
    )
    # The champion was not scored there: the decision rests on the floors and references.
    assert decision["champion_score"] == -1.0
    assert "champion" not in decision["evidence"]["intervals"]
    assert f"reference:{decision['evidence']['reference']}" in decision["evidence"]["intervals"]
    assert not any(key.startswith("champion_") for key in summary["metrics"])
    assert f"**Champion:** {comparison}" in render_markdown(summary)


def test_weekly_retraining_first_candidate_below_the_reference_is_not_deployed(
    local_root: Path,
) -> None:
    # A model of its own (no champion yet) that barely trains: it cannot beat the references.
    name = "first-below-reference"
    untrained = {"learning_rate": 1e-9, "embedding_dim": 32}
    outcome = _run(
        {"model_display_name": name, "endpoint_display_name": name, "hyperparameters": untrained}
    )
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    decision = outcome.summary["decision"] if outcome.summary else {}
    assert decision["is_better"] is False
    assert decision["evidence"]["champion_comparison"] == "no champion"
    assert "does not beat reference" in decision["reason"]
    versions = ModelRegistry().list_versions(name)
    assert len(versions) == 1 and "champion" not in versions[0].aliases
    assert name not in {e.display_name for e in LocalEndpoints().list_endpoints()}


def test_weekly_retraining_gate_breach_stops_before_training_with_its_report(
    local_root: Path,
) -> None:
    from vertex_retrain.cli.local_run import task_errors

    # Seven days of sales can never cover eight: a breach on clean data.
    outcome = _run({"data_gate_thresholds": {"min_days_covered": 8}})
    assert not outcome.succeeded
    assert outcome.summary is not None
    gate = outcome.summary["data_gate"]
    assert gate["passed"] is False
    assert gate["breaches"] == [
        next(line for line in gate["breaches"] if line.startswith("days_covered: "))
    ]
    assert "threshold >= 8 (min_days_covered)" in gate["verdict"]
    assert "decision" not in outcome.summary
    assert outcome.run_dir is not None and not (outcome.run_dir / "train-custom-job").exists()
    # Nor did it build: a stopped week pays for no Cloud Build (each task that ran, here the
    # data steps and the summary, left its folder).
    ran = {task.name for task in outcome.run_dir.iterdir()}
    assert {"check-data", "run-summary"} <= ran
    assert not {t for t in ran if t.startswith(("build-container", "source-digest"))}, ran
    log = outcome.log_path.read_text(encoding="utf-8")
    # Under the gate's step, whose task succeeds, the progress says the run will stop.
    assert "[executor] data gate: breached (days_covered); the run stops before training" in log
    errors = task_errors(log.splitlines())
    assert any(e.endswith(f"DataGateBreachError: {gate['verdict']}") for e in errors), errors
    # The week's record says why, not kfp.local's "Task exit-handler-1 failed.".
    from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory

    (week,) = [r for r in RunHistory().weeks() if r.run == outcome.run_dir.name]
    assert week.error == errors[0].splitlines()[0], week.error
    assert "data gate stopped the run" in week.error

"""Warm start or full retrain: the plan (rules.warm_start), the trainer's declaration, the
template's wiring, the summary and history, and the estimate's kinds of week. Unit level: no
pipeline runs (the daily demand example's local run shows a trainer without warm starts,
tests/test_example_daily_demand.py)."""

from __future__ import annotations

import io
import json
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.examples import DAILY_DEMAND, DRINK_SHOPS
from vertex_retrain.backends.base import AliasHolder, TaskOutputs
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.costing import estimate_kinds, estimate_run
from vertex_retrain.cli.history_command import history_row, shown_columns
from vertex_retrain.cli.spec_tasks import leaf_tasks
from vertex_retrain.pipelines import catalog
from vertex_retrain.rules.warm_start import (
    FULL_AS_OF_LABEL,
    KIND_LABEL,
    REFUSAL_RETRAIN_LABELS,
    declared_flag,
    plan_training,
)
from vertex_retrain.run_record import record_from_summary
from vertex_retrain.steps.summary import build_summary, render_markdown
from vertex_retrain.steps.training_plan import plan_week_training, trainer_warm_start_flag

WEEK = "2026-03-02"
CHAMPION = {"data_as_of": "2026-02-23", FULL_AS_OF_LABEL: "2026-02-09", KIND_LABEL: "warm"}


def _plan(**changes: Any) -> Any:
    given: dict[str, Any] = dict(
        as_of=WEEK,
        warm_start=True,
        full_retrain_every_weeks=4,
        flag="--warm_from",
        champion_uri="gs://b/champion/model",
        champion_labels=CHAMPION,
    )
    return plan_training(**{**given, **changes})


def test_plan_training_warm_starts_from_the_champion_with_the_declared_flag() -> None:
    plan = _plan()
    assert plan.kind == "warm"
    assert plan.warm_start_args == ["--warm_from=gs://b/champion/model"]
    # The line's last full retrain is carried on; a retrain after a refusal starts a new one.
    assert plan.labels == {KIND_LABEL: "warm", FULL_AS_OF_LABEL: "2026-02-09"}
    assert plan.full_labels == {KIND_LABEL: "full", FULL_AS_OF_LABEL: WEEK}


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"warm_start": False}, "warm_start is off"),
        ({"flag": ""}, "declares no warm start"),
        ({"tune": True}, "tunes hyperparameters"),
        ({"champion_uri": None, "champion_labels": None}, "no champion"),
        ({"full_retrain_every_weeks": 1}, "every week"),
        ({"champion_labels": {**CHAMPION, "data_as_of": "2026-03-09"}}, "a replay"),
        ({"champion_labels": {"data_as_of": "2026-02-23"}}, "records no last full retrain"),
    ],
)
def test_plan_training_retrains_fully_and_says_why(changes: dict[str, Any], why: str) -> None:
    plan = _plan(**changes)
    assert plan.kind == "full" and why in plan.reason
    assert plan.warm_start_args == [] and plan.labels == {
        KIND_LABEL: "full",
        FULL_AS_OF_LABEL: WEEK,
    }


@pytest.mark.parametrize(("every", "kind"), [(3, "full"), (4, "warm"), (0, "warm")])
def test_plan_training_full_retrain_every_weeks_boundary(every: int, kind: str) -> None:
    # The last full retrain was 3 weeks before the week: due at 3, not yet at 4; 0: never.
    plan = _plan(full_retrain_every_weeks=every)
    assert plan.kind == kind
    if kind == "full":
        assert "due every 3 weeks, the last was 3 weeks ago" in plan.reason


def test_plan_training_refuses_a_negative_period() -> None:
    with pytest.raises(ValueError, match="full_retrain_every_weeks must be >= 0"):
        _plan(full_retrain_every_weeks=-1)


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        (None, ""),
        ("[project]\nname='x'\n", ""),
        ('[tool.vertex-retrain]\nwarm-start-flag = "--from"\n', "--from"),
    ],
)
def test_declared_flag_reads_the_tool_table(text: str | None, flag: str) -> None:
    assert declared_flag(text) == flag


@pytest.mark.parametrize("value", ['"from"', "3", '"--from=x"'])
def test_declared_flag_refuses_what_is_not_a_flag(value: str) -> None:
    with pytest.raises(ValueError, match=r"warm-start-flag is .*expected a flag"):
        declared_flag(f"[tool.vertex-retrain]\nwarm-start-flag = {value}\n")


def test_trainer_warm_start_flag_of_the_examples() -> None:
    # The reference trainer declares it; the daily demand forecaster does not.
    assert trainer_warm_start_flag("local", str(DRINK_SHOPS / "trainer")) == "--warm_start_from"
    assert trainer_warm_start_flag("local", str(DAILY_DEMAND / "demand_forecast")) == ""


def test_trainer_warm_start_flag_refuses_a_source_that_is_not_a_folder(tmp_path: Path) -> None:
    assert trainer_warm_start_flag("local", str(tmp_path)) == ""  # a folder without pyproject
    (tmp_path / "file").write_text("x")
    for missing in (tmp_path / "nope", tmp_path / "file"):
        with pytest.raises(FileNotFoundError, match=r"source_uri .*: no such folder"):
            trainer_warm_start_flag("local", str(missing))


class _Registry:
    """A backend with a champion (what plan_week_training asks of one)."""

    name = "local"

    def __init__(self, champion: AliasHolder | None) -> None:
        self.champion = champion
        self.asked: list[str] = []

    def readable_path(self, uri: str) -> Path:
        return Path(uri)

    def find_alias_holder(self, display_name: str, alias: str) -> AliasHolder | None:
        self.asked.append(display_name)
        return self.champion


@pytest.mark.parametrize(("source", "kind"), [("trainer", "warm"), ("none", "full")])
def test_plan_week_training_needs_the_declaration_and_the_champion(
    source: str, kind: str, tmp_path: Path
) -> None:
    folder = DRINK_SHOPS / "trainer" if source == "trainer" else tmp_path
    registry = _Registry(AliasHolder("3", "gs://b/v3/model", dict(CHAMPION)))
    plan = plan_week_training(
        backend=registry,  # type: ignore[arg-type]
        source_uri=str(folder),
        model_display_name="m",
        as_of=WEEK,
        warm_start=True,
        full_retrain_every_weeks=4,
    )
    assert plan.kind == kind
    if kind == "warm":
        assert plan.warm_start_args == ["--warm_start_from=gs://b/v3/model"]


def _function(name: str) -> Any:
    return catalog.load(catalog.COMPONENTS[name]).python_func


def test_train_custom_job_passes_warm_start_args_after_args(monkeypatch: Any) -> None:
    import vertex_retrain.steps.train as train_step

    seen: list[Any] = []

    def fake_train(request: Any, **_: Any) -> Any:
        seen.append(request)
        return SimpleNamespace(
            model_uri="gs://b/m", model_metadata={}, metrics={}, state="S", goodput=None,
            restarts=None,
        )  # fmt: skip

    monkeypatch.setattr(train_step, "train", fake_train)
    _function("train_custom_job")(
        backend="local", display_name="m", base_output_directory="gs://b/out",
        model=SimpleNamespace(uri="", metadata={}), metrics=SimpleNamespace(log_metric=print),
        gcp_resources="/dev/null", python_module="p.task", package_uri="gs://b/p.whl",
        args=["--a=1"], warm_start_args=["--warm_from=gs://b/champion"], project="p",
        location="us-central1", service_account="",
    )  # fmt: skip
    assert seen[0].args == ["--a=1", "--warm_from=gs://b/champion"]


def test_register_model_puts_training_labels_over_the_window_labels(monkeypatch: Any) -> None:
    import vertex_retrain.steps.register as register_step

    seen: list[Any] = []

    def fake_register(request: Any) -> Any:
        seen.append(request)
        return SimpleNamespace(version_id="1", aliases=[], resource_name="r", artifact_uri="u")

    monkeypatch.setattr(register_step, "register", fake_register)
    _function("register_model")(
        backend="local", model=SimpleNamespace(uri="gs://b/m"), display_name="m",
        serving_image_uri="i", vertex_model=SimpleNamespace(uri="", metadata={}),
        gcp_resources="/dev/null", labels={"data_as_of": WEEK},
        training_labels={KIND_LABEL: "warm"}, project="p", location="us-central1",
    )  # fmt: skip
    assert seen[0].labels == {"data_as_of": WEEK, KIND_LABEL: "warm"}


def _weekly_tasks(**arguments: Any) -> dict[str, Any]:
    spec = compile_to_dict(catalog.pipeline_by_name("weekly-retraining"))
    values = {**default_arguments(spec), **arguments}
    return {task.path.split("/data-ok/")[-1]: task for task in leaf_tasks(spec, values)}


def test_weekly_template_wires_the_warm_start_parameters() -> None:
    tasks = _weekly_tasks(
        warm_start=False, full_retrain_every_weeks=6, expected_warm_training_hours=0.25
    )
    plan = tasks["plan-training"]
    assert (
        plan.parameters["warm_start"] is False and plan.parameters["full_retrain_every_weeks"] == 6
    )
    train = tasks["train"]
    assert train.unknown["warm_start_args"] == "an output of task 'plan-training'"
    assert tasks["run-summary"].parameters["expected_warm_training_hours"] == 0.25
    champion = next(
        t for p, t in tasks.items() if p.endswith("/better/register-champion") and "full" not in p
    )
    assert champion.unknown["training_labels"] == "an output of task 'plan-training'"


def test_weekly_template_defaults_warm_start_on_every_four_weeks() -> None:
    spec = compile_to_dict(catalog.pipeline_by_name("weekly-retraining"))
    defaults = default_arguments(spec)
    assert defaults["warm_start"] is True and defaults["full_retrain_every_weeks"] == 4


def test_weekly_template_retrains_fully_only_under_the_refusal() -> None:
    tasks = _weekly_tasks()
    retrain = [path for path, task in tasks.items() if task.function == "train_custom_job"]
    full = next(path for path in retrain if path.endswith("train-full"))
    # Under the warm candidate's refusal, in the full-retrain group, without the flag.
    assert "/not-better/full-retrain/" in full
    assert tasks[full].parameters["warm_start_args"] == []
    assert tasks[full].parameters["labels"] == REFUSAL_RETRAIN_LABELS


def _outputs(refused: bool) -> dict[str, TaskOutputs]:
    outputs = {
        "plan-training": TaskOutputs({"kind": "warm", "reason": "warm start from the champion"}),
        "train-custom-job": TaskOutputs(artifacts={"model": {"uri": "gs://b/warm"}}),
        "evaluate-model": TaskOutputs(
            {"is_better": not refused, "reason": "ndcg fell by 0.0100", "candidate_score": 0.5}
        ),
    }
    if refused:
        outputs["train-custom-job-2"] = TaskOutputs(artifacts={"model": {"uri": "gs://b/full"}})
        outputs["evaluate-model-2"] = TaskOutputs({"is_better": True, "reason": "improved"})
    return outputs


@pytest.mark.parametrize(
    ("refused", "kind", "hours"), [(False, "warm", 0.5), (True, "warm+full", 2.5)]
)
def test_summary_says_which_training_ran_and_prices_it(
    refused: bool, kind: str, hours: float
) -> None:
    facts = build_summary(
        _outputs(refused), run_name="r", state="SUCCEEDED", error_message="",
        job_shape={}, expected_training_hours=2.0, expected_warm_training_hours=0.5,
    )  # fmt: skip
    assert facts["training_kind"]["kind"] == kind
    assert facts["cost_on_vertex"]["assumed_training_hours"] == hours
    if refused:
        # The week's decision and model are the full retrain's; the refusal is kept.
        assert facts["decision"]["reason"] == "improved"
        assert facts["training"]["model_uri"] == "gs://b/full"
        assert facts["training_kind"]["warm_attempt"]["decision"] == "ndcg fell by 0.0100"
        assert "the gate refused the warm-started candidate" in facts["training_kind"]["reason"]
    record = record_from_summary(facts, model="m", backend="local")
    assert record.training_kind["kind"] == kind
    assert history_row(record)["training"] == kind
    assert record.experiment_params()["training_kind"] == kind
    assert [c.key for c in shown_columns([record])][-1] == "training"


@pytest.mark.parametrize(
    ("refused", "cached", "hours", "reused"),
    [
        (False, {"train-custom-job"}, 0.0, ["train-custom-job"]),
        (True, {"train-custom-job"}, 2.0, ["train-custom-job"]),  # the full retrain ran
        (True, {"train-custom-job-2"}, 0.5, ["train-custom-job-2"]),  # the warm start ran
        (
            True,
            {"train-custom-job", "train-custom-job-2"},
            0.0,
            ["train-custom-job", "train-custom-job-2"],
        ),
        (True, set(), 2.5, []),
    ],
)
def test_summary_leaves_training_reused_from_the_cache_out_of_the_cost(
    refused: bool, cached: set[str], hours: float, reused: list[str]
) -> None:
    outputs = _outputs(refused)
    for name in cached:
        outputs[name].cached = True
    facts = build_summary(
        outputs, run_name="r", state="SUCCEEDED", error_message="",
        job_shape={}, expected_training_hours=2.0, expected_warm_training_hours=0.5,
    )  # fmt: skip
    cost = facts["cost_on_vertex"]
    assert cost["assumed_training_hours"] == hours
    assert cost.get("reused_from_cache", []) == reused
    if hours == 0:
        assert cost["on_demand"] == cost["spot"] == 0  # a week that trained nothing paid nothing
    assert (
        record_from_summary(facts, model="m", backend="local").cost["reused_from_cache"] == reused
    )
    line = next(x for x in render_markdown(facts).splitlines() if x.startswith("**Cost on Vertex"))
    if reused:
        assert line.endswith(
            f"; not counted: {', '.join(reused)} reused an earlier run's outputs (cache)"
        )
    else:
        assert "not counted" not in line


def test_summary_of_a_run_stopped_before_training_says_none_trained() -> None:
    plan = TaskOutputs({"kind": "full", "reason": "the trainer declares no warm start"})
    facts = build_summary(
        {"plan-training": plan}, run_name="r", state="FAILED", error_message="boom",
        job_shape={}, expected_training_hours=2.0, expected_warm_training_hours=0.5,
    )  # fmt: skip
    kind = facts["training_kind"]
    assert kind["kind"] == "none" and kind["planned"] == "full"
    assert kind["reason"] == "no training finished (planned: the trainer declares no warm start)"
    record = record_from_summary(facts, model="m", backend="local")
    assert history_row(record)["training"] == "none"  # not 'full' on a FAILED row


@pytest.mark.parametrize(
    ("location", "priced_in"),
    [("europe-west4", "europe-west4"), ("local", "us-central1"), ("", "us-central1")],
)
def test_summary_prices_the_week_in_the_runs_region(location: str, priced_in: str) -> None:
    shape = {"machine_type": "n1-standard-4", "accelerator_type": "", "accelerator_count": 0,
             "worker_count": 0, "scheduling_strategy": "STANDARD"}  # fmt: skip
    facts = build_summary(
        _outputs(False), run_name="r", state="SUCCEEDED", error_message="", job_shape=shape,
        expected_training_hours=2.0, expected_warm_training_hours=1.0, location=location,
    )  # fmt: skip
    cost = facts["cost_on_vertex"]
    assert cost["location"] == priced_in
    # The region's own price: Europe's n1-standard-4 costs more than Iowa's.
    us = build_summary(
        _outputs(False), run_name="r", state="SUCCEEDED", error_message="", job_shape=shape,
        expected_training_hours=2.0, expected_warm_training_hours=1.0,
    )["cost_on_vertex"]  # fmt: skip
    assert (cost["on_demand"] > us["on_demand"]) is (priced_in == "europe-west4")


def test_history_hides_the_training_column_when_no_run_planned_one() -> None:
    record = record_from_summary(
        {"pipeline_run": "r", "state": "SUCCEEDED"}, model="m", backend="local"
    )
    assert "training" not in [column.key for column in shown_columns([record])]


def _kinds(**arguments: Any) -> Any:
    spec = compile_to_dict(catalog.pipeline_by_name("weekly-retraining"))
    values = {**default_arguments(spec), **arguments}
    return estimate_kinds(spec, values, hours=2.0, location="us-central1")


def test_estimate_prices_each_kind_of_week_and_a_month() -> None:
    kinds = _kinds(expected_warm_training_hours=0.5, full_retrain_every_weeks=4)
    assert (kinds.full.hours, kinds.warm.hours, kinds.refused.hours) == (2.0, 0.5, 2.5)
    assert kinds.warm.spot == pytest.approx(kinds.full.spot / 4)
    # One full retrain in four weeks of an average month (365.25 / 12 / 7 weeks).
    assert kinds.month.hours == pytest.approx(365.25 / 12 / 7 * (2.0 / 4 + 0.5 * 3 / 4))
    assert kinds.full_weeks_per_month == pytest.approx(365.25 / 12 / 7 / 4, abs=1e-3)


@pytest.mark.parametrize(
    "arguments", [{"warm_start": False}, {"full_retrain_every_weeks": 1}, {"tune": True}]
)
def test_estimate_month_is_all_full_without_warm_weeks(arguments: dict[str, Any]) -> None:
    kinds = _kinds(**arguments)
    assert kinds.month.hours == pytest.approx(kinds.all_full_month.hours)


def test_estimate_run_leaves_the_refusal_retrain_out_of_the_week() -> None:
    spec = compile_to_dict(catalog.pipeline_by_name("weekly-retraining"))
    estimate = estimate_run(spec, default_arguments(spec), hours=2.0, location="us-central1")
    assert [step.label for step in estimate.steps] == ["train"]


def test_estimate_command_prints_the_kinds_in_json() -> None:
    from vertex_retrain.cli.compile_commands import cli_estimate

    out = io.StringIO()
    args = Namespace(name="weekly-retraining", param=[], training_hours=None, json=True)
    assert cli_estimate(args, out) == 0
    weeks = json.loads(out.getvalue())["week_kinds"]["weeks"]
    assert [week["kind"] for week in weeks][:3] == ["full week", "warm week", "refused warm week"]


@pytest.mark.parametrize(("warm", "priced"), [(0.4, 0.05), (0.05, 0.05), (0.01, 0.01)])
def test_estimate_warm_week_never_costs_more_than_a_full_one(warm: float, priced: float) -> None:
    spec = compile_to_dict(catalog.pipeline_by_name("weekly-retraining"))
    values = {**default_arguments(spec), "expected_warm_training_hours": warm}
    kinds = estimate_kinds(spec, values, hours=0.05, location="us-central1")
    assert kinds is not None and kinds.warm.hours == pytest.approx(priced)
    assert kinds.full.hours == pytest.approx(0.05)


def test_summary_prices_a_warm_week_no_higher_than_a_full_one() -> None:
    facts = build_summary(
        _outputs(refused=False), run_name="r", state="SUCCEEDED", error_message="",
        job_shape={}, expected_training_hours=0.05, expected_warm_training_hours=0.4,
    )  # fmt: skip
    assert facts["cost_on_vertex"]["assumed_training_hours"] == pytest.approx(0.05)

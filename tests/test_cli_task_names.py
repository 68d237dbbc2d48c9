"""Tasks by the names people read: each template task's display name, shown by a local run's
progress and failure lines instead of kfp.local's generated names (register-model-2,
condition-branches-6)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from google.protobuf import json_format

from vertex_retrain.cli.run_progress import RunProgress
from vertex_retrain.cli.task_names import (
    display_names,
    failed_step_line,
    group_tasks,
    pipeline_display_names,
)
from vertex_retrain.pipelines import configure, train_only, weekly_retraining

# Words joined by hyphens: no compiler's number (-2, condition-branches-6).
HUMAN = re.compile(r"[a-z]+(-[a-z]+)*")
# Components' own names that say how, not what (the pass-throughs and the package path's image).
GENERATED = {"no-image", "fixed-hyperparameters", "condition-branches", "exit-handler"}

TEMPLATES = {
    "weekly-retraining": weekly_retraining,
    "train-only": train_only,
    # The form with the e-mail notice: the run nested under the notice's exit handler.
    "weekly-notified": configure(weekly_retraining, name="w", notification_emails=["a@b.c"]),
}


def _spec(pipeline: Any) -> dict[str, Any]:
    return json_format.MessageToDict(pipeline.pipeline_spec)


def _shown(spec: dict[str, Any]) -> list[str]:
    dags = [spec["root"]["dag"], *(c["dag"] for c in spec["components"].values() if "dag" in c)]
    return [task["taskInfo"]["name"] for dag in dags for task in dag["tasks"].values()]


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_templates_give_every_task_a_human_display_name(template: str) -> None:
    shown = _shown(_spec(TEMPLATES[template]))
    assert [name for name in shown if not HUMAN.fullmatch(name)] == []
    assert GENERATED.isdisjoint(shown)


def test_weekly_template_names_each_path_s_tasks_apart() -> None:
    # The full retrain's register and deploy run in the same run as the first candidate's.
    shown = _shown(_spec(weekly_retraining))
    doubled = sorted({name for name in shown if shown.count(name) > 1})
    assert doubled == [], doubled
    assert {"register-champion-full", "deploy-full", "tuning-or-not"} <= set(shown)


def test_display_names_map_both_kfp_local_names_of_a_task() -> None:
    spec = {
        "root": {"dag": {"tasks": {
            "condition-branches-2": {"componentRef": {"name": "comp-condition-branches-2"},
                                     "taskInfo": {"name": "champion-or-challenger"}},
            "train": {"componentRef": {"name": "comp-train"}, "taskInfo": {"name": "train"}},
        }}},
        "components": {"comp-condition-branches-2": {"dag": {"tasks": {
            "register-model-2": {"componentRef": {"name": "comp-register-model-3"},
                                 "taskInfo": {"name": "register-champion"}},
        }}}},
    }  # fmt: skip
    assert display_names(spec) == {
        "condition-branches-2": "champion-or-challenger",
        "register-model-2": "register-champion",  # its key in the DAG (cache, failure lines)
        "register-model-3": "register-champion",  # its run folder (kfp.local's progress)
    }


def test_pipeline_display_names_cover_every_weekly_task() -> None:
    names = pipeline_display_names(weekly_retraining)
    assert names["register-model-2"].startswith("register-")
    assert [name for name in names.values() if not HUMAN.fullmatch(name)] == []
    assert pipeline_display_names(object()) == {}


def test_run_progress_shows_a_task_s_display_name() -> None:
    out = io.StringIO()
    names = {"register-model-2": "register-champion", "build-container": "build"}
    progress = RunProgress(out, clock=iter([0.0, 2.0]).__next__, names=names)
    for line in (
        "05:16 - INFO - Executing task \x1b[96m'register-model-2'\x1b[0m",
        "05:16 - INFO - Task \x1b[96m'register-model-2'\x1b[0m finished with status SUCCESS",
        "Task 'build-container' cached from run weekly-1",
        "Skipping task 'notify': a Vertex AI service step",
    ):
        progress.feed(line)
    progress.close()
    assert out.getvalue().splitlines() == [
        "step register-champion: running",
        "✓ step register-champion: done in 2.0s",
        "↺ step build: cached from run weekly-1",
        "- step notify: skipped (a Vertex AI service step)",
    ]
    assert progress.finished[-1] == ("build", "CACHED", 0.0)


def test_failed_step_line_leaves_out_the_compilers_group_names() -> None:
    kfp_line = (
        "Pipeline \x1b[95m'churn-weekly'\x1b[0m finished with status \x1b[91mFAILURE\x1b[0m. "
        "Inner task failed: 'stop-run' inside 'condition-10' inside 'condition-branches-2' "
        "inside 'exit-handler-1' inside 'weekly-retraining-week' inside 'exit-handler-1'."
    )
    assert failed_step_line(kfp_line) == (
        "Pipeline 'churn-weekly' finished with status FAILURE at step 'stop-run' "
        "(in 'weekly-retraining-week')"
    )
    assert failed_step_line(kfp_line, {"stop-run": "stop-before-training"}) == (
        "Pipeline 'churn-weekly' finished with status FAILURE at step 'stop-before-training' "
        "(in 'weekly-retraining-week')"
    )
    flat = "Pipeline 'p' finished with status FAILURE. Inner task failed: 'train'."
    assert failed_step_line(flat) == "Pipeline 'p' finished with status FAILURE at step 'train'"
    assert failed_step_line("something else broke") == "something else broke"


def test_failed_step_line_with_the_groups_names_each_step_that_failed_side_by_side() -> None:
    # Two digests failed at once (the source was missing): kfp.local lists both in the one
    # chain, the second as if the first ran inside it.
    kfp_line = (
        "Pipeline 'bikes-weekly' finished with status FAILURE. Inner task failed: "
        "'source-digest' inside 'source-digest-2' inside 'condition-16' inside "
        "'condition-branches-2' inside 'weekly-retraining-week' inside 'exit-handler-1'."
    )
    groups = {"condition-16", "condition-branches-2", "weekly-retraining-week", "exit-handler-1"}
    names = {"source-digest-2": "image-digest", "weekly-retraining-week": "week"}
    assert failed_step_line(kfp_line, names, groups) == (
        "Pipeline 'bikes-weekly' finished with status FAILURE at steps 'source-digest', "
        "'image-digest' (in 'week')"
    )
    assert failed_step_line(kfp_line, names) == (  # without the groups: the first is the step
        "Pipeline 'bikes-weekly' finished with status FAILURE at step 'source-digest' "
        "(in 'image-digest', 'week')"
    )


def test_group_tasks_of_the_weekly_template_are_its_dags_only() -> None:
    from vertex_retrain.cli.compiling import compile_to_dict
    from vertex_retrain.pipelines import catalog

    groups = group_tasks(compile_to_dict(catalog.pipeline_by_name("weekly-retraining")))
    assert {"exit-handler-1", "condition-branches-2"} <= groups
    assert not {"source-digest", "source-digest-2", "train-custom-job"} & groups


def test_explain_kfp_error_names_the_failed_step_by_its_display_name() -> None:
    from vertex_retrain.cli.local_run import explain_kfp_error

    error = RuntimeError(
        "Pipeline 'p' finished with status FAILURE. Inner task failed: 'register-model-2'."
    )
    assert explain_kfp_error(error, {"register-model-2": "register-champion"}) == (
        "Pipeline 'p' finished with status FAILURE at step 'register-champion'"
    )


def test_name_branches_takes_only_an_else_group() -> None:
    from vertex_retrain.pipelines.branches import name_branches

    with pytest.raises(TypeError, match=r"takes the group of a `with dsl\.Else"):
        name_branches(object(), "decision")

"""After the gate refuses a warm-started candidate, the full retrain follows that candidate's
registration, so the week's aliases end on the full retrain's version (compiled IR; both ran
in parallel before, and whichever registered last kept ``challenger``)."""

from __future__ import annotations

from typing import Any

from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.pipelines import weekly_retraining
from vertex_retrain.rules.warm_start import FULL_RETRAIN_GROUP


def _tasks_by_name(spec: dict[str, Any]) -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
    """Every task by display name, with the display names of its DAG's tasks by key."""
    found: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}

    def walk(dag: dict[str, Any]) -> None:
        names = {key: t.get("taskInfo", {}).get("name", key) for key, t in dag["tasks"].items()}
        for key, task in dag["tasks"].items():
            found[names[key]] = (task, names)
            inner = spec["components"].get(task.get("componentRef", {}).get("name", ""), {})
            if "dag" in inner:
                walk(inner["dag"])

    walk(spec["root"]["dag"])
    return found


def test_weekly_full_retrain_waits_for_the_refused_candidate_s_registration() -> None:
    tasks = _tasks_by_name(compile_to_dict(weekly_retraining))
    group, names = tasks[FULL_RETRAIN_GROUP]
    assert [names[key] for key in group.get("dependentTasks", [])] == ["register-challenger"]
    # The full retrain's own registration is inside that group, so it always comes later.
    assert "register-challenger-full" in tasks and "train-full" in tasks

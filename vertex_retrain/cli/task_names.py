"""The names people see for a compiled pipeline's tasks: their display names.

kfp.local prints a task by the name the compiler gave it (``register-model-2``: its component's
name, or its key in its DAG), and a group by the compiler's name (``condition-branches-6``).
The Vertex AI console shows each task's display name instead (``taskInfo.name``: what
``set_display_name`` or a group's ``name=`` set). A local run's progress and failure lines
translate kfp.local's names with :func:`display_names`, so both show the same words.

Only what is shown changes: run folders, the task cache and the run history keep kfp.local's
names, so giving a task a display name never breaks their continuity.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from vertex_retrain.cli.console import strip_ansi
from vertex_retrain.compiled_dags import dag_tasks

_COMPONENT_PREFIX = "comp-"
_INNER_FAILURE = re.compile(
    r"^(Pipeline '[^']+' finished with status \w+)\. Inner task failed: (.+)\.$"
)
# The groups the KFP compiler names (conditions, exit handlers, loops): not the user's words.
_COMPILER_GROUP = re.compile(r"(condition|condition-branches|exit-handler|for-loop)-\d+")


def display_names(spec: Mapping[str, Any]) -> dict[str, str]:
    """kfp.local's name of each task of ``spec`` -> its display name, where the two differ.

    Args:
        spec: A compiled pipeline (the dict of its YAML, or ``MessageToDict`` of its
            protobuf).

    Returns:
        Both names kfp.local uses for a task (its key in its DAG, and its component's name
        without ``comp-``, the name of its run folder) -> the task's display name.
    """
    names: dict[str, str] = {}
    for key, task in dag_tasks(spec):
        shown = str(task.get("taskInfo", {}).get("name") or key)
        component = str(task.get("componentRef", {}).get("name", ""))
        for name in (key, component.removeprefix(_COMPONENT_PREFIX)):
            if name and name != shown:
                names[name] = shown
    return names


def _compiled_spec(pipeline: Any) -> dict[str, Any]:
    """The compiled spec of a ``@dsl.pipeline`` or a pipeline loaded from its YAML, as a
    dict; empty when it carries none."""
    from google.protobuf import json_format
    from google.protobuf.message import Message

    spec = getattr(pipeline, "pipeline_spec", None)
    return json_format.MessageToDict(spec) if isinstance(spec, Message) else {}


def pipeline_display_names(pipeline: Any) -> dict[str, str]:
    """:func:`display_names` of a ``@dsl.pipeline`` or a pipeline loaded from its YAML; empty
    when it carries no compiled spec."""
    return display_names(_compiled_spec(pipeline))


def group_tasks(spec: Mapping[str, Any]) -> frozenset[str]:
    """kfp.local's names of the tasks of ``spec`` that run a DAG (a nested pipeline, a
    condition, an exit handler), by their key and their component's name: no step of their
    own, only where steps run."""
    components = spec.get("components", {})
    groups: set[str] = set()
    for key, task in dag_tasks(spec):
        component = str(task.get("componentRef", {}).get("name", ""))
        if "dag" in components.get(component, {}):
            groups.update({key, component.removeprefix(_COMPONENT_PREFIX)})
    return frozenset(groups)


def pipeline_group_tasks(pipeline: Any) -> frozenset[str]:
    """:func:`group_tasks` of a ``@dsl.pipeline`` or a pipeline loaded from its YAML; empty
    when it carries no compiled spec."""
    return group_tasks(_compiled_spec(pipeline))


def failed_step_line(
    message: str,
    names: Mapping[str, str] | None = None,
    groups: Collection[str] | None = None,
) -> str:
    """kfp.local's failure line with the steps' display names and the compiler's group names
    left out: ``Pipeline 'p' finished with status FAILURE at step 'train' (in
    'inner-pipeline')``.

    Args:
        message: kfp.local's error (``... Inner task failed: 'a' inside 'b' ...``).
        names: kfp.local's task name -> display name (:func:`display_names`).
        groups: kfp.local's names of the pipeline's group tasks (:func:`group_tasks`). With
            them, every other name of the chain is a failed step (kfp.local lists steps that
            failed side by side in the one chain: ``at steps 'a', 'b'``); without them, the
            first name is the step and the rest are where it ran.
    """
    plain = strip_ansi(message).strip()
    match = _INNER_FAILURE.match(plain)
    if not match:
        return message
    chain = re.findall(r"'([^']+)'", match[2])
    if not chain:
        return message
    shown = names or {}
    if groups is None:
        steps, rest = chain[:1], chain[1:]
    else:
        steps = [name for name in chain if name not in groups]
        rest = [name for name in chain if name in groups]
    steps = [shown.get(name, name) for name in dict.fromkeys(steps)] or [chain[0]]
    # The pipelines the steps ran in, by their own names; the groups between are left out.
    nested = [shown.get(name, name) for name in rest if not _COMPILER_GROUP.fullmatch(name)]
    where = f" (in {', '.join(repr(name) for name in nested)})" if nested else ""
    label = "step" if len(steps) == 1 else "steps"
    return f"{match[1]} at {label} {', '.join(repr(step) for step in steps)}{where}"

"""Cache keys that mean something: a check over a compiled pipeline (the IR).

Vertex AI Pipelines reuses a task's earlier output when the task's component and inputs are
the same. A task whose output depends on data, code or time, but whose inputs are the same
every week, is then served last week's output: stale data, a stale package, a tie at the
champion gate. So every task with caching on must take, directly or through the tasks it
consumes, an input that changes when its week or content does:

- an output of a key source: a task with caching off, of a component that reads what its
  inputs do not show (:data:`KEY_SOURCES`: ``data_window`` reads the run's time,
  ``source_digest`` the source's content, ``extract_window`` the warehouse's window, in a
  folder named by its content), so it runs every time and its output changes
  exactly when the week or the content does.

A pipeline parameter alone is not a key: its default is the same every week. Nor is a
per-run value (:data:`PER_RUN_PLACEHOLDERS`: the run's name or id, a task's name or id, the
run's creation or schedule time): Vertex resolves it before it computes the key, so a cached
task that takes one has a key no other run shares and never hits: a re-run of a failed week
would pay for it again. Such a task is a problem of its own, whatever else it takes. A task
may opt out with ``.set_caching_options(False)``. The check follows inputs through condition
and exit handler groups, nested pipelines and ``dsl.OneOf`` (every branch must be keyed). It
is pure: it reads the compiled spec as a dict.

The rule is about weeks, so it applies to a pipeline that has a week: one with a
``data_window`` task. A pipeline without one (an evaluation of a given model, a one-off
training) has no week a cached output could belong to, and is not checked. An importer task
is never a problem: it records an artifact that exists, and computes nothing to go stale.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DATA_WINDOW_FUNCTION",
    "KEY_SOURCES",
    "PER_RUN_PLACEHOLDERS",
    "CacheKeyError",
    "cache_key_problems",
    "check_cache_keys",
    "has_data_window",
]

KEY_SOURCES = frozenset({"data-window", "source-digest", "extract-window"})
"""Components (compiled names) whose uncached output is a cache key of what consumes it."""

PER_RUN_PLACEHOLDERS = (
    "{{$.pipeline_job_name}}",
    "{{$.pipeline_job_resource_name}}",
    "{{$.pipeline_job_uuid}}",
    "{{$.pipeline_task_name}}",
    "{{$.pipeline_task_uuid}}",
    "{{$.pipeline_job_create_time_utc}}",
    "{{$.pipeline_job_schedule_time_utc}}",
)
"""Placeholders (kfp.dsl's) whose value belongs to one run: a key no other run shares. The
task name is here too: whether Vertex resolves it the same in every run is not documented."""


class CacheKeyError(ValueError):
    """A compiled pipeline has tasks that could be served another week's cached output."""


@dataclass(frozen=True)
class _Dag:
    """One DAG of the spec (the root, or a group's), and where it sits."""

    dag: Mapping[str, Any]
    parent: _Dag | None
    task_in_parent: str


def check_cache_keys(spec: Mapping[str, Any], key_sources: frozenset[str] = KEY_SOURCES) -> None:
    """Raises :class:`CacheKeyError` naming every task whose cache key ignores the week.

    Args:
        spec: A compiled pipeline (the dict of its YAML).
        key_sources: Component names whose uncached outputs are cache keys.
    """
    problems = cache_key_problems(spec, key_sources)
    if problems:
        name = spec.get("pipelineInfo", {}).get("name", "pipeline")
        raise CacheKeyError(
            f"pipeline {name!r} could serve a task another week's cached output:\n  "
            + "\n  ".join(problems)
        )


def cache_key_problems(
    spec: Mapping[str, Any], key_sources: frozenset[str] = KEY_SOURCES
) -> list[str]:
    """One sentence per cached task with no input from the week, a digest or the run; none
    for a pipeline without a data window (see the module docstring)."""
    if not has_data_window(spec):
        return []
    checker = _Checker(spec.get("components", {}), key_sources, _importers(spec))
    root = _Dag(spec.get("root", {}).get("dag", {}), None, "")
    return checker.problems(root, "")


DATA_WINDOW_FUNCTION = "data_window"
"""The function of the component that sets a run's week (``vertex_retrain.components``)."""


def has_data_window(spec: Mapping[str, Any]) -> bool:
    """Whether a compiled pipeline has a ``data_window`` task (in any nested group)."""
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    for executor in executors.values():
        args = [str(arg) for arg in executor.get("container", {}).get("args", [])]
        flag = "--function_to_execute"
        if flag in args[:-1] and args[args.index(flag) + 1] == DATA_WINDOW_FUNCTION:
            return True
    return False


def _importers(spec: Mapping[str, Any]) -> frozenset[str]:
    """Names of the components that are importers."""
    executors = spec.get("deploymentSpec", {}).get("executors", {})
    return frozenset(
        name
        for name, component in spec.get("components", {}).items()
        if "importer" in executors.get(component.get("executorLabel", ""), {})
    )


class _Checker:
    def __init__(
        self,
        components: Mapping[str, Any],
        key_sources: frozenset[str],
        importers: frozenset[str] = frozenset(),
    ) -> None:
        self._components = components
        self._key_sources = key_sources
        self._importers = importers
        self._memo: dict[tuple[int, str], bool] = {}

    def _component(self, task: Mapping[str, Any]) -> Mapping[str, Any]:
        name = task.get("componentRef", {}).get("name", "")
        found: Mapping[str, Any] = self._components.get(name, {})
        return found

    def problems(self, where: _Dag, path: str) -> list[str]:
        found: list[str] = []
        for name, task in where.dag.get("tasks", {}).items():
            nested = self._component(task).get("dag")
            shown = task.get("taskInfo", {}).get("name", name)
            importer = task.get("componentRef", {}).get("name", "") in self._importers
            if nested is not None:
                found += self.problems(_Dag(nested, where, name), f"{path}{shown}/")
            elif _caching_on(task) and not importer and (run := self._per_run(where, name)):
                component = task.get("componentRef", {}).get("name", "?").removeprefix("comp-")
                found.append(
                    f"task {path + shown!r} ({component}) has caching on, but its input "
                    f"{run[0]!r} takes the per-run value {run[1]}, which Vertex resolves "
                    "before the cache key, so the key never matches an earlier run and a "
                    "re-run of the week pays for the task again: derive what it needs from "
                    "its inputs instead, or turn its caching off with "
                    ".set_caching_options(False)"
                )
            elif _caching_on(task) and not importer and not self._task_keyed(where, name):
                component = task.get("componentRef", {}).get("name", "?").removeprefix("comp-")
                found.append(
                    f"task {path + shown!r} ({component}) has caching on, but none of its "
                    "inputs comes from the run's week or a content digest, so "
                    "Vertex could serve it another week's output: pass it the week "
                    "(data_window's as_of) or a digest (source_digest), or an output of a "
                    "task that takes one; or turn its caching off with "
                    ".set_caching_options(False)"
                )
        return found

    def _task_keyed(self, where: _Dag, name: str) -> bool:
        """A leaf task's outputs change with the week: a key source, or a keyed input."""
        memo = (id(where.dag), name)
        if memo not in self._memo:
            self._memo[memo] = False  # a cycle (none in KFP's output) proves nothing
            task = where.dag["tasks"][name]
            nested = self._component(task).get("dag")
            if nested is not None:
                keyed = False  # a group's outputs are resolved per key by _output_keyed
            else:
                inputs = task.get("inputs", {})
                specs = [
                    *inputs.get("parameters", {}).values(),
                    *inputs.get("artifacts", {}).values(),
                ]
                component = task.get("componentRef", {}).get("name", "").removeprefix("comp-")
                # KFP names a component's second use in one pipeline "<name>-2", and so on.
                named = re.sub(r"-\d+$", "", component)
                source = not _caching_on(task) and named in self._key_sources
                keyed = source or any(self._input_keyed(where, s) for s in specs)
            self._memo[memo] = keyed
        return self._memo[memo]

    def _per_run(self, where: _Dag, name: str) -> tuple[str, str] | None:
        """(input, placeholder) of a leaf task's first input that holds a per-run value."""
        inputs = where.dag["tasks"][name].get("inputs", {}).get("parameters", {})
        for input_name, spec in sorted(inputs.items()):
            placeholder = self._per_run_value(where, spec)
            if placeholder:
                return input_name, placeholder
        return None

    def _per_run_value(self, where: _Dag, spec: Mapping[str, Any]) -> str | None:
        """The per-run placeholder an input's value holds, followed up through groups."""
        constant = spec.get("runtimeValue", {}).get("constant")
        if constant is not None:
            text = str(constant)
            return next((p for p in PER_RUN_PLACEHOLDERS if p in text), None)
        if "componentInputParameter" in spec and where.parent is not None:
            parent_task = where.parent.dag["tasks"][where.task_in_parent]
            outer = parent_task.get("inputs", {}).get("parameters", {})
            found = outer.get(spec["componentInputParameter"])
            return None if found is None else self._per_run_value(where.parent, found)
        return None

    def _input_keyed(self, where: _Dag, spec: Mapping[str, Any]) -> bool:
        constant = spec.get("runtimeValue", {}).get("constant")
        if constant is not None:
            return False  # a constant is the same every week; a per-run one never matches
        for kind, key_name in (
            ("taskOutputParameter", "outputParameterKey"),
            ("taskOutputArtifact", "outputArtifactKey"),
        ):
            if kind in spec:
                ref = spec[kind]
                return self._output_keyed(where, ref.get("producerTask", ""), ref.get(key_name, ""))
        for kind, section in (
            ("componentInputParameter", "parameters"),
            ("componentInputArtifact", "artifacts"),
        ):
            if kind in spec:
                if where.parent is None:
                    return False  # a pipeline parameter: the same every week by default
                parent_task = where.parent.dag["tasks"][where.task_in_parent]
                outer = parent_task.get("inputs", {}).get(section, {}).get(spec[kind])
                return outer is not None and self._input_keyed(where.parent, outer)
        return False

    def _output_keyed(self, where: _Dag, producer: str, key: str) -> bool:
        task = where.dag.get("tasks", {}).get(producer)
        if task is None:
            return False
        nested = self._component(task).get("dag")
        if nested is None:
            return self._task_keyed(where, producer)
        inner = _Dag(nested, where, producer)
        outputs = nested.get("outputs", {})
        spec = outputs.get("parameters", {}).get(key) or outputs.get("artifacts", {}).get(key)
        branches = _selected(spec or {})
        return bool(branches) and all(
            self._output_keyed(inner, subtask, subkey) for subtask, subkey in branches
        )


def _caching_on(task: Mapping[str, Any]) -> bool:
    return bool(task.get("cachingOptions", {}).get("enableCache", False))


def _selected(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (subtask, output) pairs a group's output may come from (one, or a OneOf's)."""
    pairs: list[tuple[str, str]] = []
    single = spec.get("valueFromParameter")
    if single:
        pairs.append((single.get("producerSubtask", ""), single.get("outputParameterKey", "")))
    oneof = spec.get("valueFromOneof", {})
    for selector in oneof.get("parameterSelectors", []):
        pairs.append((selector.get("producerSubtask", ""), selector.get("outputParameterKey", "")))
    for selector in [*spec.get("artifactSelectors", []), *oneof.get("artifactSelectors", [])]:
        pairs.append((selector.get("producerSubtask", ""), selector.get("outputArtifactKey", "")))
    return pairs

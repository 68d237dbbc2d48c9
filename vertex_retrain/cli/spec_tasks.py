"""The leaf tasks of a compiled pipeline, and what each would receive, as far as it is known
before the run.

Preflight and the cost estimate look at the jobs a pipeline would submit, which are decided by
its tasks' inputs. Before a run, an input is known when it is a constant of the compiled spec,
a pipeline parameter with a value (its default, or a ``--param``), or a component default; an
output of another task, a loop item or a parameter without a value is known only at run time
(:class:`Unknown`, with the reason). The walk follows condition and exit-handler groups and
nested pipelines, passing values from a group task's inputs to the tasks inside it, and
evaluates simple trigger conditions (``dsl.If(param == value)``) where their inputs are known.

Pure: it reads the compiled spec as a dict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.cli.task_names import display_names
from vertex_retrain.compiled_dags import dag_tasks
from vertex_retrain.rules.numbers import whole_numbers

__all__ = ["LeafTask", "Unknown", "evaluate_condition", "leaf_tasks"]


@dataclass(frozen=True)
class Unknown:
    """An input whose value only the run decides."""

    why: str


@dataclass(frozen=True)
class LeafTask:
    """One task that runs a component (not a group), with what it would receive.

    Attributes:
        path: Its name, prefixed by the groups it sits in (``data-ok/train``).
        function: The Python function a lightweight component runs (``train_custom_job``);
            empty for other executors.
        importer: An ``dsl.importer`` task.
        parameters: Each parameter input's value: given, else the component default; an
            input in ``unknown`` has its component default here, if it has one.
        unknown: Parameter inputs known only at run time, with the reason.
        artifacts: Names of the artifact inputs it is given.
        runs: Whether every trigger condition on its way holds: True, False, or None when one
            depends on the run.
    """

    path: str
    function: str
    importer: bool
    parameters: dict[str, Any] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)
    artifacts: tuple[str, ...] = ()
    runs: bool | None = True


@dataclass(frozen=True)
class _Scope:
    """A DAG being walked and how its inputs are fed: the group task in the parent DAG."""

    parent: _Scope | None
    group_task: Mapping[str, Any]


def leaf_tasks(spec: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[LeafTask]:
    """Every leaf task of a compiled pipeline, in spec order, nested groups included.

    Args:
        spec: The compiled pipeline.
        arguments: The pipeline's parameter values (defaults with the overrides on top); a
            parameter missing here is unknown.
    """
    walker = _Walker(spec, arguments)
    walker.walk(spec.get("root", {}).get("dag", {}), None, "", True)
    return walker.found


class _Walker:
    def __init__(self, spec: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        self._components: Mapping[str, Any] = spec.get("components", {})
        self._executors: Mapping[str, Any] = spec.get("deploymentSpec", {}).get("executors", {})
        self._arguments = arguments
        self._names = display_names(spec)  # a producer is named as the console shows it
        self.found: list[LeafTask] = []

    def walk(
        self, dag: Mapping[str, Any], scope: _Scope | None, prefix: str, runs: bool | None
    ) -> None:
        for name, task in dag.get("tasks", {}).items():
            component = self._components.get(task.get("componentRef", {}).get("name", ""), {})
            shown = prefix + str(task.get("taskInfo", {}).get("name", name))
            condition = task.get("triggerPolicy", {}).get("condition")
            known, _unknown = self._inputs(task, scope)
            here = _both(runs, evaluate_condition(condition, known) if condition else True)
            if "dag" in component:
                self.walk(component["dag"], _Scope(scope, task), shown + "/", here)
                continue
            known, unknown = self._inputs(task, scope, component)
            executor = self._executors.get(component.get("executorLabel", ""), {})
            artifacts = tuple(task.get("inputs", {}).get("artifacts", {}))
            self.found.append(
                LeafTask(shown, _function(executor), "importer" in executor, known, unknown,
                         artifacts, here)
            )  # fmt: skip

    def _producer(self, key: str) -> str:
        """A producing task as the console shows it. A group (an If/Else's ``dsl.OneOf``) is
        no step of its own: its name comes with the steps in it, the names compile lists."""
        shown = self._names.get(key, key)
        steps = self._steps_in(key)
        if not steps:
            return f"task {shown!r}"
        return f"{shown!r}, the group of steps {', '.join(steps)}"

    def _steps_in(self, key: str) -> list[str]:
        """The display names of the leaf tasks inside the group task ``key`` (empty for a
        leaf task or an unknown key)."""
        for name, task in dag_tasks({"root": {}, "components": self._components}):
            component = self._components.get(task.get("componentRef", {}).get("name", ""), {})
            if name != key or "dag" not in component:
                continue
            steps: list[str] = []
            for inner, inner_task in component["dag"].get("tasks", {}).items():
                steps += self._steps_in(inner) or [str(
                    inner_task.get("taskInfo", {}).get("name") or inner
                )]  # fmt: skip
            return steps
        return []

    def _inputs(
        self,
        task: Mapping[str, Any],
        scope: _Scope | None,
        component: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The task's parameter inputs, known and unknown; with ``component``, its defaults
        fill what the task does not give, typed as the component declares."""
        given: Mapping[str, Any] = task.get("inputs", {}).get("parameters", {})
        known: dict[str, Any] = {}
        unknown: dict[str, str] = {}
        for name, entry in given.items():
            value = self._resolve(entry, given, scope)
            if isinstance(value, Unknown):
                unknown[name] = value.why
            else:
                known[name] = value
        if component is None:
            return known, unknown
        declared = component.get("inputDefinitions", {}).get("parameters", {})
        for name, definition in declared.items():
            # An input the run decides takes the component default here (and stays unknown).
            if name not in known and "defaultValue" in definition:
                known[name] = definition["defaultValue"]
            if name in known and definition.get("parameterType") == "NUMBER_INTEGER":
                # The compiled spec stores every number as a double; requests want integers.
                known[name] = whole_numbers(known[name])
        # Inputs that only carry channels into a constant (pipelinechannel--x) are no inputs
        # of the component itself.
        return (
            {k: v for k, v in known.items() if k in declared},
            {k: v for k, v in unknown.items() if k in declared},
        )

    def _resolve(
        self, entry: Mapping[str, Any], siblings: Mapping[str, Any], scope: _Scope | None
    ) -> Any:
        if "runtimeValue" in entry:
            return self._substitute(entry["runtimeValue"].get("constant"), siblings, scope)
        if "componentInputParameter" in entry:
            name = str(entry["componentInputParameter"])
            if scope is None:
                if name in self._arguments:
                    return self._arguments[name]
                return Unknown(f"pipeline parameter {name!r} has no value (--param {name}=...)")
            outer = scope.group_task.get("inputs", {}).get("parameters", {})
            if name not in outer:
                return Unknown("set by the run (a loop item)")
            return self._resolve(outer[name], outer, scope.parent)
        if "taskOutputParameter" in entry:
            producer = str(entry["taskOutputParameter"].get("producerTask", "?"))
            return Unknown(f"an output of {self._producer(producer)}")
        return Unknown("decided by the run")

    def _substitute(self, value: Any, siblings: Mapping[str, Any], scope: _Scope | None) -> Any:
        """A constant with ``{{$.inputs.parameters['X']}}`` channels filled in (an f-string or
        a list or dict holding pipeline channels)."""
        if isinstance(value, list):
            items = [self._substitute(item, siblings, scope) for item in value]
            return next((i for i in items if isinstance(i, Unknown)), items)
        if isinstance(value, dict):
            pairs = {k: self._substitute(v, siblings, scope) for k, v in value.items()}
            return next((v for v in pairs.values() if isinstance(v, Unknown)), pairs)
        if not isinstance(value, str) or "{{$.inputs.parameters[" not in value:
            return value
        channels = _CHANNEL.findall(value)
        resolved = {}
        for channel in channels:
            if channel not in siblings:
                return Unknown(f"a placeholder the run fills ({channel})")
            resolved[channel] = self._resolve(siblings[channel], siblings, scope)
            if isinstance(resolved[channel], Unknown):
                return resolved[channel]
        whole = _CHANNEL.fullmatch(value)
        if whole:  # the constant is one channel: keep the value's type
            return resolved[whole.group(1)]
        for channel, item in resolved.items():
            text = item if isinstance(item, str) else json.dumps(item)
            value = value.replace(f"{{{{$.inputs.parameters['{channel}']}}}}", text)
        return value


_CHANNEL = re.compile(r"\{\{\$\.inputs\.parameters\['([^']+)'\]\}\}")


def _function(executor: Mapping[str, Any]) -> str:
    args = [str(a) for a in executor.get("container", {}).get("args", [])]
    if "--function_to_execute" in args[:-1]:
        return args[args.index("--function_to_execute") + 1]
    return ""


def _both(first: bool | None, second: bool | None) -> bool | None:
    if first is False or second is False:
        return False
    return None if first is None or second is None else True


_COMPARISON = re.compile(
    r"(?:(?:int|double|string|bool)\()?inputs\.parameter_values\['([^']+)'\]\)?"
    r"\s*(==|!=|<=|>=|<|>)\s*(.+)"
)


def evaluate_condition(condition: str, values: Mapping[str, Any]) -> bool | None:
    """Evaluates a KFP trigger condition over the group task's inputs.

    Handles what ``dsl.If``, ``dsl.Elif`` and ``dsl.Else`` compile to: comparisons of one
    input with a literal, ``!(...)``, ``&&`` and ``||``.

    Args:
        condition: ``triggerPolicy.condition`` of a task.
        values: The task's known inputs by name.

    Returns:
        Whether it holds, or None when it depends on an unknown input or is not understood.
    """
    text = condition.strip()
    while text.startswith("(") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    for operator in ("||", "&&"):
        parts = _split(text, operator)
        if len(parts) > 1:
            results = [evaluate_condition(part, values) for part in parts]
            decisive = operator == "||"
            if decisive in results:
                return decisive
            return None if None in results else not decisive
    if text.startswith("!"):
        inner = evaluate_condition(text[1:], values)
        return None if inner is None else not inner
    match = _COMPARISON.fullmatch(text)
    if not match or match.group(1) not in values:
        return None
    return _compare(values[match.group(1)], match.group(2), _literal(match.group(3).strip()))


def _closing(text: str, start: int) -> int:
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return -1


def _split(text: str, operator: str) -> list[str]:
    parts, depth, current, index = [], 0, "", 0
    while index < len(text):
        character = text[index]
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth == 0 and text.startswith(operator, index):
            parts.append(current)
            current, index = "", index + len(operator)
            continue
        current += character
        index += 1
    return [*parts, current]


def _literal(text: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return Unknown(text)


def _compare(left: Any, operator: str, right: Any) -> bool | None:
    if isinstance(right, Unknown):
        return None
    if operator in ("==", "!="):
        equal = left == right
        return equal if operator == "==" else not equal
    numbers = (int, float)
    if not isinstance(left, numbers) or not isinstance(right, numbers):
        return None
    return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[
        operator
    ]

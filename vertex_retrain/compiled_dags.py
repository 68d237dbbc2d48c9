"""The tasks of a compiled pipeline spec (the dict of its YAML, or of the PipelineJob's
``pipeline_spec``), wherever they sit: the root DAG and each component's DAG (condition
groups, exit handlers and nested pipelines compile to components with DAGs of their own)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any


def dag_tasks(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each task of ``spec`` as (its key in its DAG, its task spec); absent parts are empty."""
    components = _mapping(spec.get("components"))
    dags = [_mapping(_mapping(spec.get("root")).get("dag"))]
    dags += [_mapping(_mapping(component).get("dag")) for component in components.values()]
    for dag in dags:
        for key, task in _mapping(dag.get("tasks")).items():
            yield str(key), _mapping(task)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def numbered_tasks(names: Iterable[str], prefix: str) -> list[str]:
    """The names of tasks called ``prefix`` or ``prefix-N`` in the pipeline's order.

    The KFP compiler names a component's second use ``prefix-2`` and so on (If/Else branches,
    the retrain after a refused warm start), so ``prefix-10`` comes after ``prefix-9``; the
    last is the run's final word (its decision, its registration).
    """

    def number(name: str) -> int | None:
        if name == prefix:
            return 1
        head, _, suffix = name.rpartition("-")
        return int(suffix) if head == prefix and suffix.isdigit() else None

    numbered = {name: k for name in names if (k := number(name)) is not None}
    return sorted(numbered, key=numbered.__getitem__)

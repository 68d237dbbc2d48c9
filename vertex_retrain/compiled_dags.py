"""The tasks of a compiled pipeline spec (the dict of its YAML, or of the PipelineJob's
``pipeline_spec``), wherever they sit: the root DAG and each component's DAG (condition
groups, exit handlers and nested pipelines compile to components with DAGs of their own)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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

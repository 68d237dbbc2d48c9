"""Compiling pipelines and components to YAML, and describing what was compiled.

The work is split so the pure parts (image swap, description) can be tested on their own:
``compile_to_dict`` runs KFP's compiler in memory, ``write_spec`` writes atomically, and
``describe_pipeline`` reads steps and parameters back from the compiled spec.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vertex_retrain.atomic_files import atomic_write_bytes
from vertex_retrain.components.exec_launch import with_exec_launcher
from vertex_retrain.components.image import with_component_image
from vertex_retrain.pipelines import catalog


@dataclass(frozen=True)
class PipelineParameter:
    """One parameter of a compiled pipeline."""

    name: str
    type: str
    default: Any
    optional: bool


@dataclass(frozen=True)
class PipelineDescription:
    """What a compiled pipeline does, read from its spec."""

    name: str
    steps: list[str]
    parameters: list[PipelineParameter]


def compile_to_dict(target: Any, component_image: str | None = None) -> dict[str, Any]:
    """Compiles a pipeline or component in memory and returns the spec as a dict.

    Lightweight components ``exec`` their executor (see
    :func:`vertex_retrain.components.exec_launch.with_exec_launcher`).

    Args:
        target: A ``@dsl.pipeline`` or ``@dsl.component`` object.
        component_image: If given, the image our components run in (see
            :func:`vertex_retrain.components.image.with_component_image`).

    Returns:
        The compiled spec.
    """
    from kfp import compiler

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "spec.yaml"
        compiler.Compiler().compile(target, str(path))
        spec: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    # The shell execs Python, so a cancelled task's SIGTERM reaches GCPC's launcher.
    spec = with_exec_launcher(spec)
    return with_component_image(spec, component_image) if component_image else spec


def write_spec(spec: dict[str, Any], path: Path) -> None:
    """Writes a compiled spec as YAML, atomically (readers never see half a file)."""
    atomic_write_bytes(path, yaml.safe_dump(spec, sort_keys=True).encode("utf-8"))


def describe_pipeline(spec: dict[str, Any]) -> PipelineDescription:
    """Lists a compiled pipeline's steps (in DAG order, nested groups included) and parameters."""
    parameters = [
        PipelineParameter(
            name=name,
            type=definition.get("parameterType", "?"),
            default=definition.get("defaultValue"),
            optional=bool(definition.get("isOptional", False)),
        )
        for name, definition in sorted(
            spec.get("root", {}).get("inputDefinitions", {}).get("parameters", {}).items()
        )
    ]
    return PipelineDescription(
        name=spec.get("pipelineInfo", {}).get("name", "?"),
        steps=_steps_in_order(spec),
        parameters=parameters,
    )


def _steps_in_order(spec: dict[str, Any]) -> list[str]:
    """Leaf tasks in dependency order; tasks in a group (If, ExitHandler) follow its inputs."""
    components = spec.get("components", {})
    depends: dict[str, set[str]] = {}
    group_leaves: dict[str, list[str]] = {}

    def walk(dag: dict[str, Any], inherited: set[str]) -> list[str]:
        leaves: list[str] = []
        for task_name, task in dag.get("tasks", {}).items():
            needs = inherited | set(task.get("dependentTasks", []))
            nested = components.get(task.get("componentRef", {}).get("name", ""), {}).get("dag")
            if nested is not None:
                group_leaves[task_name] = walk(nested, needs)
                leaves += group_leaves[task_name]
            else:
                depends[task_name] = needs
                leaves.append(task_name)
        return leaves

    walk(spec.get("root", {}).get("dag", {}), set())
    resolved = {
        name: {leaf for need in needs for leaf in group_leaves.get(need, [need])}
        for name, needs in depends.items()
    }
    ordered: list[str] = []
    while len(ordered) < len(resolved):
        ready = [
            name
            for name, needs in resolved.items()
            if name not in ordered and needs <= set(ordered)
        ]
        if not ready:  # a cycle cannot come out of KFP's compiler; keep the rest as listed
            ready = [name for name in resolved if name not in ordered]
        ordered += sorted(ready)
    return ordered


def default_arguments(spec: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's parameter defaults, as a run with no overrides would see them."""
    # The compiled spec stores every number as a double; a pipeline called with 1.0 for an
    # integer parameter refuses it, so integers come back as int.
    return {
        parameter.name: int(parameter.default)
        if parameter.type == "NUMBER_INTEGER"
        else parameter.default
        for parameter in describe_pipeline(spec).parameters
        if parameter.default is not None
    }


@dataclass(frozen=True)
class CompiledSpec:
    """A compiled pipeline or component and the file it was written to."""

    path: Path
    spec: dict[str, Any]


def compile_all(out_dir: Path, component_image: str | None = None) -> dict[str, CompiledSpec]:
    """Compiles every pipeline to ``out_dir/pipelines`` and component to ``out_dir/components``.

    A pipeline whose cached tasks could be served another week's output is refused before
    anything is written (:mod:`vertex_retrain.cli.cache_keys`).

    Returns:
        Name -> written file and its spec, pipelines first.

    Raises:
        CacheKeyError: A pipeline has a cached task whose inputs ignore the week (a
            ``ValueError``; the message names each task and what to add).
    """
    from vertex_retrain.cli.cache_keys import check_cache_keys

    compiled_specs: dict[str, dict[str, Any]] = {}
    for name, target in catalog.PIPELINES.items():
        compiled_specs[name] = compile_to_dict(catalog.load(target), component_image)
        check_cache_keys(compiled_specs[name])
    written: dict[str, CompiledSpec] = {}
    for folder, targets in (("pipelines", catalog.PIPELINES), ("components", catalog.COMPONENTS)):
        for name, target in targets.items():
            spec = compiled_specs.get(name) if folder == "pipelines" else None
            compiled = CompiledSpec(
                out_dir / folder / f"{name}.yaml",
                spec
                if spec is not None
                else compile_to_dict(catalog.load(target), component_image),
            )
            write_spec(compiled.spec, compiled.path)
            written[name] = compiled
    return written

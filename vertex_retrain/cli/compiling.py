"""Compiling pipelines and components to YAML, and describing what was compiled.

The work is split so the pure parts (image swap, description) can be tested on their own:
``compile_to_dict`` runs KFP's compiler in memory (:mod:`vertex_retrain.cli.kfp_compile`),
``write_spec`` writes atomically, and ``describe_pipeline`` reads steps and parameters back
from the compiled spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from vertex_retrain.atomic_files import atomic_write_bytes
from vertex_retrain.cli.kfp_compile import compile_to_dict
from vertex_retrain.pipelines import catalog

if TYPE_CHECKING:
    from vertex_retrain.cli.pipeline_source import PipelineSource

__all__ = [
    "CompiledSpec",
    "PipelineDescription",
    "PipelineParameter",
    "compile_all",
    "compile_to_dict",
    "default_arguments",
    "describe_pipeline",
    "library_templates",
    "write_spec",
]


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


def library_templates() -> list[PipelineSource]:
    """The library's own pipeline templates (:data:`vertex_retrain.pipelines.catalog.PIPELINES`)."""
    from vertex_retrain.cli.pipeline_source import resolve_pipeline

    return [resolve_pipeline(name) for name in catalog.PIPELINES]


def compile_all(
    out_dir: Path,
    component_image: str | None = None,
    pipelines: Sequence[PipelineSource] | None = None,
) -> dict[str, CompiledSpec]:
    """Compiles pipelines to ``out_dir/pipelines/NAME.yaml``; without ``pipelines``, the
    library's templates and every component (to ``out_dir/components``).

    A pipeline whose cached tasks could be served another week's output
    (:mod:`vertex_retrain.cli.cache_keys`), or with a default ``--param`` would refuse, is
    refused before anything is written.

    Args:
        out_dir: The output folder.
        component_image: The image our components run in (None: the placeholder).
        pipelines: The pipelines to compile (:func:`resolve_pipeline
            <vertex_retrain.cli.pipeline_source.resolve_pipeline>`); None: the library's.

    Returns:
        Name -> written file and its spec, pipelines first (by ``pipelineInfo.name``).

    Raises:
        CacheKeyError: A pipeline has a cached task whose inputs ignore the week (a
            ``ValueError``; the message names each task and what to add).
        ParameterError: A pipeline's default is a value ``--param`` would refuse (a
            ``ValueError``; one line per default, :mod:`vertex_retrain.cli.param_defaults`).
        ValueError: Two pipelines have the same name.
    """
    from vertex_retrain.cli.cache_keys import check_cache_keys
    from vertex_retrain.cli.param_defaults import check_defaults

    sources = library_templates() if pipelines is None else list(pipelines)
    compiled_specs: dict[str, dict[str, Any]] = {}
    for source in sources:
        if source.name in compiled_specs:
            raise ValueError(
                f"two pipelines are named {source.name!r} ({source.reference}); each "
                "compiles to dist/pipelines/NAME.yaml, so give them different names"
            )
        compiled_specs[source.name] = source.spec(component_image)
        check_cache_keys(compiled_specs[source.name])
        check_defaults(compiled_specs[source.name], override=None)
    written: dict[str, CompiledSpec] = {}
    for name, spec in compiled_specs.items():
        written[name] = CompiledSpec(out_dir / "pipelines" / f"{name}.yaml", spec)
        write_spec(spec, written[name].path)
    if pipelines is None:
        for name, target in catalog.COMPONENTS.items():
            compiled = CompiledSpec(
                out_dir / "components" / f"{name}.yaml",
                compile_to_dict(catalog.load(target), component_image),
            )
            write_spec(compiled.spec, compiled.path)
            written[name] = compiled
    return written

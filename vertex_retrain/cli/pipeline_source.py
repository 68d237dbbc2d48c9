"""Which pipeline a command means: the one resolver behind ``run``, ``estimate``, ``preflight``,
``compile``, ``upload`` and ``schedule``.

A pipeline is named in one of three ways:

- a library template, by name (``weekly-retraining``, ``train-only``; the catalog in
  :mod:`vertex_retrain.pipelines.catalog`);
- a compiled pipeline file (``.yaml``, ``.yml`` or ``.json``, written by ``kfp.compiler`` or
  ``vertex-retrain compile``), read through :mod:`vertex_retrain.specs.safe_load`'s bounds;
- a ``@dsl.pipeline`` in the user's code: ``package.module:attr`` or ``path/to/file.py:attr``
  (:mod:`vertex_retrain.cli.python_refs`).

Whatever the form, a command gets a :class:`PipelineSource`: the pipeline's name, its compiled
spec (:meth:`PipelineSource.spec`) and the component kfp.local calls to run it here
(:meth:`PipelineSource.component`). A reference that names nothing usable is one line,
a :class:`PipelineReferenceError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vertex_retrain.cli.python_refs import (
    PythonReference,
    PythonReferenceError,
    load_attribute,
    load_module,
    names_of,
    parse_python_reference,
)

__all__ = [
    "COMPILED_SUFFIXES",
    "PipelineReferenceError",
    "PipelineSource",
    "is_path_reference",
    "resolve_pipeline",
]

COMPILED_SUFFIXES = (".yaml", ".yml", ".json")
"""File name endings of a compiled pipeline."""

Kind = Literal["template", "compiled", "python"]


class PipelineReferenceError(ValueError):
    """A pipeline reference that names no usable pipeline (the message is one line)."""


def is_pipeline(value: Any) -> bool:
    """Whether ``value`` is a KFP pipeline (``@dsl.pipeline``, or a loaded pipeline YAML), not
    a single component."""
    from kfp.dsl.base_component import BaseComponent

    return (
        isinstance(value, BaseComponent) and value.component_spec.implementation.graph is not None
    )


@dataclass(frozen=True)
class PipelineSource:
    """A pipeline, however it was named.

    Attributes:
        reference: As the user gave it.
        kind: ``template``, ``compiled`` or ``python``.
        name: The pipeline's name (``pipelineInfo.name``): the template's name in a
            registry, the run's name.
        path: The compiled file (``compiled`` only).
    """

    reference: str
    kind: Kind
    name: str
    path: Path | None = None
    _pipeline: Any = field(default=None, repr=False, compare=False)
    _content: bytes = field(default=b"", repr=False, compare=False)

    def spec(self, component_image: str | None = None) -> dict[str, Any]:
        """The compiled pipeline (a dict of its YAML).

        Args:
            component_image: The image our components run in (as ``compile
                --component-image``); None keeps the one compiled in.
        """
        if self.kind == "compiled":
            from vertex_retrain.cli.params import load_pipeline_spec
            from vertex_retrain.components.image import with_component_image

            spec = load_pipeline_spec(self._content, source=str(self.path))
            return with_component_image(spec, component_image) if component_image else spec
        from vertex_retrain.cli.kfp_compile import compile_to_dict

        return compile_to_dict(self._pipeline, component_image=component_image)

    def component(self) -> Any:
        """What kfp.local calls with the run's arguments: the ``@dsl.pipeline`` itself, or for
        a compiled file the component ``kfp.components`` loads from it."""
        if self.kind != "compiled":
            return self._pipeline
        from kfp import components

        return components.load_component_from_text(self._content.decode("utf-8"))

    def parameter_names(self) -> frozenset[str]:
        """The pipeline's parameters (without compiling it)."""
        return frozenset(self.component().component_spec.inputs or {})


def is_path_reference(reference: str) -> bool:
    """Whether ``reference`` names a file (a compiled pipeline or ``file.py:attr``), whose
    relative path depends on the folder it is read from."""
    if reference.endswith(COMPILED_SUFFIXES):
        return True
    try:
        parsed = parse_python_reference(reference)
    except PythonReferenceError:
        return False
    return parsed is not None and parsed.is_file


def resolve_pipeline(reference: str, *, base: Path | None = None) -> PipelineSource:
    """Finds the pipeline ``reference`` names.

    Args:
        reference: A template name, a compiled pipeline file, ``module:attr`` or
            ``path/to/file.py:attr``.
        base: Folder relative file paths start from (default: the working folder); a
            schedules file's folder for the pipelines it names.

    Returns:
        The pipeline.

    Raises:
        PipelineReferenceError: Nothing usable is named (one line: what was tried and
            what would work).
    """
    text = reference.strip()
    try:
        if text.endswith(COMPILED_SUFFIXES):
            return _compiled(text, base)
        parsed = parse_python_reference(text)
        if parsed is not None:
            return _python(text, parsed, base)
        if text.endswith(".py"):
            _no_attribute(text, base)
        path = Path(text) if base is None or Path(text).is_absolute() else base / text
        if path.is_file():
            return _compiled(text, base)
        return _template(text)
    except PythonReferenceError as error:
        raise PipelineReferenceError(str(error)) from None


def _compiled(text: str, base: Path | None) -> PipelineSource:
    from vertex_retrain.cli.params import TemplateError, load_pipeline_spec, read_template_bytes

    path = Path(text) if base is None or Path(text).is_absolute() else base / text
    try:
        content = read_template_bytes(path)
        spec = load_pipeline_spec(content, source=str(path))
    except TemplateError as error:
        raise PipelineReferenceError(" ".join(str(error).split())) from None
    return PipelineSource(text, "compiled", str(spec["pipelineInfo"]["name"]), path, None, content)


def _python(text: str, parsed: PythonReference, base: Path | None) -> PipelineSource:
    pipeline = load_attribute(parsed, shown=text, what="pipeline", accept=is_pipeline, base=base)
    return PipelineSource(text, "python", str(pipeline.name), None, pipeline)


def _no_attribute(text: str, base: Path | None) -> None:
    reference = PythonReference(text, "", True)
    module = load_module(reference, shown=text, base=base)
    found = names_of(module, is_pipeline)
    example = f"{text}:{found[0]}" if found else f"{text}:ATTR"
    raise PipelineReferenceError(
        f"{text!r}: name the pipeline in the file, e.g. {example}; its pipelines: "
        f"{', '.join(found) or 'none'}"
    )


def _template(text: str) -> PipelineSource:
    from vertex_retrain.pipelines import catalog

    try:
        pipeline = catalog.pipeline_by_name(text)
    except KeyError:
        raise PipelineReferenceError(
            f"no pipeline named {text!r}: not a library template "
            f"({', '.join(sorted(catalog.PIPELINES))}), nor a compiled pipeline file "
            "(.yaml, .yml, .json) nor a pipeline in your code (MODULE:ATTR or "
            "path/to/file.py:ATTR)"
        ) from None
    return PipelineSource(text, "template", str(pipeline.name), None, pipeline)

"""Locations that belong to an example: a real project's pipeline must not borrow them.

The repository's examples (``examples/*/pipelines.py``) configure the templates with their own
buckets and images (:func:`vertex_retrain.pipelines.configure`). A team that copies a command
or a parameter file from an example would otherwise train on the example's data, write to its
bucket and serve its image. Preflight (and so ``run``, ``upload`` and ``schedule``) refuses,
for any pipeline that is not one of that example's, a parameter value that names one of its
Cloud Storage buckets or its own image repositories (Google's public registries of prebuilt
images are nobody's).

The examples are read where the repository has them (next to the package); an installed
package without them checks nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_retrain.specs.problems import Problem, error

__all__ = ["ExampleLocations", "borrowed_location_problems", "example_locations"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
"""The repository's examples folder (absent in an installed package)."""

PUBLIC_REGISTRIES = ("vertex-ai", "deeplearning-platform-release", "cloud-aiplatform")
"""Repository projects of Google's prebuilt images: shared by everyone, owned by no example."""

_BUCKET = re.compile(r"gs://([a-z0-9][a-z0-9._-]{1,220})")
_REPOSITORY = re.compile(r"\b([a-z0-9-]+-docker\.pkg\.dev|gcr\.io|[a-z]+\.gcr\.io)/([a-z0-9-]+)/")


@dataclass(frozen=True)
class ExampleLocations:
    """What one example owns.

    Attributes:
        example: The example's folder name.
        pipelines: The names of the pipelines it configures.
        locations: ``gs://BUCKET`` and ``HOST/PROJECT`` prefixes of its own images.
    """

    example: str
    pipelines: frozenset[str]
    locations: frozenset[str]


def locations_in(value: Any) -> Iterator[str]:
    """Every bucket (``gs://B``) and image repository (``HOST/PROJECT``) a value names."""
    if isinstance(value, str):
        for match in _BUCKET.finditer(value):
            yield f"gs://{match.group(1)}"
        for match in _REPOSITORY.finditer(value):
            if match.group(2) not in PUBLIC_REGISTRIES:
                yield f"{match.group(1)}/{match.group(2)}"
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from locations_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from locations_in(item)


def _defaults(pipeline: Any) -> dict[str, Any]:
    inputs = getattr(getattr(pipeline, "component_spec", None), "inputs", None) or {}
    return {name: spec.default for name, spec in inputs.items() if spec.default is not None}


@functools.cache
def example_locations(folder: Path = EXAMPLES) -> tuple[ExampleLocations, ...]:
    """The locations each example's configured pipelines default to (cached per folder).

    Args:
        folder: The examples folder; one example per subfolder with a ``pipelines.py``.

    Returns:
        One entry per example with pipelines; none when the folder is absent.
    """
    from vertex_retrain.cli.pipeline_source import is_pipeline
    from vertex_retrain.cli.python_refs import PythonReference, PythonReferenceError, load_module

    found = []
    for module_path in sorted(folder.glob("*/pipelines.py")):
        try:
            module = load_module(
                PythonReference(str(module_path), "", True), shown=str(module_path)
            )
        except PythonReferenceError:
            continue  # an example that does not load owns nothing we can name

        # The example's own pipelines are those configured with its locations (the templates
        # it imports name none).
        owned = {
            str(getattr(value, "name", "")): set(locations_in(list(_defaults(value).values())))
            for value in vars(module).values()
            if is_pipeline(value)
        }
        owned = {name: locations for name, locations in owned.items() if locations}
        if owned:
            found.append(
                ExampleLocations(
                    module_path.parent.name,
                    frozenset(owned),
                    frozenset(set().union(*owned.values())),
                )
            )
    return tuple(found)


def borrowed_location_problems(
    pipeline_name: str,
    arguments: Mapping[str, Any],
    examples: tuple[ExampleLocations, ...] | None = None,
) -> list[Problem]:
    """Errors for parameter values that name an example's location in another pipeline.

    Args:
        pipeline_name: The compiled pipeline's name (``pipelineInfo.name``).
        arguments: Its parameter values (defaults with the run's overrides).
        examples: What the examples own (default: :func:`example_locations`).

    Returns:
        One error per parameter that borrows a location.
    """
    examples = example_locations() if examples is None else examples
    problems = []
    for name, value in sorted(arguments.items()):
        for owner in examples:
            if pipeline_name in owner.pipelines:
                continue
            borrowed = sorted(set(locations_in(value)) & owner.locations)
            if borrowed:
                problems.append(
                    error(
                        f"--param {name}",
                        value,
                        f"{', '.join(borrowed)} belongs to the example "
                        f"examples/{owner.example} (its pipelines.py configures it), not to "
                        f"pipeline {pipeline_name}: a real project uses its own buckets and "
                        "images.",
                        [
                            f"--param {name}=<your project's location>",
                            "configure(template, ...) with your own values "
                            "(vertex_retrain.pipelines.configure)",
                        ],
                        code="borrowed-location",
                    )
                )
                break
    return problems

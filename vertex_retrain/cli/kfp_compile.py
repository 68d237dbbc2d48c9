"""KFP's compiler, in memory: a pipeline or component to the dict of its compiled YAML.

Its own module because both the pipeline resolver (:mod:`vertex_retrain.cli.pipeline_source`)
and the ``compile`` command (:mod:`vertex_retrain.cli.compiling`) compile, and the second
resolves pipelines through the first.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml

from vertex_retrain.components.exec_launch import with_exec_launcher
from vertex_retrain.components.image import with_component_image

__all__ = ["compile_to_dict"]


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

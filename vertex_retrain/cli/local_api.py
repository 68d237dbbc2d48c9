"""``vertex_retrain.run_local``: run any pipeline on this machine from Python.

The way for another repository to run its pipeline locally from its own code (a test, a
notebook), as ``vertex-retrain run PIPELINE --local`` does from the shell: kfp.local with the
local backend, Vertex's caching, and the run-time placeholders kfp.local cannot resolve on its
own (the run's creation time, the project and the region). Calling the pipeline under a bare
``kfp.local.init`` stops with kfp's ``IndexError`` on those placeholders instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from vertex_retrain.cli.local_outcome import LocalRunOutcome
from vertex_retrain.cli.local_run import local_arguments, run_pipeline_locally
from vertex_retrain.specs.display_names import display_name_problems, evaluates

__all__ = ["run_local"]


def run_local(
    pipeline: Any,
    arguments: Mapping[str, Any] | None = None,
    *,
    cache: bool = True,
    retries: bool = False,
    console: TextIO | None = None,
    verbose: bool = False,
) -> LocalRunOutcome:
    """Runs a pipeline on this machine with the local backend and waits for it.

    Args:
        pipeline: A ``@dsl.pipeline``, a pipeline loaded from its compiled YAML, or a
            reference the command line takes: a compiled pipeline file, ``module:attr`` or
            ``path/to/file.py:attr``, a library template name.
        arguments: Parameter values; the others keep the pipeline's defaults. ``backend``
            (``"local"``), ``project`` and ``location`` are set for you where the pipeline
            has them.
        cache: Reuse the outputs of tasks that ran before with the same inputs, as Vertex
            does; False runs every task.
        retries: Run a failed task again as its retry policy says, as Vertex does; False
            (the default) runs each task once, which fails sooner and never hides a failure.
        console: Where the progress goes (default: standard output).
        verbose: Show every line of every task.

    Returns:
        How the run ended (:class:`vertex_retrain.cli.local_outcome.LocalRunOutcome`):
        ``status`` (``SUCCEEDED``, ``FAILED``, ``REFUSED``) and ``succeeded``, ``run_id`` and
        the run folder ``run_dir``, ``outputs`` (the pipeline's outputs as kfp.local returns
        them, by name: ``Output`` for a pipeline returning one value), ``task_outputs()``
        (each task's parameters and artifacts), the log file (the full output), the wall
        time and the run summary when the pipeline writes one.

    Raises:
        PipelineReferenceError: A reference that names no pipeline (a ``ValueError``).
        ValueError: A display name Vertex would refuse (``model_display_name`` of more than
            128 characters...).
        ParameterError: An argument, or a default the run would use, that ``run --param``
            would refuse as a value (a ``ValueError``, one line per problem: a wrong type, a
            number outside its range, a declaration its parser refuses;
            :mod:`vertex_retrain.cli.param_defaults`).
    """
    if isinstance(pipeline, str | os.PathLike):
        from vertex_retrain.cli.pipeline_source import resolve_pipeline

        pipeline = resolve_pipeline(os.fspath(pipeline)).component()
    inputs = pipeline.component_spec.inputs or {}
    compiled = getattr(pipeline, "pipeline_spec", None)
    if compiled is not None:
        from google.protobuf import json_format

        from vertex_retrain.cli.param_defaults import check_defaults
        from vertex_retrain.cli.params import check_values, parameter_definitions

        spec = json_format.MessageToDict(compiled)
        # A value, or a configured default, that a --param of it would be refused for.
        check_values(dict(arguments or {}), parameter_definitions(spec), require_all=False)
        check_defaults(spec, given=dict(arguments or {}), override="pass {name} in arguments")
    defaults = {name: spec.default for name, spec in inputs.items() if spec.default is not None}
    given = local_arguments(defaults, dict(arguments or {}), declared=set(inputs))
    components = {"components": dict.fromkeys(getattr(compiled, "components", None) or ())}
    names = display_name_problems(given, evaluation_job=evaluates(components))
    if names:  # refused before any task, not at register-model after training
        raise ValueError(names[0].describe())
    return run_pipeline_locally(
        pipeline,
        given,
        console=console or sys.stdout,
        verbose=verbose,
        cache=cache,
        retries=retries,
    )

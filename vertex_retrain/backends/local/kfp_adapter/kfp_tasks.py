"""How kfp.local runs each task of a local pipeline run: Vertex's caching, and Vertex-only steps.

kfp.local's orchestrators run every task through
``kfp.local.orchestrator.task_executor.execute_single_task``. :func:`local_task_policy` wraps
that function for the length of one run (the installed kfp is not edited):

- a task whose container is a Vertex AI service step (GCPC's e-mail notification) is
  skipped with a line saying so: Vertex runs it itself, and kfp.local's SubprocessRunner cannot;
- a task with caching enabled in the compiled spec (``cachingOptions.enableCache``, on unless
  ``set_caching_options(False)``) is looked up in the :class:`TaskCache` under Vertex's key;
  a hit reuses the earlier outputs and prints ``Task T cached from run R``; a miss runs the
  task and stores its outputs.

kfp is pinned to 2.17 (pyproject.toml; ``support.check_kfp_version`` refuses another before a
run), whose orchestrators call ``task_executor.execute_single_task`` by keyword;
tests/test_local_task_cache.py fails if a kfp upgrade changes that.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from vertex_retrain.backends.local.kfp_adapter.task_cache import (
    EXECUTOR_OUTPUT_FILE,
    TaskCache,
    cache_key,
    deserialize_outputs,
    mark_cached,
)

VERTEX_ONLY_EXECUTORS = ("google_cloud_pipeline_components.container.v1.vertex_notification_email",)
"""Modules of container steps that only Vertex AI runs (it reads the task, not the container)."""

_LOG = logging.getLogger(__name__)


def vertex_only(container: Mapping[str, Any]) -> bool:
    """True for a container step Vertex AI performs itself (see :data:`VERTEX_ONLY_EXECUTORS`)."""
    words = [str(word) for word in [*container.get("command", []), *container.get("args", [])]]
    return any(module in word for module in VERTEX_ONLY_EXECUTORS for word in words)


def resolve_run_placeholders(value: Any, placeholders: Mapping[str, str]) -> Any:
    """Replaces the run's placeholders (job name, task id...) in every string of ``value``.

    Vertex resolves them before it computes a cache key, so a task that takes the run's name
    as an input is never served from another run; the key here sees the same values.
    """
    if isinstance(value, str):
        for placeholder, resolved in placeholders.items():
            value = value.replace(placeholder, resolved)
        return value
    if isinstance(value, list | tuple):
        return [resolve_run_placeholders(item, placeholders) for item in value]
    if isinstance(value, Mapping):
        return {k: resolve_run_placeholders(v, placeholders) for k, v in value.items()}
    return value


def _run_placeholders(
    *, run: str, task_resource_name: str, pipeline_root: str, job_id: str
) -> dict[str, str]:
    from kfp import dsl

    return {
        dsl.PIPELINE_JOB_NAME_PLACEHOLDER: run,
        dsl.PIPELINE_JOB_ID_PLACEHOLDER: job_id,
        dsl.PIPELINE_TASK_NAME_PLACEHOLDER: task_resource_name,
        # A task id is new for every task of every run, so a task that takes it never hits.
        dsl.PIPELINE_TASK_ID_PLACEHOLDER: secrets.token_hex(8),
        dsl.PIPELINE_ROOT_PLACEHOLDER: pipeline_root,
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return loaded


def without_retries(
    original: Callable[..., Any], call: dict[str, Any]
) -> tuple[Callable[..., Any], dict[str, Any]]:
    """``original`` and its ``call`` for one run of a task that has a retry policy (its spec
    without the policy), saying so if it fails; both unchanged for a task without one.

    Locally a failed task is not run again by default: what fails here is nearly always the
    team's own code or data, which a retry runs again unchanged after the policy's waits (three
    and a half minutes for the templates'), and a run that passes without retries passes with
    them. ``--retries`` (``retries=True``) honours the compiled policy instead.
    """
    from kfp.local import status

    task_spec = call["task_spec"]
    retries = task_spec.retry_policy.max_retry_count
    if retries <= 0:
        return original, call
    once = type(task_spec)()
    once.CopyFrom(task_spec)
    once.ClearField("retry_policy")

    def run_once(**arguments: Any) -> Any:
        outputs, task_status = original(**arguments)
        if task_status != status.Status.SUCCESS:
            print(
                f"Task '{arguments['task_name']}' failed and is not retried here; on Vertex its "
                f"retry policy runs it up to {retries} more time(s) (--retries does so locally)",
                flush=True,
            )
        return outputs, task_status

    return run_once, {**call, "task_spec": once}


def _execute(
    original: Callable[..., Any],
    cache: TaskCache | None,
    reuse: bool,
    retries: bool,
    **call: Any,
) -> Any:
    from google.protobuf import json_format
    from kfp.local import executor_input_utils, status
    from kfp.local.orchestrator.orchestrator_utils import OrchestratorUtils

    task_name: str = call["task_name"]
    if not retries:
        original, call = without_retries(original, call)
    task_spec = call["task_spec"]
    component_name = task_spec.component_ref.name
    component = call["components"][component_name]
    executor = call["executors"].get(component.executor_label)
    if executor is None or executor.WhichOneof("spec") != "container":
        return original(**call)
    container = json_format.MessageToDict(executor.container)
    if vertex_only(container):
        print(
            f"Skipping task '{task_name}': a Vertex AI service step (Vertex performs it, not a "
            "container); locally the run summary stands in for it",
            flush=True,
        )
        return {}, status.Status.SUCCESS
    if cache is None or not task_spec.caching_options.enable_cache:
        return original(**call)

    run = call["pipeline_resource_name"]
    task_resource_name = executor_input_utils.get_local_task_resource_name(component_name)
    task_root = Path(
        executor_input_utils.construct_local_task_root(
            pipeline_root=call["pipeline_root"],
            pipeline_resource_name=run,
            task_resource_name=task_resource_name,
        )
    )
    arguments = OrchestratorUtils.make_task_arguments(
        task_inputs_spec=task_spec.inputs, io_store=call["io_store"]
    )
    placeholders = _run_placeholders(
        run=run,
        task_resource_name=task_resource_name,
        pipeline_root=call["pipeline_root"],
        job_id=call["unique_pipeline_id"],
    )
    key = cache_key(
        component=json_format.MessageToDict(component),
        container=container,
        arguments=resolve_run_placeholders(arguments, placeholders),
    )
    hit = cache.lookup(key) if reuse else None
    if hit is not None:
        mark_cached(task_root, hit)
        print(f"Task '{task_name}' cached from run {hit.run}", flush=True)
        return deserialize_outputs(hit.outputs), status.Status.SUCCESS
    outputs, task_status = original(**call)
    if task_status == status.Status.SUCCESS:
        try:
            cache.store(
                key,
                run=run,
                task=task_name,
                outputs=outputs,
                executor_output=_read_json(task_root / EXECUTOR_OUTPUT_FILE),
            )
        except OSError as error:  # a full disk must not fail a task that succeeded
            _LOG.warning("could not cache the outputs of %s: %s", task_name, error)
    return outputs, task_status


@contextlib.contextmanager
def local_task_policy(
    cache: TaskCache | None, *, reuse: bool = True, retries: bool = False
) -> Iterator[None]:
    """Runs kfp.local's tasks with Vertex's caching, for the length of the ``with`` block.

    Args:
        cache: Where outputs are looked up and stored; None: no caching at all.
        reuse: False runs every task (``--no-cache``) and stores the fresh outputs, so a
            later run reuses those, as a Vertex run with caching disabled leaves its results
            for later runs.
        retries: True honours each task's compiled retry policy; False runs a task once
            (:func:`without_retries`).

    Vertex-only service steps are skipped either way. The wrapper is removed on exit.
    """
    from kfp.local.orchestrator import task_executor

    original = task_executor.execute_single_task

    def execute_single_task(**call: Any) -> Any:
        return _execute(original, cache, reuse, retries, **call)

    task_executor.execute_single_task = execute_single_task
    try:
        yield
    finally:
        task_executor.execute_single_task = original

"""The local runner caches as Vertex does: same component spec and inputs reuse the outputs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from kfp import dsl

from tests.data.pipelines.cached_steps import cached_steps
from vertex_retrain.backends.local.kfp_adapter.kfp_tasks import (
    resolve_run_placeholders,
    vertex_only,
)
from vertex_retrain.backends.local.kfp_adapter.task_cache import (
    CACHED_FROM_FILE,
    TaskCache,
    cache_key,
    deserialize_outputs,
    serialize_outputs,
)
from vertex_retrain.cli.local_run import run_pipeline_locally

COMPONENT = {
    "executorLabel": "exec-a",
    "inputDefinitions": {"parameters": {"rows": {"parameterType": "NUMBER_INTEGER"}}},
    "outputDefinitions": {"artifacts": {"dataset": {"artifactType": {"schemaTitle": "x"}}}},
}
CONTAINER = {"image": "python:3.11", "command": ["python", "-c", "print(1)"]}


def _run(tally: Path, *, cache: bool = True, rows: int = 3) -> tuple[Any, str]:
    console = io.StringIO()
    outcome = run_pipeline_locally(
        cached_steps, {"tally": str(tally), "rows": rows}, console=console, cache=cache
    )
    assert outcome.succeeded, console.getvalue()
    return outcome, console.getvalue()


def _ran(tally: Path) -> list[str]:
    return tally.read_text(encoding="utf-8").split()


def test_cache_key_ignores_executor_label_but_not_inputs_code_or_artifacts() -> None:
    base = cache_key(component=COMPONENT, container=CONTAINER, arguments={"rows": 3})
    renamed = {**COMPONENT, "executorLabel": "exec-a-2"}
    assert cache_key(component=renamed, container=CONTAINER, arguments={"rows": 3}) == base
    assert cache_key(component=COMPONENT, container=CONTAINER, arguments={"rows": 4}) != base
    edited = {**CONTAINER, "command": ["python", "-c", "print(2)"]}
    assert cache_key(component=COMPONENT, container=edited, arguments={"rows": 3}) != base
    first = dsl.Dataset(uri="/runs/a/make-rows/dataset")
    second = dsl.Dataset(uri="/runs/b/make-rows/dataset")
    keys = {
        cache_key(component=COMPONENT, container=CONTAINER, arguments={"data": artifact})
        for artifact in (first, second, dsl.Dataset(uri=first.uri, metadata={"rows": 3}))
    }
    # Identity is type and URI: another artifact changes the key, new metadata does not.
    assert len(keys) == 2


def test_outputs_round_trip_parameters_artifacts_and_lists() -> None:
    outputs = {
        "count": 3,
        "dataset": dsl.Dataset(name="dataset", uri="/x/dataset", metadata={"rows": 3}),
        "models": [dsl.Model(uri="/x/m1"), dsl.Model(uri="/x/m2")],
    }
    back = deserialize_outputs(json.loads(json.dumps(serialize_outputs(outputs))))
    assert back["count"] == 3
    assert isinstance(back["dataset"], dsl.Dataset)
    assert (back["dataset"].uri, back["dataset"].metadata) == ("/x/dataset", {"rows": 3})
    assert [type(m) for m in back["models"]] == [dsl.Model, dsl.Model]
    assert [m.uri for m in back["models"]] == ["/x/m1", "/x/m2"]


def test_lookup_misses_when_an_output_artifact_is_gone(root: Path) -> None:
    cache = TaskCache(root)
    artifact = root / "runs" / "dataset"
    artifact.parent.mkdir(parents=True)
    artifact.write_text("rows", encoding="utf-8")
    cache.store(
        "k" * 64,
        run="r1",
        task="make-rows",
        outputs={"dataset": dsl.Dataset(uri=str(artifact))},
        executor_output=None,
    )
    assert cache.lookup("k" * 64) is not None
    artifact.unlink()
    assert cache.lookup("k" * 64) is None


def test_lookup_hits_when_a_metrics_artifact_has_no_file(root: Path) -> None:
    cache = TaskCache(root)
    model = root / "runs" / "model"
    model.mkdir(parents=True)
    outputs = {
        "model": dsl.Model(uri=str(model)),
        # kfp's executor writes no file for a metrics artifact: its values are its metadata.
        "metrics": dsl.Metrics(uri=str(root / "runs" / "metrics"), metadata={"wall": 1.0}),
    }
    cache.store("m" * 64, run="r1", task="train", outputs=outputs, executor_output=None)
    assert cache.lookup("m" * 64) is not None
    model.rmdir()
    assert cache.lookup("m" * 64) is None


def test_resolve_run_placeholders_reaches_nested_values() -> None:
    resolved = resolve_run_placeholders(
        {"a": [f"x-{dsl.PIPELINE_JOB_NAME_PLACEHOLDER}"], "b": 1},
        {dsl.PIPELINE_JOB_NAME_PLACEHOLDER: "run-7"},
    )
    assert resolved == {"a": ["x-run-7"], "b": 1}


def test_vertex_only_recognises_the_gcpc_notification_step() -> None:
    from google_cloud_pipeline_components.v1.vertex_notification_email import (
        VertexNotificationEmailOp,
    )

    container = VertexNotificationEmailOp.component_spec.implementation.container
    assert vertex_only({"command": container.command, "args": container.args})
    assert not vertex_only(CONTAINER)


def test_local_run_twice_reuses_cached_tasks_and_no_cache_recomputes(
    root: Path, tmp_path: Path
) -> None:
    tally = tmp_path / "tally.txt"
    first, first_console = _run(tally)
    assert "cached from run" not in first_console
    assert sorted(_ran(tally)) == ["count-rows", "make-rows", "stamp", "uncached"]

    second, console = _run(tally)
    first_run = first.run_dir.name
    assert f"step make-rows: cached from run {first_run}" in console
    assert f"step count-rows: cached from run {first_run}" in console
    # The run's name is an input of stamp, and uncached has caching off: both ran again.
    assert sorted(_ran(tally)) == sorted(
        ["count-rows", "make-rows", "stamp", "uncached", "stamp", "uncached"]
    )
    # The reused outputs are in the second run's folder, as if the tasks had run there.
    reused = json.loads((second.run_dir / "count-rows" / "executor_output.json").read_text())
    assert reused["parameterValues"]["Output"] == 3
    marker = json.loads((second.run_dir / "make-rows" / CACHED_FROM_FILE).read_text())
    assert marker["run"] == first_run

    _, no_cache_console = _run(tally, cache=False)
    assert "cached from run" not in no_cache_console
    assert _ran(tally).count("make-rows") == 2 and _ran(tally).count("count-rows") == 2


def test_local_run_with_other_inputs_recomputes(root: Path, tmp_path: Path) -> None:
    tally = tmp_path / "tally.txt"
    _run(tally, rows=3)
    _, console = _run(tally, rows=4)
    assert "cached from run" not in console
    assert _ran(tally).count("make-rows") == 2


def test_kfp_still_dispatches_tasks_through_the_wrapped_function() -> None:
    # The cache wraps this function of kfp 2.17; an upgrade that renames it must fail here.
    from kfp.local.orchestrator import dag_orchestrator, enhanced_dag_orchestrator, task_executor

    assert callable(task_executor.execute_single_task)
    for module in (dag_orchestrator, enhanced_dag_orchestrator):
        source = Path(str(module.__file__)).read_text(encoding="utf-8")
        assert "task_executor.execute_single_task(" in source

"""Reading a run's task outputs for the summary, from kfp.local files and Vertex task details."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from google.cloud import aiplatform_v1

from vertex_retrain.backends.local.backend import LocalBackend
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.steps.run_outputs import read_task_outputs
from vertex_retrain.steps.summary import build_summary


def test_read_task_outputs_vertex_gives_json_ready_values_and_skips_silent_tasks() -> None:
    artifact_list = aiplatform_v1.PipelineTaskDetail.ArtifactList
    details = [
        aiplatform_v1.PipelineTaskDetail(
            task_name="register-model",
            execution=aiplatform_v1.Execution(
                metadata={"output:version_id": "3", "output:aliases": ["default", "champion"]}
            ),
        ),
        aiplatform_v1.PipelineTaskDetail(
            task_name="evaluate-model",
            execution=aiplatform_v1.Execution(metadata={"output:is_better": True}),
            outputs={
                "metrics": artifact_list(
                    artifacts=[
                        aiplatform_v1.Artifact(
                            uri="gs://b/m", metadata={"candidate_ndcg_at_10": 0.4, "tags": ["a"]}
                        )
                    ]
                )
            },
        ),
        aiplatform_v1.PipelineTaskDetail(task_name="deploy-model"),  # skipped branch
    ]
    seen: list[str] = []

    def getter(name: str) -> SimpleNamespace:
        seen.append(name)
        return SimpleNamespace(task_details=details)

    outputs = read_task_outputs(
        backend=VertexBackend("p", "asia-east1", pipeline_job_getter=getter),
        pipeline_root="gs://p/root",
        run_name="weekly-1",
    )
    assert seen == ["projects/p/locations/asia-east1/pipelineJobs/weekly-1"]
    assert sorted(outputs) == ["evaluate-model", "register-model"]
    assert outputs["register-model"].parameters["aliases"] == ["default", "champion"]
    metrics = outputs["evaluate-model"].artifacts["metrics"]["metadata"]
    assert metrics == {"candidate_ndcg_at_10": 0.4, "tags": ["a"]}
    summary = build_summary(
        outputs,
        run_name="weekly-1",
        state="SUCCEEDED",
        error_message="",
        job_shape={},
        expected_training_hours=2.0,
    )
    json.dumps(summary)  # the exit handler writes it as JSON
    assert summary["registered"]["version_id"] == "3"


def test_build_summary_survives_an_impossible_job_shape(tmp_path: Path) -> None:
    summary = build_summary(
        read_task_outputs(
            backend=LocalBackend(tmp_path / "root"), pipeline_root=str(tmp_path), run_name="r"
        ),
        run_name="r",
        state="FAILED",
        error_message="train failed",
        job_shape={"accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 3},
        expected_training_hours=2.0,
    )
    assert summary["state"] == "FAILED" and summary["error"] == "train failed"
    assert "acceleratorCount" in summary["cost_on_vertex"]["unavailable"]


def test_read_task_outputs_local_reads_kfp_local_executor_output_files(tmp_path: Path) -> None:
    task = tmp_path / "weekly-2" / "register-model"
    task.mkdir(parents=True)
    (task / "executor_output.json").write_text(
        json.dumps(
            {
                "parameterValues": {"version_id": "2"},
                "artifacts": {
                    "vertex_model": {
                        "artifacts": [{"uri": "gs://b/m", "metadata": {"resourceName": "m@2"}}]
                    }
                },
            }
        )
    )
    (tmp_path / "weekly-2" / "broken").mkdir()
    (tmp_path / "weekly-2" / "broken" / "executor_output.json").write_text("{not json")
    outputs = read_task_outputs(
        backend=LocalBackend(tmp_path / "root"), pipeline_root=str(tmp_path), run_name="weekly-2"
    )
    assert list(outputs) == ["register-model"]
    assert outputs["register-model"].parameters == {"version_id": "2"}
    assert outputs["register-model"].artifacts["vertex_model"] == {
        "uri": "gs://b/m",
        "metadata": {"resourceName": "m@2"},
    }


def test_read_task_outputs_vertex_marks_a_task_reused_from_the_cache() -> None:
    task = aiplatform_v1.PipelineTaskDetail
    execution = aiplatform_v1.Execution
    metadata = {"output:state": "JOB_STATE_SUCCEEDED"}
    details = [
        task(task_name="ran", state=task.State.SUCCEEDED,
             execution=execution(state=execution.State.COMPLETE, metadata=metadata)),
        task(task_name="skipped", state=task.State.SKIPPED,
             execution=execution(metadata=metadata)),
        task(task_name="cached", state=task.State.SUCCEEDED,
             execution=execution(state=execution.State.CACHED, metadata=metadata)),
    ]  # fmt: skip
    outputs = read_task_outputs(
        backend=VertexBackend(
            "p", "asia-east1", pipeline_job_getter=lambda _: SimpleNamespace(task_details=details)
        ),
        pipeline_root="gs://p/root",
        run_name="weekly-2",
    )
    assert {name: task.cached for name, task in outputs.items()} == {
        "ran": False,
        "skipped": True,
        "cached": True,
    }


def test_read_task_outputs_local_marks_a_task_reused_from_the_cache(tmp_path: Path) -> None:
    for name in ("ran", "cached"):
        (tmp_path / "r" / name).mkdir(parents=True)
        (tmp_path / "r" / name / "executor_output.json").write_text(
            json.dumps({"parameterValues": {"state": "done"}})
        )
    (tmp_path / "r" / "cached" / "cached_from.json").write_text(json.dumps({"run": "r0"}))
    outputs = read_task_outputs(
        backend=LocalBackend(tmp_path / "root"), pipeline_root=str(tmp_path), run_name="r"
    )
    assert {name: task.cached for name, task in outputs.items()} == {
        "ran": False,
        "cached": True,
    }


def test_read_task_outputs_vertex_finds_tasks_reported_by_display_name_or_key() -> None:
    from vertex_retrain.backends.vertex.pipeline_runs import task_keys
    from vertex_retrain.cli.compiling import compile_to_dict
    from vertex_retrain.pipelines import catalog

    spec = compile_to_dict(catalog.pipeline_by_name("weekly-retraining"))
    keys, by_display_name = task_keys(spec)
    named = {key: name for name, key in by_display_name.items()}
    # The weekly template names its tasks for people: keys and display names differ.
    assert named["register-model"] == "register-champion"
    assert "register-model" in keys and "register-champion" not in keys
    execution = aiplatform_v1.Execution
    details = [
        aiplatform_v1.PipelineTaskDetail(
            task_name=named["register-model"],
            execution=execution(metadata={"output:version_id": "4"}),
        ),
        aiplatform_v1.PipelineTaskDetail(  # reported by its key
            task_name="evaluate-model",
            execution=execution(metadata={"output:is_better": True, "output:reason": "better"}),
        ),
        aiplatform_v1.PipelineTaskDetail(  # in no DAG (the pipeline's own task): as reported
            task_name="weekly-retraining",
            execution=execution(metadata={"output:x": 1}),
        ),
    ]
    job = SimpleNamespace(task_details=details, pipeline_spec=spec)
    outputs = read_task_outputs(
        backend=VertexBackend("p", "asia-east1", pipeline_job_getter=lambda _: job),
        pipeline_root="gs://p/root",
        run_name="weekly-3",
    )
    assert sorted(outputs) == ["evaluate-model", "register-model", "weekly-retraining"]
    summary = build_summary(
        outputs, run_name="weekly-3", state="SUCCEEDED", error_message="",
        job_shape={}, expected_training_hours=2.0,
    )  # fmt: skip
    assert summary["registered"] == {"version_id": "4"}
    assert summary["decision"]["reason"] == "better"


def test_task_keys_reads_nested_dags_and_leaves_unnamed_tasks_alone() -> None:
    from vertex_retrain.backends.vertex.pipeline_runs import task_keys

    spec = {
        "root": {"dag": {"tasks": {"a": {"taskInfo": {"name": "first"}}, "b": {}}}},
        "components": {
            "comp-condition-2": {"dag": {"tasks": {"c-2": {"taskInfo": {"name": "third"}}}}},
            "comp-leaf": {"executorLabel": "exec-leaf"},
        },
    }
    assert task_keys(spec) == ({"a", "b", "c-2"}, {"first": "a", "third": "c-2"})
    assert task_keys({}) == (set(), {})

"""The local runner's pure parts: arguments, progress filtering and failure causes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from vertex_retrain.cli.local_run import (
    LOCAL_PROJECT,
    _ProgressFilter,
    local_arguments,
    task_errors,
)
from vertex_retrain.cli.run_progress import RunProgress

PROBLEM = (
    'error: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType = "NVIDIA_TESLA_A100": '
    "NVIDIA_TESLA_A100 cannot run on n1-standard-8. Valid alternatives: machineType "
    "a2-highgpu-1g."
)


def test_local_arguments_name_backend_project_and_location_then_overrides() -> None:
    arguments = local_arguments(
        {"backend": "vertex", "project": "{{$.x}}", "epochs": 4}, {"epochs": 1}
    )
    assert arguments == {
        "backend": "local",
        "project": LOCAL_PROJECT,
        "location": "local",
        "epochs": 1,
    }


def test_progress_filter_shows_steps_without_ansi_and_logs_everything_plain() -> None:
    log, console = io.StringIO(), io.StringIO()
    clock = iter([0.0, 42.0]).__next__
    stream = _ProgressFilter(log, RunProgress(console, clock=clock))
    stream.write("12:00 - INFO - Executing task \x1b[96m'train'\x1b[0m\n{\n  \"inputs\": {}\n")
    stream.write("    [workerpool0-0] epoch 1 loss 2.3\n    [KFP Executor] noise\n")
    stream.write("12:01 - INFO - Task \x1b[96m'train'\x1b[0m finished with status SUCCESS\n")
    assert console.getvalue().splitlines() == ["step train: running", "✓ step train: done in 42.0s"]
    assert "noise" in log.getvalue() and '"inputs"' in log.getvalue()
    assert "\x1b" not in log.getvalue() and "Executing task 'train'" in log.getvalue()


def test_task_errors_lists_each_exception_once_in_order() -> None:
    lines = [
        "    Traceback (most recent call last):",
        '        raise FileNotFoundError("x")',
        "    FileNotFoundError: 'gs://b/t' has no generation.json",
        "    vertex_retrain.backends.local.build_context.BuildError: source_dir /x is not a folder",
        "    FileNotFoundError: 'gs://b/t' has no generation.json",
        "    ",
        '    "error": {"code": 1}',
    ]
    assert task_errors(lines) == [
        "FileNotFoundError: 'gs://b/t' has no generation.json",
        "BuildError: source_dir /x is not a folder",  # the type, not its module
    ]


def test_task_errors_keep_every_line_of_a_multi_line_message() -> None:
    # As kfp.local logs a task that failed on an impossible job: the field, the value and
    # the alternatives are on the message's second line.
    lines = [
        "        raise JobSpecError(tuple(problems))",
        "    vertex_retrain.specs.problems.JobSpecError: invalid job spec: 1 error(s)",
        f"      - {PROBLEM}",
        "    ",
        "",
        "01:24:49.577 - ERROR - Task 'train-custom-job' finished with status FAILURE",
    ]
    (error,) = task_errors(lines)
    assert error.splitlines() == [
        "JobSpecError: invalid job spec: 1 error(s)",
        f"  - {PROBLEM}",
    ]


def test_local_arguments_set_only_the_parameters_a_pipeline_declares() -> None:
    arguments = local_arguments({"rows": 3}, {"rows": 4}, declared={"rows", "backend"})
    assert arguments == {"rows": 4, "backend": "local"}


def test_a_failed_local_run_prints_the_root_error_in_full(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vertex_retrain.cli.main import main

    pipeline = Path(__file__).resolve().parent / "data" / "pipelines" / "user_jobs.py"
    assert main(["run", f"{pipeline}:impossible_locally", "--local"]) == 1
    out = capsys.readouterr().out
    why = out[out.index("--- why the tasks failed ---") :]
    assert "JobSpecError: invalid job spec: 1 error(s)" in why
    # The field, the value and the alternatives, not only the first line of the error.
    assert (
        '  - error: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType = "NVIDIA_TESLA_A100"'
        in why
    )
    assert "Valid alternatives: machineType a2-highgpu-1g" in why


def test_endpoint_of_a_run_falls_back_to_the_model_as_deploy_model_does() -> None:
    from vertex_retrain.cli.local_run import endpoint_of

    assert endpoint_of({"endpoint_display_name": "ep", "model_display_name": "m"}) == "ep"
    assert endpoint_of({"endpoint_display_name": "", "model_display_name": "m"}) == "m"
    assert endpoint_of({}) == ""


def test_task_errors_show_a_message_re_raised_under_another_type_once() -> None:
    lines = [
        "    vertex_retrain.backends.base.JobFailedError: job j ended in JOB_STATE_FAILED",
        "    advice: the Python code raised NameError",
        "    ",
        "    vertex_retrain.steps.train.TrainingJobFailedError: job j ended in JOB_STATE_FAILED",
        "    advice: the Python code raised NameError",
        "    ",
        "    vertex_retrain.steps.train.TrainingJobFailedError: job k ended in JOB_STATE_FAILED",
    ]
    assert task_errors(lines) == [
        "JobFailedError: job j ended in JOB_STATE_FAILED\nadvice: the Python code raised NameError",
        "TrainingJobFailedError: job k ended in JOB_STATE_FAILED",
    ]


def test_failure_message_shows_the_traceback_once_and_the_output_before_it() -> None:
    from types import SimpleNamespace

    from vertex_retrain.backends.local.backend import failure_message
    from vertex_retrain.backends.local.jobs.exit_advice import advice_for

    tail = (
        "epoch 1 done\n"
        "Traceback (most recent call last):\n"
        '  File "task.py", line 76, in <module>\n'
        "NameError: name 'main' is not defined"
    )
    failure = SimpleNamespace(
        replica="workerpool0-0", exit_code=1, advice=advice_for(1, tail), log_tail=tail
    )
    result = SimpleNamespace(job_id="j", state="JOB_STATE_FAILED", error="exit 1", failure=failure)
    message = failure_message(result)
    assert message.count("Traceback (most recent call last):") == 1
    assert message.endswith("last log lines:\nepoch 1 done")
    plain = SimpleNamespace(**{**vars(failure), "advice": "out of memory", "log_tail": tail})
    again = failure_message(SimpleNamespace(**{**vars(result), "failure": plain}))
    assert again.endswith("last log lines:\n" + tail)
